//! `tools.search` ranking: BM25F over stemmed, stopword-free fields with a few query
//! expansions, exact-id and exact-name hits first (docs/contract/catalog.md#s3-3,
//! docs/contract/decisions.md#d15).
//!
//! The index is built from the guest-visible entries in catalog order ([`SearchIndex::build`]);
//! a document is named by its position in that order, so ties resolve in catalog order. Every
//! posting carries its term's whole BM25F contribution, computed at build time, so a search
//! is a sum over the postings of the query's terms and a partial sort: no document is scanned.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// One document of the index: the searchable text of one guest-visible entry.
#[derive(Debug, Clone, Copy)]
pub struct SearchDoc<'a> {
    /// The exact id (`<source>:<owner>:<name>`), matched whole for the exact-id tier.
    pub id: &'a str,
    /// The registered tool name: the heaviest field, and matched whole for the exact-name tier.
    pub name: &'a str,
    /// The optional label.
    pub label: &'a str,
    /// The description.
    pub description: &'a str,
    /// The id's owner segment (core, plugin id, client name).
    pub owner: &'a str,
    /// The top-level property names of the input schema.
    pub parameters: &'a [&'a str],
}

/// Fields in weight order; see [`FIELD_WEIGHTS`] and [`FIELD_B`].
const FIELDS: usize = 5;

/// BM25F field weights: name, label, description, parameter names, owner
/// (docs/contract/decisions.md#d15).
pub const FIELD_WEIGHTS: [f32; FIELDS] = [3.0, 2.0, 1.0, 0.5, 0.5];

/// BM25F length normalisation per field (same order as [`FIELD_WEIGHTS`]).
pub const FIELD_B: [f32; FIELDS] = [0.5, 0.5, 0.75, 0.5, 0.0];

/// BM25 term-frequency saturation.
pub const K1: f32 = 1.2;

/// Weight of a term added by a query expansion (a synonym, or a vocabulary term the query term
/// is a prefix of) relative to a term the query holds itself.
pub const EXPANSION_WEIGHT: f32 = 0.4;

/// How many vocabulary terms one unmatched query term may expand to by prefix.
const MAX_PREFIX_EXPANSIONS: usize = 8;

/// Shortest query term (in characters) that is expanded by prefix.
const MIN_PREFIX_CHARS: usize = 3;

/// English words that carry no meaning in a tool search (articles, pronouns, auxiliaries,
/// prepositions of no direction). Words that do say something about a tool are kept: `on`,
/// `off`, `up`, `down`, `all`, `new`, `not`, `out`, `over`, `into`.
const STOPWORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could",
    "did", "do", "does", "each", "for", "from", "had", "has", "have", "he", "her", "here", "his",
    "how", "i", "if", "in", "is", "it", "it's", "its", "let", "me", "might", "mine", "my", "of",
    "or", "our", "please", "she", "should", "so", "some", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "tool", "tools", "us", "use", "using", "via",
    "was", "we", "were", "what", "what's", "whats", "when", "where", "which", "who", "whom", "why",
    "will", "with", "would", "you", "your",
];

/// Query expansions: a query term in one of these groups also searches the group's other
/// words at [`EXPANSION_WEIGHT`]. Generic verbs and nouns of tool catalogs, not names of any
/// particular catalog's tools (docs/contract/decisions.md#d15).
const SYNONYMS: &[&[&str]] = &[
    &["find", "search", "lookup", "look", "locate", "query"],
    &["list", "ls", "enumerate"],
    &["delete", "remove", "rm", "erase", "destroy"],
    &["create", "make", "new", "add", "open"],
    &["fetch", "get", "retrieve", "download"],
    &["send", "post", "publish", "deliver"],
    &["run", "execute", "exec", "launch", "invoke"],
    &["directory", "folder", "dir"],
    &["email", "mail", "inbox", "mailbox"],
    &["message", "msg", "chat"],
    &["image", "picture", "photo", "screenshot"],
    &["issue", "ticket", "bug"],
    &["edit", "modify", "change", "update"],
    &["move", "rename", "mv"],
    &["remember", "recall", "memory"],
    &["several", "multiple", "many", "batch", "bulk"],
    &["inside", "within", "content"],
    &["repository", "repo"],
    &["meeting", "event", "appointment"],
    &["stop", "kill", "terminate", "cancel"],
    &["compress", "zip", "gzip", "archive"],
    &["extract", "unzip", "decompress"],
    &["show", "display", "view"],
];

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// Stemmed synonym groups: stem → the other stems of its groups.
fn synonyms() -> &'static HashMap<String, Vec<String>> {
    static SYNONYMS_STEMMED: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    SYNONYMS_STEMMED.get_or_init(|| {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for group in SYNONYMS {
            let stems: Vec<String> = group.iter().map(|w| stem(w).into_owned()).collect();
            for s in &stems {
                let others = map.entry(s.clone()).or_default();
                for o in &stems {
                    if o != s && !others.contains(o) {
                        others.push(o.clone());
                    }
                }
            }
        }
        map
    })
}

