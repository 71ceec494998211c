//! The one JSON-Schema-to-TypeScript walker of the catalog.
//!
//! Two outputs render JSON Schema as TypeScript-style types, under different rules:
//!
//! - the compact hints of docs/contract/catalog.md#s3-2 ([`crate::hint`]): short, bounded by a character
//!   budget, with `; ...` cut markers and a *completeness* flag that decides whether an output
//!   hint may be promoted;
//! - the `.d.ts` declarations of docs/contract/mcp.md#s7-4 ([`crate::mcp`]): longer, best effort, bounded by a node
//!   budget, with `[key: string]: unknown` cut markers.
//!
//! Both call [`render`] with their [`Rules`]; every place that reads a JSON Schema keyword to
//! produce a type is in this module. The walker never follows `$ref`, never descends deeper than
//! [`Rules::max_depth`], visits at most [`Rules::max_nodes`] schema nodes, looks at no more than
//! [`ObjectRules::max_properties`] properties per object (picking them in linear time) and, for
//! budgeted renders, stops adding properties once the character budget is spent. Rendering is
//! therefore linear in the parts of the schema it inspects, whatever the schema holds.
//!
//! Lengths are UTF-16 code units, as in the JavaScript reference.

use std::cell::Cell;
use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::js::{
    cmp_utf16, is_identifier, json_string, primitive_literal, utf16_len, utf16_longer_than,
};

/// Text used for opaque or unrenderable schemas.
pub const UNKNOWN: &str = "unknown";

/// How keywords combine and what happens to a keyword the rules cannot render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keywords {
    /// Compact hints (docs/contract/catalog.md#s3-2): exact or marked incomplete.
    ///
    /// `true` renders `unknown` and `false` `never`; a `$ref` (or `allOf`, `if`, …) is not
    /// followed but makes the result incomplete. `const` wins over `enum`, and either wins over
    /// a union beside it; a literal outside the bounds renders the schema's `type`, incomplete.
    /// A union beside another base shape (`type`, `properties`, …) renders the base,
    /// incomplete; `anyOf` with `oneOf`, an empty or oversized union renders `unknown`; a union
    /// of `const`s is a literal union. `type: [...]` with a non-string member or more than
    /// [`Rules::max_union_members`] members is `unknown`, and its members are one level deeper.
    /// Without `type`, `properties`/`additionalProperties` imply an object and `items` an array
    /// (incomplete). `nullable: true` adds `null` to any shape. Nested unions are flattened into
    /// one de-duplicated member list.
    Exact,
    /// `.d.ts` types (docs/contract/mcp.md#s7-4): best effort, no completeness.
    ///
    /// Anything that is not a JSON object, and any `$ref`, renders `unknown`. A valid `enum`
    /// wins, then a primitive `const`, then `oneOf` (else `anyOf`) of 1 to
    /// [`Rules::max_union_members`] members; a keyword outside its bounds is skipped. Then the
    /// string members of `type` (at most [`Rules::max_union_members`], at the schema's own
    /// depth), or `object` when there is no usable `type` but `properties`; `nullable: true`
    /// adds `null` there only. Union members are compared as whole texts, and a union with an
    /// `unknown` member is `unknown`.
    Lenient,
}

/// Which properties an object shows, in what order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    /// docs/contract/catalog.md#s3-2: the `required` names first (including ones missing from `properties`, which render
    /// `unknown`), then the other properties, each group in UTF-16 order; the first
    /// [`ObjectRules::max_properties`] of that order are shown. Over-long names anywhere cut.
    RequiredFirstSorted,
    /// docs/contract/mcp.md#s7-4: the properties in schema order; the first [`ObjectRules::max_properties`] with
    /// names of at most [`ObjectRules::max_name_chars`] are shown.
    SchemaOrder,
}

/// How objects render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectRules {
    /// Most properties rendered per object; more are cut.
    pub max_properties: usize,
    /// Longest property name rendered (UTF-16 units); a longer one is cut.
    pub max_name_chars: usize,
    /// Which properties, in what order.
    pub order: KeyOrder,
    /// The last member shown when properties were cut: `...` (`{ a: T; ... }`) or
    /// `[key: string]: unknown`. An object with nothing to show is `{ <more> }`.
    pub more: &'static str,
    /// Whether an open object (`additionalProperties` `true` or a schema) also shows `more`.
    pub open_shows_more: bool,
    /// What an object without properties (absent, not an object, or empty) renders; `None`
    /// means `{}` when it is closed (`additionalProperties: false`) and required is empty, and
    /// `{ <more> }` otherwise.
    pub without_properties: Option<&'static str>,
}

