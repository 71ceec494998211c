//! Finding entries in a [`Catalog`]: `tools.search` over the BM25F index (docs/contract/catalog.md#s3-3),
//! the lookups of `describe`/`call`/`callValue` (docs/contract/catalog.md#s3-4) and the
//! suggestions of an unknown tool (docs/contract/catalog.md#s3-4-suggestions).

use super::*;

/// Lookup tokens: the lowercased text split on `[^a-z0-9]+`, blanks dropped, as a set.
fn lookup_tokens(text: &str) -> HashSet<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// True when `needle` is within the typo budget of `target` (both lowercased): a
/// Damerau-Levenshtein distance of at most 1 for needles of up to 5 characters, 2 up to 10 and
/// 3 beyond (docs/contract/catalog.md#s3-4-suggestions).
fn is_misspelling(needle: &str, target: &str) -> bool {
    let len = needle.chars().count();
    let budget = match len {
        0 => return false,
        1..=5 => 1,
        6..=10 => 2,
        _ => 3,
    };
    if len.abs_diff(target.chars().count()) > budget {
        return false;
    }
    strsim::damerau_levenshtein(needle, target) <= budget
}

impl Catalog {
    /// Resolves `tools.search`'s limit (docs/contract/catalog.md#s3-3 step 2): absent or not a number →
    /// `searchDefaultLimit`; a number that is not an integer or is below 1 →
    /// [`LookupError::LimitNotPositiveInteger`]; otherwise `min(limit, maxSearchLimit)`. A
    /// number with an integral value written with a fraction (`2.0`) is an integer, as in
    /// JavaScript.
    pub fn resolve_limit(&self, limit: Option<&Value>) -> Result<usize, LookupError> {
        let max = self.limits.max_search_limit as usize;
        let Some(Value::Number(n)) = limit else {
            return Ok(self.limits.search_default_limit as usize);
        };
        if let Some(u) = n.as_u64() {
            return if u >= 1 {
                Ok((u.min(max as u64)) as usize)
            } else {
                Err(LookupError::LimitNotPositiveInteger)
            };
        }
        if n.as_i64().is_some() {
            return Err(LookupError::LimitNotPositiveInteger);
        }
        match n.as_f64() {
            Some(f) if f.is_finite() && f.fract() == 0.0 && f >= 1.0 => {
                Ok(if f >= max as f64 { max } else { f as usize })
            }
            _ => Err(LookupError::LimitNotPositiveInteger),
        }
    }

    /// `tools.search(query, {limit})` (docs/contract/catalog.md#s3-3) over guest-visible entries.
    ///
    /// `query` must be a JSON string ([`LookupError::SearchQueryNotString`]); `limit` is the
    /// `options.limit` value as received (see [`Catalog::resolve_limit`]). Returns at most
    /// `limit` compact entries scoring above 0, by score descending then id ascending.
    pub fn search(
        &self,
        query: &Value,
        limit: Option<&Value>,
    ) -> Result<Vec<CompactEntry>, LookupError> {
        let Value::String(query) = query else {
            return Err(LookupError::SearchQueryNotString);
        };
        let limit = self.resolve_limit(limit)?;
        Ok(self
            .search_entries(query, limit)
            .into_iter()
            .map(|e| e.compact.clone())
            .collect())
    }

    /// [`Catalog::search`] taking the whole `options` argument: `options.limit` when `options`
    /// is an object, otherwise no limit.
    pub fn search_with_options(
        &self,
        query: &Value,
        options: Option<&Value>,
    ) -> Result<Vec<CompactEntry>, LookupError> {
        let limit = options
            .and_then(Value::as_object)
            .and_then(|o| o.get("limit"));
        self.search(query, limit)
    }