fn stem(word: &str) -> Cow<'_, str> {
    stemmer().stem(word)
}

/// Splits `text` into lowercased words: runs of letters and digits, also split at camelCase
/// humps (`createIssue` → `create`, `issue`; `HTTPServer` → `http`, `server`). An apostrophe
/// inside a word is kept (`what's`), so the stopword list sees it whole.
pub fn words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let inner_apostrophe = c == '\''
            && !current.is_empty()
            && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        if !(c.is_alphanumeric() || inner_apostrophe) {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            continue;
        }
        if c.is_uppercase() && !current.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(std::mem::take(&mut current));
            }
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The index terms of `text`: [`words`] without stopwords, stemmed (Snowball English).
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .iter()
        .filter(|w| !is_stopword(w))
        .map(|w| stem(w).into_owned())
        .collect()
}

/// A term of a query with its weight and the query's own terms it stands for (one bit each).
#[derive(Debug)]
struct QueryTerm {
    term: String,
    weight: f32,
    mask: u64,
}

/// One document's share of a term: its precomputed BM25F score.
#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    score: f32,
}

/// The search index of one catalog (built once, on the first search).
#[derive(Debug, Default)]
pub struct SearchIndex {
    /// Term → postings, in document order.
    postings: HashMap<String, Vec<Posting>>,
    /// Every term, sorted, for prefix expansion.
    vocabulary: Vec<String>,
    /// Lowercased id → document.
    by_id: HashMap<String, u32>,
    /// Lowercased name → documents.
    by_name: HashMap<String, Vec<u32>>,
    docs: usize,
}

/// One document's terms while the index is built: `(term id, field, count)` triples sorted by
/// term then field, and the document's field lengths in terms.
type DocTerms = (Vec<(u32, u8, u32)>, [u32; FIELDS]);

/// A ranked hit: the document's position in the order given to [`SearchIndex::build`].
pub type Hit = usize;