/// Everything that differs between two renders of the same schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// Deepest schema rendered; deeper non-trivial schemas render `unknown` (incomplete). Each
    /// object property, array item and union member is one level deeper than its parent.
    pub max_depth: usize,
    /// Most schema nodes visited in one [`render`]; past it, `unknown` and objects stop adding
    /// properties. `usize::MAX` for no bound.
    pub max_nodes: usize,
    /// Most values of a literal union (`enum`, or with [`Keywords::Exact`] a union of `const`s);
    /// more render the `type` instead.
    pub max_literals: usize,
    /// Longest literal union once joined with ` | ` (UTF-16 units), if bounded.
    pub max_literal_chars: Option<usize>,
    /// Most members of a structural union (`anyOf`/`oneOf`/`type: [...]`).
    pub max_union_members: usize,
    /// How keywords combine.
    pub keywords: Keywords,
    /// How objects render.
    pub objects: ObjectRules,
}

/// A rendered (sub)schema: its top-level union members and whether it describes the schema
/// exactly (only meaningful under [`Keywords::Exact`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Top-level union members, de-duplicated, in first-seen order; never empty.
    pub members: Vec<String>,
    /// True when the text describes exactly the values the schema accepts.
    pub complete: bool,
}

impl Rendered {
    fn exact(text: impl Into<String>) -> Self {
        Rendered {
            members: vec![text.into()],
            complete: true,
        }
    }

    fn partial(text: impl Into<String>) -> Self {
        Rendered {
            members: vec![text.into()],
            complete: false,
        }
    }

    fn unknown() -> Self {
        Rendered::partial(UNKNOWN)
    }

    fn incomplete(mut self) -> Self {
        self.complete = false;
        self
    }

    /// The members joined with ` | `.
    pub fn text(&self) -> String {
        self.members.join(" | ")
    }

    /// Length of [`Rendered::text`] in UTF-16 units.
    fn len(&self) -> usize {
        self.members.iter().map(|m| utf16_len(m)).sum::<usize>() + 3 * (self.members.len() - 1)
    }

    fn push_member(&mut self, member: String) {
        if !self.members.contains(&member) {
            self.members.push(member);
        }
    }
}

/// Keywords whose presence means a compact hint cannot describe the schema exactly.
const UNSUPPORTED_KEYWORDS: &[&str] = &[
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "allOf",
    "patternProperties",
    "unevaluatedProperties",
    "dependentSchemas",
    "dependencies",
    "if",
    "then",
    "else",
    "prefixItems",
    "unevaluatedItems",
];

/// Keywords that give a schema a base shape; a union next to any of them is an intersection.
const BASE_SHAPE_KEYWORDS: &[&str] = &[
    "const",
    "enum",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
];

/// Keywords that annotate without constraining: a schema made only of these accepts any value,
/// exactly like `{}`, so it renders as a complete `unknown`.
const ANNOTATION_KEYWORDS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$id",
    "$anchor",
    "markdownDescription",
];

/// Renders `schema`, found at `depth`, under `rules`. `budget` is the length (UTF-16 units) the
/// caller can use: objects stop adding properties beyond it (other shapes may exceed it, so the
/// caller checks the result); `usize::MAX` for no budget.
pub fn render(schema: &Value, depth: usize, budget: usize, rules: &Rules) -> Rendered {
    render_budgeted(schema, depth, budget, rules).0
}

/// [`render`], also telling whether the budget made some object leave out a property that the
/// other rules would have shown (`true`: the text is a shortened list, not just a cut at
/// `max_properties`).
pub fn render_budgeted(
    schema: &Value,
    depth: usize,
    budget: usize,
    rules: &Rules,
) -> (Rendered, bool) {
    let walker = Walker {
        rules,
        nodes: Cell::new(0),
        budget_cut: Cell::new(false),
    };
    let rendered = walker.render(schema, depth, budget);
    (rendered, walker.budget_cut.get())
}

struct Walker<'r> {
    rules: &'r Rules,
    nodes: Cell<usize>,
    /// Set when an object stopped adding properties because of the budget.
    budget_cut: Cell<bool>,
}