    /// The search itself, for a validated query and limit: at most `limit` guest-visible
    /// entries, best first (docs/contract/catalog.md#s3-3, docs/contract/decisions.md#d15).
    ///
    /// A query without any word (`""`, blanks, punctuation) gives the first `limit` entries in
    /// catalog order. Otherwise an entry whose id equals the trimmed query (case-insensitive)
    /// comes first, then entries whose name equals it, then entries by BM25F score over the
    /// stemmed, stopword-free words of name (weight 3), label (2), description (1), parameter
    /// names and owner (0.5 each), with synonym and prefix expansions at weight 0.4; equal
    /// scores keep catalog order and entries scoring 0 are left out; each score is multiplied by
    /// the share of the query's own terms the entry answers. A query of stopwords only (`"the"`)
    /// scores nothing, so it finds only an entry whose id or name it equals. The index is built
    /// on the first call.
    pub fn search_entries(&self, query: &str, limit: usize) -> Vec<&Entry> {
        let (index, positions) = self.search_index();
        index
            .search(query, limit)
            .into_iter()
            .map(|doc| &self.entries[positions[doc]])
            .collect()
    }

    /// The search index and the entry position of each of its documents, built once.
    fn search_index(&self) -> &(SearchIndex, Vec<usize>) {
        self.search_index.get_or_init(|| {
            let visible: Vec<(usize, &Entry)> = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.is_guest_visible())
                .collect();
            let parameters: Vec<Vec<&str>> = visible
                .iter()
                .map(|(_, e)| {
                    e.parameters
                        .as_ref()
                        .and_then(|p| p.get("properties"))
                        .and_then(Value::as_object)
                        .map(|props| props.keys().map(String::as_str).collect())
                        .unwrap_or_default()
                })
                .collect();
            let index =
                SearchIndex::build(visible.iter().zip(&parameters).map(|((_, e), params)| {
                    SearchDoc {
                        id: e.id(),
                        name: e.name(),
                        label: e.compact.label.as_deref().unwrap_or(""),
                        description: &e.compact.description,
                        owner: e.id().split(':').nth(1).unwrap_or(""),
                        parameters: params,
                    }
                }));
            (index, visible.into_iter().map(|(i, _)| i).collect())
        })
    }

    /// Resolves a guest's tool reference for `describe`/`call`/`callValue` (docs/contract/catalog.md#s3-4).
    ///
    /// The needle is trimmed (ECMAScript whitespace). An exact id among guest-visible entries
    /// wins; otherwise a unique name match. Errors: [`LookupError::AmbiguousName`]
    /// (`Ambiguous tool name: <needle>; use an exact tool id.`) and
    /// [`LookupError::UnknownTool`] (`Unknown tool id: <needle>. [Did you mean: <a>, <b>? ]Use
    /// tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact
    /// id or name.`), both with the trimmed needle.
    pub fn lookup(&self, needle: &str) -> Result<&Entry, LookupError> {
        let needle = js_trim(needle);
        if let Some(entry) = self.entry(needle).filter(|e| e.is_guest_visible()) {
            return Ok(entry);
        }
        match self.guest_by_name.get(needle).map(Vec::as_slice) {
            Some([only]) => Ok(&self.entries[*only]),
            Some([_, _, ..]) => Err(LookupError::AmbiguousName {
                needle: needle.to_string(),
            }),
            _ => Err(self.unknown_tool(needle)),
        }
    }

    /// [`Catalog::lookup`] for an id argument as received from the guest (`None` when it is
    /// missing): anything but a string gives [`LookupError::NonStringId`]
    /// (`<op> id must be a string.`).
    pub fn lookup_value(&self, needle: &Value, op: LookupOp) -> Result<&Entry, LookupError> {
        match needle {
            Value::String(s) => self.lookup(s),
            _ => Err(LookupError::NonStringId(op)),
        }
    }

    /// `tools.describe(id)`: [`Catalog::lookup`] then the described entry.
    pub fn describe(&self, needle: &str) -> Result<DescribedEntry, LookupError> {
        self.lookup(needle).map(Entry::described)
    }

    /// Resolves the target of `call`/`callValue`/a convenience function: [`Catalog::lookup`],
    /// then refuses a tool whose `outputSchema` did not compile
    /// ([`LookupError::Contract`] with [`ContractError::InvalidOutputSchema`]), before anything
    /// runs.
    pub fn resolve_call(&self, needle: &str) -> Result<&Entry, LookupError> {
        let entry = self.lookup(needle)?;
        entry.check_callable()?;
        Ok(entry)
    }

    /// Validates `details` returned by the tool with exactly this id; see
    /// [`Entry::validate_output`]. An id that is not in the catalog gives
    /// [`LookupError::UnknownTool`] for the trimmed id.
    pub fn validate_output(&self, id: &str, details: &Value) -> Result<(), LookupError> {
        match self.entry(id) {
            Some(entry) => Ok(entry.validate_output(details)?),
            None => Err(self.unknown_tool(js_trim(id))),
        }
    }

    /// The unknown-tool error for `needle` (used as given; callers trim), with up to three
    /// suggestions from guest-visible entries (docs/contract/catalog.md#s3-4-suggestions "Suggestions"); its `Display`
    /// is the exact message.
    pub fn unknown_tool(&self, needle: &str) -> LookupError {
        LookupError::UnknownTool {
            needle: needle.to_string(),
            suggestions: self.suggestions(needle),
        }
    }

    /// Up to three suggestions for an unknown needle (docs/contract/catalog.md#s3-4-suggestions):
    /// each guest-visible entry scores (case insensitive; tokens split on `[^a-z0-9]+`) +40 if
    /// the needle contains the name or the id contains the needle, +40 if the needle's tokens
    /// include the name, +12 per needle token found among the tokens of `name id label
    /// description`, +8 if the label or description contains the needle, +36 if the needle is
    /// a misspelling of the name or the id (Damerau-Levenshtein distance at most 1 for needles
    /// of up to 5 characters, 2 up to 10, 3 beyond), and +10 if it is among the first three
    /// [`Catalog::search_entries`] hits for the needle. Entries above 0, by score descending
    /// then value ascending, where the value is the name, or the id when the name is shared;
    /// values de-duplicated.
    pub fn suggestions(&self, needle: &str) -> Vec<String> {
        let needle_lc = needle.to_lowercase();
        let needle_tokens = lookup_tokens(needle);
        let searched: Vec<&str> = self
            .search_entries(needle, 3)
            .into_iter()
            .map(Entry::id)
            .collect();
        let mut scored: Vec<(u32, &str)> = self
            .guest_entries()
            .filter_map(|e| {
                let mut score = e.suggestion_score(&needle_lc, &needle_tokens);
                if searched.contains(&e.id()) {
                    score += 10;
                }
                if score == 0 {
                    return None;
                }
                let shared = self.guest_by_name.get(e.name()).map_or(0, Vec::len) > 1;
                Some((score, if shared { e.id() } else { e.name() }))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| cmp_utf16(a.1, b.1)));
        let mut out: Vec<String> = Vec::new();
        for (_, value) in scored {
            if out.len() == 3 {
                break;
            }
            if !out.iter().any(|v| v == value) {
                out.push(value.to_string());
            }
        }
        out
    }
}

impl Entry {
    fn suggestion_score(&self, needle_lc: &str, needle_tokens: &HashSet<String>) -> u32 {
        let l = &self.lower;
        let mut score = 0;
        if needle_lc.contains(l.name.as_str()) || l.id.contains(needle_lc) {
            score += 40;
        }
        if needle_tokens.contains(&l.name) {
            score += 40;
        }
        if !needle_tokens.is_empty() {
            let entry_tokens = lookup_tokens(&format!(
                "{} {} {} {}",
                l.name, l.id, l.label, l.description
            ));
            score += 12
                * needle_tokens
                    .iter()
                    .filter(|t| entry_tokens.contains(*t))
                    .count() as u32;
        }
        if l.label.contains(needle_lc) || l.description.contains(needle_lc) {
            score += 8;
        }
        if is_misspelling(needle_lc, &l.name) || is_misspelling(needle_lc, &l.id) {
            score += 36;
        }
        score
    }
}