impl SearchIndex {
    /// Indexes `docs` (guest-visible entries in catalog order). Linear in the text: each
    /// distinct word is checked against the stopwords and stemmed once, and terms are interned
    /// as numbers while the index is built, so the per-occurrence work is one hash lookup.
    pub fn build<'a>(docs: impl IntoIterator<Item = SearchDoc<'a>>) -> SearchIndex {
        /// A word that is a stopword (no term).
        const NO_TERM: u32 = u32::MAX;
        // Word → term id, and term id → term (the stem); stems shared by several words are
        // one term.
        let mut word_terms: HashMap<String, u32> = HashMap::new();
        let mut term_ids: HashMap<String, u32> = HashMap::new();
        let mut term_names: Vec<String> = Vec::new();
        let mut per_doc: Vec<DocTerms> = Vec::new();
        let mut by_id = HashMap::new();
        let mut by_name: HashMap<String, Vec<u32>> = HashMap::new();
        let mut occurrences: Vec<u32> = Vec::new();
        for (position, doc) in docs.into_iter().enumerate() {
            let position = position as u32;
            by_id.insert(doc.id.to_lowercase(), position);
            by_name
                .entry(doc.name.to_lowercase())
                .or_default()
                .push(position);
            let parameters = doc.parameters.join(" ");
            let texts = [doc.name, doc.label, doc.description, &parameters, doc.owner];
            let mut triples: Vec<(u32, u8, u32)> = Vec::new();
            let mut lengths = [0u32; FIELDS];
            for (field, text) in texts.iter().enumerate() {
                occurrences.clear();
                for word in words(text) {
                    let term = match word_terms.get(&word) {
                        Some(&term) => term,
                        None => {
                            let term = if is_stopword(&word) {
                                NO_TERM
                            } else {
                                let stemmed = stem(&word).into_owned();
                                let next = term_names.len() as u32;
                                *term_ids.entry(stemmed).or_insert_with_key(|stemmed| {
                                    term_names.push(stemmed.clone());
                                    next
                                })
                            };
                            word_terms.insert(word, term);
                            term
                        }
                    };
                    if term != NO_TERM {
                        occurrences.push(term);
                    }
                }
                lengths[field] = occurrences.len() as u32;
                occurrences.sort_unstable();
                for run in occurrences.chunk_by(|a, b| a == b) {
                    triples.push((run[0], field as u8, run.len() as u32));
                }
            }
            triples.sort_unstable();
            per_doc.push((triples, lengths));
        }
        let n = per_doc.len();
        let mut average = [0f32; FIELDS];
        for (_, lengths) in &per_doc {
            for (a, len) in average.iter_mut().zip(lengths) {
                *a += *len as f32;
            }
        }
        for a in &mut average {
            *a /= n.max(1) as f32;
        }
        // Document frequencies: a term counts once per document (the triples of one term are
        // adjacent).
        let mut df = vec![0u32; term_names.len()];
        for (triples, _) in &per_doc {
            for run in triples.chunk_by(|a, b| a.0 == b.0) {
                df[run[0].0 as usize] += 1;
            }
        }
        let mut lists: Vec<Vec<Posting>> = vec![Vec::new(); term_names.len()];
        for (doc, (triples, lengths)) in per_doc.iter().enumerate() {
            let norm = |f: usize| {
                if average[f] > 0.0 {
                    1.0 - FIELD_B[f] + FIELD_B[f] * (lengths[f] as f32) / average[f]
                } else {
                    1.0
                }
            };
            for run in triples.chunk_by(|a, b| a.0 == b.0) {
                let term = run[0].0 as usize;
                // Field order, as BM25F sums the weighted frequencies.
                let mut tft = 0f32;
                for &(_, field, count) in run {
                    let f = field as usize;
                    tft += FIELD_WEIGHTS[f] * (count as f32) / norm(f);
                }
                let d = df[term] as f32;
                let idf = (1.0 + (n as f32 - d + 0.5) / (d + 0.5)).ln();
                let score = idf * tft * (K1 + 1.0) / (K1 + tft);
                lists[term].push(Posting {
                    doc: doc as u32,
                    score,
                });
            }
        }
        let postings: HashMap<String, Vec<Posting>> = term_names
            .iter()
            .cloned()
            .zip(lists)
            .filter(|(_, list)| !list.is_empty())
            .collect();
        let mut vocabulary: Vec<String> = postings.keys().cloned().collect();
        vocabulary.sort_unstable();
        SearchIndex {
            postings,
            vocabulary,
            by_id,
            by_name,
            docs: n,
        }
    }

    /// Number of indexed documents.
    pub fn len(&self) -> usize {
        self.docs
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    /// The weighted query terms of `query`: its terms (stopwords dropped), then for each its synonyms and, when the vocabulary lacks
    /// it, the vocabulary terms it is a prefix of, at [`EXPANSION_WEIGHT`]. A term repeated in
    /// the query counts once per occurrence; an expansion never lowers a term's weight. Also
    /// returns how many distinct own terms the query has (each one bit of a term's `mask`).
    fn query_terms(&self, query_words: &[String]) -> (Vec<QueryTerm>, u32) {
        let kept = query_words.iter().filter(|w| !is_stopword(w));
        let mut terms: Vec<QueryTerm> = Vec::new();
        fn add(terms: &mut Vec<QueryTerm>, term: &str, weight: f32, bit: u64, own: bool) {
            match terms.iter_mut().find(|t| t.term == term) {
                Some(t) => {
                    t.weight = if own {
                        t.weight + weight
                    } else {
                        t.weight.max(weight)
                    };
                    t.mask |= bit;
                }
                None => terms.push(QueryTerm {
                    term: term.to_string(),
                    weight,
                    mask: bit,
                }),
            }
        }
        let mut own: Vec<String> = Vec::new();
        for word in kept {
            let term = stem(word).into_owned();
            let bit = match own.iter().position(|o| *o == term) {
                Some(i) => i,
                None => {
                    own.push(term.clone());
                    own.len() - 1
                }
            };
            add(&mut terms, &term, 1.0, 1 << (bit % 64), true);
        }
        for (i, term) in own.iter().enumerate() {
            let bit = 1u64 << (i % 64);
            if let Some(others) = synonyms().get(term) {
                for other in others {
                    add(&mut terms, other, EXPANSION_WEIGHT, bit, false);
                }
            }
            if !self.postings.contains_key(term) && term.chars().count() >= MIN_PREFIX_CHARS {
                let start = self
                    .vocabulary
                    .partition_point(|v| v.as_str() < term.as_str());
                for v in self.vocabulary[start..]
                    .iter()
                    .take_while(|v| v.starts_with(term.as_str()))
                    .take(MAX_PREFIX_EXPANSIONS)
                {
                    add(&mut terms, v, EXPANSION_WEIGHT, bit, false);
                }
            }
        }
        (terms, own.len().min(64) as u32)
    }

    /// The documents whose id (tier 2) or name (tier 1) equals the trimmed query,
    /// case-insensitively, best tier first.
    fn exact_tiers(&self, query: &str) -> Vec<(u32, u8)> {
        let whole = query.trim().to_lowercase();
        let mut tiers: Vec<(u32, u8)> = Vec::new();
        if let Some(&doc) = self.by_id.get(&whole) {
            tiers.push((doc, 2));
        }
        if let Some(docs) = self.by_name.get(&whole) {
            for &doc in docs {
                if !tiers.iter().any(|t| t.0 == doc) {
                    tiers.push((doc, 1));
                }
            }
        }
        tiers
    }

    /// The documents matching `query`, best first, at most `limit` (docs/contract/catalog.md#s3-3):
    ///
    /// - a query without any word (`""`, only spaces or punctuation) matches every document,
    ///   in document order, after one whose id or name it is (`_`);
    /// - otherwise a document whose id equals the trimmed query (case-insensitive) comes first,
    ///   then documents whose name equals it, then the rest by BM25F score times the share of
    ///   the query's own terms the document answers (itself or by an expansion); equal scores
    ///   keep document order; documents that score 0 are left out. A query of stopwords only
    ///   (`"the"`) scores nothing, so it finds only an exact id or name.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        if limit == 0 {
            return Vec::new();
        }
        let query_words = words(query);
        if query_words.is_empty() {
            // Every document in order, an exact id or name (`_`) first.
            let exact = self.exact_tiers(query);
            let mut hits: Vec<Hit> = exact.iter().map(|&(doc, _)| doc as usize).collect();
            hits.extend(
                (0..self.docs)
                    .filter(|d| !exact.iter().any(|e| e.0 as usize == *d))
                    .take(limit),
            );
            hits.truncate(limit);
            return hits;
        }
        let mut scores = vec![0f32; self.docs];
        let mut matched = vec![0u64; self.docs];
        let (terms, own) = self.query_terms(&query_words);
        for qt in &terms {
            if let Some(list) = self.postings.get(&qt.term) {
                for p in list {
                    scores[p.doc as usize] += qt.weight * p.score;
                    matched[p.doc as usize] |= qt.mask;
                }
            }
        }
        // Coordination: a document answering more of the query's own terms (itself or by an
        // expansion) ranks higher, in proportion.
        if own > 1 {
            for (score, mask) in scores.iter_mut().zip(&matched) {
                *score *= mask.count_ones() as f32 / own as f32;
            }
        }
        let tiers = self.exact_tiers(query);
        let mut hits: Vec<(u8, f32, u32)> = scores
            .iter()
            .enumerate()
            .filter(|(_, s)| **s > 0.0)
            .map(|(doc, &s)| (0, s, doc as u32))
            .collect();
        for (doc, tier) in tiers {
            match hits.iter_mut().find(|h| h.2 == doc) {
                Some(h) => h.0 = tier,
                None => hits.push((tier, 0.0, doc)),
            }
        }
        let order = |a: &(u8, f32, u32), b: &(u8, f32, u32)| {
            b.0.cmp(&a.0)
                .then_with(|| b.1.total_cmp(&a.1))
                .then_with(|| a.2.cmp(&b.2))
        };
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit - 1, order);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(order);
        hits.into_iter().map(|h| h.2 as usize).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, STOPWORDS);
    }

    #[test]
    fn words_split_separators_and_camel_case() {
        assert_eq!(
            words("github__create_issue get-sum createIssue HTTPServer k8s what's"),
            [
                "github", "create", "issue", "get", "sum", "create", "issue", "http", "server",
                "k8s", "what's"
            ]
        );
        assert_eq!(
            terms("Send an email to the customers"),
            ["send", "email", "custom"]
        );
    }
}