impl Walker<'_> {
    fn exact(&self) -> bool {
        self.rules.keywords == Keywords::Exact
    }

    fn over_nodes(&self) -> bool {
        self.nodes.get() > self.rules.max_nodes
    }

    fn render(&self, schema: &Value, depth: usize, budget: usize) -> Rendered {
        self.nodes.set(self.nodes.get().saturating_add(1));
        match schema {
            Value::Object(map) => self.render_map(map, depth, budget),
            Value::Bool(true) if self.exact() => Rendered::exact(UNKNOWN),
            Value::Bool(false) if self.exact() => Rendered::exact("never"),
            _ => Rendered::unknown(),
        }
    }

    fn render_map(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Rendered {
        if map
            .keys()
            .all(|k| ANNOTATION_KEYWORDS.contains(&k.as_str()))
        {
            return Rendered::exact(UNKNOWN);
        }
        if depth > self.rules.max_depth || self.over_nodes() {
            return Rendered::unknown();
        }
        if !self.exact() {
            if map.contains_key("$ref") {
                return Rendered::unknown();
            }
            return self.lenient_shape(map, depth, budget);
        }
        let mut complete = !UNSUPPORTED_KEYWORDS.iter().any(|k| map.contains_key(*k));
        let nullable = match map.get("nullable") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                complete = false;
                false
            }
        };
        let mut rendered = self.exact_shape(map, depth, budget);
        rendered.complete &= complete;
        if nullable {
            rendered.push_member("null".into());
        }
        rendered
    }

    /// [`Keywords::Exact`] precedence: a union alone, else `const`, `enum`, `type`.
    fn exact_shape(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Rendered {
        let any_of = map.get("anyOf");
        let one_of = map.get("oneOf");
        if any_of.is_none() && one_of.is_none() {
            return self.exact_base(map, depth, budget);
        }
        if BASE_SHAPE_KEYWORDS.iter().any(|k| map.contains_key(*k)) {
            // A union next to a base shape is an intersection: show the base, never promote it.
            return self.exact_base(map, depth, budget).incomplete();
        }
        let variants = match (any_of, one_of) {
            (Some(v), None) | (None, Some(v)) => v,
            _ => return Rendered::unknown(),
        };
        let Some(variants) = variants.as_array() else {
            return Rendered::unknown();
        };
        // Bounded before any per-variant work: nothing larger than the literal bound renders.
        if variants.is_empty() || variants.len() > self.rules.max_literals {
            return Rendered::unknown();
        }
        let consts: Option<Vec<&Value>> = variants
            .iter()
            .map(|v| {
                let m = v.as_object()?;
                if UNSUPPORTED_KEYWORDS.iter().any(|k| m.contains_key(*k)) {
                    return None;
                }
                m.get("const").filter(|c| !c.is_array() && !c.is_object())
            })
            .collect();
        if let Some(consts) = consts {
            return self
                .literals(consts.into_iter())
                .unwrap_or_else(Rendered::unknown);
        }
        if variants.len() > self.rules.max_union_members {
            return Rendered::unknown();
        }
        self.union(variants, depth, budget)
    }

    fn exact_base(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Rendered {
        if let Some(value) = map.get("const") {
            return match self.literals(std::iter::once(value)) {
                Some(rendered) => rendered,
                None => self.exact_types(map, depth, budget).incomplete(),
            };
        }
        if let Some(values) = map.get("enum") {
            return match self.enum_literals(values) {
                Some(rendered) => rendered,
                None => self.exact_types(map, depth, budget).incomplete(),
            };
        }
        self.exact_types(map, depth, budget)
    }

    fn exact_types(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Rendered {
        match map.get("type") {
            Some(Value::String(t)) => self.named(t, map, depth, budget),
            Some(Value::Array(types)) => {
                if types.is_empty() || types.len() > self.rules.max_union_members {
                    return Rendered::unknown();
                }
                let names: Option<Vec<&str>> = types.iter().map(Value::as_str).collect();
                let Some(names) = names else {
                    return Rendered::unknown();
                };
                if let [only] = names.as_slice() {
                    return self.named(only, map, depth, budget);
                }
                self.combine(
                    names
                        .iter()
                        .map(|t| self.named(t, map, depth + 1, budget))
                        .collect(),
                )
            }
            Some(_) => Rendered::unknown(),
            None => {
                // No `type`: infer the shape from its keywords, but it is not exact (a value of
                // another type would also match).
                if map.contains_key("properties") || map.contains_key("additionalProperties") {
                    self.object(map, depth, budget).incomplete()
                } else if map.contains_key("items") {
                    self.named("array", map, depth, budget).incomplete()
                } else {
                    Rendered::unknown()
                }
            }
        }
    }

    /// [`Keywords::Lenient`] precedence: `enum`, `const`, `oneOf`/`anyOf`, then `type`.
    fn lenient_shape(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Rendered {
        if let Some(rendered) = map.get("enum").and_then(|v| self.enum_literals(v)) {
            return rendered;
        }
        if let Some(rendered) = map
            .get("const")
            .and_then(|c| self.literals(std::iter::once(c)))
        {
            return rendered;
        }
        let variants = map
            .get("oneOf")
            .and_then(Value::as_array)
            .or_else(|| map.get("anyOf").and_then(Value::as_array));
        if let Some(variants) = variants {
            if !variants.is_empty() && variants.len() <= self.rules.max_union_members {
                return self.union(variants, depth, budget);
            }
        }
        let names: Vec<&str> = match map.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .take(self.rules.max_union_members)
                .collect(),
            _ if map.contains_key("properties") => vec!["object"],
            _ => vec![],
        };
        let mut members: Vec<Rendered> = names
            .into_iter()
            .map(|t| self.named(t, map, depth, budget))
            .collect();
        if map.get("nullable") == Some(&Value::Bool(true)) {
            members.push(Rendered::exact("null"));
        }
        self.combine(members)
    }

    /// Renders each union member one level deeper and combines them.
    fn union(&self, variants: &[Value], depth: usize, budget: usize) -> Rendered {
        self.combine(
            variants
                .iter()
                .map(|v| self.render(v, depth + 1, budget))
                .collect(),
        )
    }

    /// Joins renderings into one union, de-duplicating members. [`Keywords::Exact`] flattens
    /// nested unions; [`Keywords::Lenient`] keeps each part whole and lets `unknown` absorb the
    /// union. No parts render `unknown`.
    fn combine(&self, parts: Vec<Rendered>) -> Rendered {
        let mut out = Rendered {
            members: Vec::new(),
            complete: true,
        };
        for part in parts {
            out.complete &= part.complete;
            if self.exact() {
                for member in part.members {
                    out.push_member(member);
                }
            } else {
                out.push_member(part.text());
            }
        }
        if out.members.is_empty() {
            return Rendered::unknown();
        }
        if !self.exact() && out.members.iter().any(|m| m == UNKNOWN) {
            return Rendered::unknown();
        }
        out
    }

    /// An `enum` value as a literal union: a non-empty array of at most
    /// [`Rules::max_literals`] primitives.
    fn enum_literals(&self, values: &Value) -> Option<Rendered> {
        values
            .as_array()
            .filter(|a| !a.is_empty() && a.len() <= self.rules.max_literals)
            .and_then(|a| self.literals(a.iter()))
    }

    /// `values` as a literal union (`"a" | "b" | 1 | null`): every value primitive, at most
    /// [`Rules::max_literals`] of them, de-duplicated, within [`Rules::max_literal_chars`].
    fn literals<'a>(&self, values: impl Iterator<Item = &'a Value>) -> Option<Rendered> {
        let mut out = Rendered {
            members: Vec::new(),
            complete: true,
        };
        for (index, value) in values.enumerate() {
            if index >= self.rules.max_literals {
                return None;
            }
            if let (Value::String(s), Some(max)) = (value, self.rules.max_literal_chars) {
                // A string literal is at least as long as its content; skip rendering huge ones.
                if utf16_longer_than(s, max) {
                    return None;
                }
            }
            out.push_member(primitive_literal(value)?);
        }
        if out.members.is_empty() {
            return None;
        }
        if let Some(max) = self.rules.max_literal_chars {
            if out.len() > max {
                return None;
            }
        }
        Some(out)
    }

    fn named(&self, name: &str, map: &Map<String, Value>, depth: usize, budget: usize) -> Rendered {
        if depth > self.rules.max_depth {
            return Rendered::unknown();
        }
        match name {
            "integer" | "number" => Rendered::exact("number"),
            "string" | "boolean" | "null" => Rendered::exact(name),
            "array" => {
                let item = match map.get("items") {
                    None => Rendered::exact(UNKNOWN),
                    Some(items) => self.render(items, depth + 1, budget.saturating_sub(7)),
                };
                Rendered {
                    members: vec![format!("Array<{}>", item.text())],
                    complete: item.complete,
                }
            }
            "object" => self.object(map, depth, budget),
            _ => Rendered::unknown(),
        }
    }

    fn object(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Rendered {
        let rules = &self.rules.objects;
        let more = rules.more;
        let additional = map.get("additionalProperties");
        let closed = matches!(additional, Some(Value::Bool(false)));
        let open = rules.open_shows_more
            && matches!(additional, Some(Value::Bool(true) | Value::Object(_)));
        let mut complete = closed;
        let mut cut = false;

        let empty = Map::new();
        let properties = match map.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => {
                complete = false;
                &empty
            }
        };
        if properties.is_empty() {
            if let Some(text) = rules.without_properties {
                return Rendered::partial(text);
            }
        }

        let mut required_set: HashSet<&str> = HashSet::new();
        let keys: Vec<(&str, bool)> = match rules.order {
            KeyOrder::RequiredFirstSorted => {
                let mut required_names: Vec<&str> = Vec::new();
                match map.get("required") {
                    None => {}
                    Some(Value::Array(values)) => {
                        for value in values {
                            match value.as_str() {
                                Some(name) if utf16_longer_than(name, rules.max_name_chars) => {
                                    required_set.insert(name);
                                    cut = true;
                                }
                                Some(name) => {
                                    if required_set.insert(name) {
                                        required_names.push(name);
                                    }
                                }
                                None => complete = false,
                            }
                        }
                    }
                    Some(_) => complete = false,
                }
                let mut optional_names: Vec<&str> = Vec::new();
                for name in properties.keys() {
                    if required_set.contains(name.as_str()) {
                        continue;
                    }
                    if utf16_longer_than(name, rules.max_name_chars) {
                        cut = true;
                        continue;
                    }
                    optional_names.push(name);
                }
                let max = rules.max_properties;
                let required_total = required_names.len();
                let required_keys = smallest_sorted(required_names, max);
                let optional_total = optional_names.len();
                let optional_keys = smallest_sorted(optional_names, max - required_keys.len());
                if required_keys.len() < required_total || optional_keys.len() < optional_total {
                    cut = true;
                }
                required_keys
                    .iter()
                    .map(|k| (*k, true))
                    .chain(optional_keys.iter().map(|k| (*k, false)))
                    .collect()
            }
            KeyOrder::SchemaOrder => {
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut keys = Vec::new();
                for name in properties.keys() {
                    if keys.len() >= rules.max_properties
                        || utf16_longer_than(name, rules.max_name_chars)
                    {
                        cut = true;
                        continue;
                    }
                    keys.push((name.as_str(), required.contains(&name.as_str())));
                }
                keys
            }
        };

        if keys.is_empty() {
            return if closed && !cut && required_set.is_empty() {
                Rendered {
                    members: vec!["{}".into()],
                    complete,
                }
            } else {
                Rendered::partial(format!("{{ {more} }}"))
            };
        }

        // "{ " + parts joined by "; " + " }", keeping room for "; <more>" whenever more may
        // follow.
        let more_len = 2 + utf16_len(more);
        let mut parts: Vec<String> = Vec::new();
        let mut used = 4usize; // "{ " and " }"
        let count = keys.len();
        for (index, (key, is_required)) in keys.into_iter().enumerate() {
            if self.over_nodes() {
                cut = true;
                break;
            }
            let name = if is_identifier(key) {
                key.to_string()
            } else {
                json_string(key)
            };
            let separator = if parts.is_empty() { 0 } else { 2 };
            let last = index + 1 == count;
            let reserve = if last && !cut && !open { 0 } else { more_len };
            let prefix = utf16_len(&name) + if is_required { 2 } else { 3 }; // ": " / "?: "
            let child_budget = budget.saturating_sub(used + separator + prefix + reserve);
            let child = match properties.get(key) {
                Some(schema) => self.render(schema, depth + 1, child_budget),
                None => Rendered::unknown(),
            };
            let child_len = child.len();
            if used + separator + prefix + child_len + reserve > budget {
                cut = true;
                self.budget_cut.set(true);
                break;
            }
            complete &= child.complete;
            let marker = if is_required { "" } else { "?" };
            parts.push(format!("{name}{marker}: {}", child.text()));
            used += separator + prefix + child_len;
        }
        if parts.is_empty() {
            return Rendered::partial(format!("{{ {more} }}"));
        }
        if cut || open {
            parts.push(more.to_string());
        }
        Rendered {
            members: vec![format!("{{ {} }}", parts.join("; "))],
            complete: complete && !cut,
        }
    }
}

/// The `k` smallest names in UTF-16 order, sorted, in time linear in `names.len()` for a fixed `k`.
fn smallest_sorted(mut names: Vec<&str>, k: usize) -> Vec<&str> {
    if names.len() > k {
        if k == 0 {
            return Vec::new();
        }
        names.select_nth_unstable_by(k - 1, |a, b| cmp_utf16(a, b));
        names.truncate(k);
    }
    names.sort_unstable_by(|a, b| cmp_utf16(a, b));
    names
}
