//! Bounded TypeScript-style hints rendered from JSON Schema (behaviour.md §3.2).
//!
//! [`input_hint`] renders a tool's `parameters` for the compact entry's `input` field and
//! [`output_hint`] renders a trusted `outputSchema` for `output`. Both are pure, deterministic and
//! bounded: the renderer never follows `$ref`, never descends deeper than the depth bound, looks
//! at no more than a fixed number of properties per object (picking them with a linear-time
//! selection, not a full sort), and stops adding properties once the character budget is spent.
//! Rendering a schema therefore costs time linear in the size of the parts it inspects, whatever
//! the schema holds (10k-character keys, 1000 properties, deep nesting, cyclic `$ref`s).
//!
//! Lengths are UTF-16 code units, as in the JavaScript reference.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::js::{
    cmp_utf16, is_identifier, json_string, primitive_literal, utf16_len, utf16_longer_than,
};

/// Bounds for one kind of hint (behaviour.md §3.2 "Hint limits").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HintLimits {
    /// Maximum length of the whole hint, in UTF-16 code units.
    pub max_chars: usize,
    /// Maximum nesting depth. The root schema is at depth 0; every object property, array item
    /// and union member is one level deeper than the schema holding it. A non-empty schema deeper
    /// than this renders as `unknown` and makes the hint incomplete.
    pub max_depth: usize,
    /// Maximum number of properties rendered per object; the rest are cut (`; ...`).
    pub max_properties: usize,
}

/// Input-hint bounds: 300 UTF-16 units (longer → `"unknown"`), depth 4, 16 properties per object.
pub const INPUT_HINT_LIMITS: HintLimits = HintLimits {
    max_chars: 300,
    max_depth: 4,
    max_properties: 16,
};

/// Output-hint bounds: 850 UTF-16 units (longer → no hint), depth 6, 20 properties per object.
pub const OUTPUT_HINT_LIMITS: HintLimits = HintLimits {
    max_chars: 850,
    max_depth: 6,
    max_properties: 20,
};

/// Property names longer than this (UTF-16 units) are never rendered; the object is cut.
pub const MAX_PROPERTY_NAME_CHARS: usize = 128;
/// Structural unions (`anyOf`/`oneOf`/`type: [...]`) render at most this many members.
pub const MAX_UNION_MEMBERS: usize = 4;
/// Literal unions (`enum`, `const`, `anyOf` of `const`s) render at most this many values …
pub const MAX_LITERAL_VALUES: usize = 8;
/// … and at most this many UTF-16 units once joined with ` | `.
pub const MAX_LITERAL_CHARS: usize = 96;

/// Keywords whose presence means a compact hint cannot describe the schema exactly; a schema
/// using any of them never yields a complete (promotable) output hint.
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

/// Keywords that give a schema a base shape; a union next to any of them is an intersection the
/// compact form cannot express.
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

/// Text used for opaque or unrenderable schemas.
pub const UNKNOWN: &str = "unknown";

/// The compact `input` hint of a tool's `parameters` (behaviour.md §3.2).
///
/// `None` (no parameters) and anything that cannot be rendered give `"unknown"`, as does a hint
/// longer than [`INPUT_HINT_LIMITS`]`.max_chars`. Incomplete input hints are still shown (they
/// are only a guide to the full schema that `describe` returns).
pub fn input_hint(parameters: Option<&Value>) -> String {
    let Some(schema) = parameters else {
        return UNKNOWN.to_string();
    };
    let hint = Renderer::new(INPUT_HINT_LIMITS).render(schema, 0, INPUT_HINT_LIMITS.max_chars);
    let text = hint.text();
    if utf16_longer_than(&text, INPUT_HINT_LIMITS.max_chars) {
        UNKNOWN.to_string()
    } else {
        text
    }
}

/// The compact `output` hint of a trusted `outputSchema` (behaviour.md §3.2), or `None` when the
/// hint would not be complete: an open object (no `additionalProperties: false`), an unsupported
/// keyword (`$ref`, `allOf`, `patternProperties`, `if`, `prefixItems`, …), a union mixed with a
/// base shape, an empty `anyOf`, `anyOf` together with `oneOf`, anything cut by the bounds
/// (depth, properties, literal values, name length), or a hint longer than
/// [`OUTPUT_HINT_LIMITS`]`.max_chars`. Opaque `{}` leaves render as `unknown` and stay complete.
pub fn output_hint(schema: &Value) -> Option<String> {
    let hint = Renderer::new(OUTPUT_HINT_LIMITS).render(schema, 0, OUTPUT_HINT_LIMITS.max_chars);
    if !hint.complete {
        return None;
    }
    let text = hint.text();
    (!utf16_longer_than(&text, OUTPUT_HINT_LIMITS.max_chars)).then_some(text)
}

/// A rendered (sub)schema: its top-level union members and whether it describes the schema
/// exactly.
#[derive(Debug, Clone)]
struct Hint {
    /// Top-level union members, de-duplicated, in first-seen order; never empty.
    members: Vec<String>,
    complete: bool,
}

impl Hint {
    fn exact(text: impl Into<String>) -> Self {
        Hint {
            members: vec![text.into()],
            complete: true,
        }
    }

    fn partial(text: impl Into<String>) -> Self {
        Hint {
            members: vec![text.into()],
            complete: false,
        }
    }

    fn unknown() -> Self {
        Hint::partial(UNKNOWN)
    }

    fn incomplete(mut self) -> Self {
        self.complete = false;
        self
    }

    fn text(&self) -> String {
        self.members.join(" | ")
    }

    fn len(&self) -> usize {
        self.members.iter().map(|m| utf16_len(m)).sum::<usize>() + 3 * (self.members.len() - 1)
    }

    /// Adds `member` unless an equal member is already present.
    fn push_member(&mut self, member: String) {
        if !self.members.contains(&member) {
            self.members.push(member);
        }
    }

    /// Joins several hints into one union, de-duplicating members.
    fn union(hints: Vec<Hint>) -> Hint {
        let mut out = Hint {
            members: Vec::new(),
            complete: true,
        };
        for hint in hints {
            out.complete &= hint.complete;
            for member in hint.members {
                out.push_member(member);
            }
        }
        if out.members.is_empty() {
            return Hint::unknown();
        }
        out
    }
}

struct Renderer {
    limits: HintLimits,
}

impl Renderer {
    fn new(limits: HintLimits) -> Self {
        Renderer { limits }
    }

    /// Renders `schema` found at `depth`. `budget` is the length (UTF-16 units) the caller can
    /// still use; objects stop adding properties beyond it, other shapes may exceed it and are
    /// checked by the caller.
    fn render(&self, schema: &Value, depth: usize, budget: usize) -> Hint {
        match schema {
            Value::Bool(true) => Hint::exact(UNKNOWN),
            Value::Bool(false) => Hint::exact("never"),
            Value::Object(map) => self.render_map(map, depth, budget),
            _ => Hint::unknown(),
        }
    }

    fn render_map(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Hint {
        if map
            .keys()
            .all(|k| ANNOTATION_KEYWORDS.contains(&k.as_str()))
        {
            return Hint::exact(UNKNOWN);
        }
        if depth > self.limits.max_depth {
            return Hint::unknown();
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
        let mut hint = self.render_shape(map, depth, budget);
        hint.complete &= complete;
        if nullable {
            hint.push_member("null".into());
        }
        hint
    }

    fn render_shape(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Hint {
        let any_of = map.get("anyOf");
        let one_of = map.get("oneOf");
        if any_of.is_none() && one_of.is_none() {
            return self.render_base(map, depth, budget);
        }
        if BASE_SHAPE_KEYWORDS.iter().any(|k| map.contains_key(*k)) {
            // A union next to a base shape is an intersection: show the base, never promote it.
            return self.render_base(map, depth, budget).incomplete();
        }
        let variants = match (any_of, one_of) {
            (Some(_), Some(_)) => return Hint::unknown(),
            (Some(v), None) | (None, Some(v)) => v,
            (None, None) => return Hint::unknown(),
        };
        self.render_union(variants, depth, budget)
    }

    fn render_union(&self, variants: &Value, depth: usize, budget: usize) -> Hint {
        let Some(variants) = variants.as_array() else {
            return Hint::unknown();
        };
        // Bounded before any per-variant work: nothing larger than the literal bound renders.
        if variants.is_empty() || variants.len() > MAX_LITERAL_VALUES {
            return Hint::unknown();
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
            return literal_union(consts.into_iter()).unwrap_or_else(Hint::unknown);
        }
        if variants.len() > MAX_UNION_MEMBERS {
            return Hint::unknown();
        }
        Hint::union(
            variants
                .iter()
                .map(|v| self.render(v, depth + 1, budget))
                .collect(),
        )
    }

    /// `const`, then `enum`, then `type`.
    fn render_base(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Hint {
        if let Some(value) = map.get("const") {
            return match literal_union(std::iter::once(value)) {
                Some(hint) => hint,
                None => self.render_type(map, depth, budget).incomplete(),
            };
        }
        if let Some(values) = map.get("enum") {
            let literal = values
                .as_array()
                .filter(|a| !a.is_empty() && a.len() <= MAX_LITERAL_VALUES)
                .and_then(|a| literal_union(a.iter()));
            return match literal {
                Some(hint) => hint,
                None => self.render_type(map, depth, budget).incomplete(),
            };
        }
        self.render_type(map, depth, budget)
    }

    fn render_type(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Hint {
        match map.get("type") {
            Some(Value::String(t)) => self.render_named_type(t, map, depth, budget),
            Some(Value::Array(types)) => {
                if types.is_empty() || types.len() > MAX_UNION_MEMBERS {
                    return Hint::unknown();
                }
                let names: Option<Vec<&str>> = types.iter().map(Value::as_str).collect();
                let Some(names) = names else {
                    return Hint::unknown();
                };
                if let [only] = names.as_slice() {
                    return self.render_named_type(only, map, depth, budget);
                }
                Hint::union(
                    names
                        .iter()
                        .map(|t| self.render_named_type(t, map, depth + 1, budget))
                        .collect(),
                )
            }
            Some(_) => Hint::unknown(),
            None => {
                // No `type`: infer the shape from its keywords, but it is not exact (a value of
                // another type would also match).
                if map.contains_key("properties") || map.contains_key("additionalProperties") {
                    self.render_object(map, depth, budget).incomplete()
                } else if map.contains_key("items") {
                    self.render_named_type("array", map, depth, budget)
                        .incomplete()
                } else {
                    Hint::unknown()
                }
            }
        }
    }

    fn render_named_type(
        &self,
        name: &str,
        map: &Map<String, Value>,
        depth: usize,
        budget: usize,
    ) -> Hint {
        if depth > self.limits.max_depth {
            return Hint::unknown();
        }
        match name {
            "integer" | "number" => Hint::exact("number"),
            "string" | "boolean" | "null" => Hint::exact(name),
            "array" => {
                let item = match map.get("items") {
                    None => Hint::exact(UNKNOWN),
                    Some(Value::Array(_)) => Hint::unknown(),
                    Some(items) => self.render(items, depth + 1, budget.saturating_sub(7)),
                };
                Hint {
                    members: vec![format!("Array<{}>", item.text())],
                    complete: item.complete,
                }
            }
            "object" => self.render_object(map, depth, budget),
            _ => Hint::unknown(),
        }
    }

    fn render_object(&self, map: &Map<String, Value>, depth: usize, budget: usize) -> Hint {
        const OPEN: &str = "{ ... }";
        const MORE: &str = "; ...";
        let additional = map.get("additionalProperties");
        let closed = matches!(additional, Some(Value::Bool(false)));
        let open = matches!(additional, Some(Value::Bool(true) | Value::Object(_)));
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

        // Required names: strings only, de-duplicated, over-long names cut.
        let mut required_names: Vec<&str> = Vec::new();
        let mut required_set: HashSet<&str> = HashSet::new();
        match map.get("required") {
            None => {}
            Some(Value::Array(values)) => {
                for value in values {
                    match value.as_str() {
                        Some(name) if utf16_longer_than(name, MAX_PROPERTY_NAME_CHARS) => {
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
            if utf16_longer_than(name, MAX_PROPERTY_NAME_CHARS) {
                cut = true;
                continue;
            }
            optional_names.push(name);
        }

        if required_names.is_empty() && optional_names.is_empty() {
            return if closed && !cut && required_set.is_empty() {
                Hint {
                    members: vec!["{}".into()],
                    complete,
                }
            } else {
                Hint::partial(OPEN)
            };
        }

        let max = self.limits.max_properties;
        let required_total = required_names.len();
        let required_keys = smallest_sorted(required_names, max);
        let optional_total = optional_names.len();
        let optional_keys = smallest_sorted(optional_names, max - required_keys.len());
        if required_keys.len() < required_total || optional_keys.len() < optional_total {
            cut = true;
        }

        let keys: Vec<(&str, bool)> = required_keys
            .iter()
            .map(|k| (*k, true))
            .chain(optional_keys.iter().map(|k| (*k, false)))
            .collect();
        // "{ " + parts joined by "; " + " }", keeping room for "; ..." whenever more may follow.
        let mut parts: Vec<String> = Vec::new();
        let mut used = 4usize; // "{ " and " }"
        let count = keys.len();
        for (index, (key, is_required)) in keys.into_iter().enumerate() {
            let name = if is_identifier(key) {
                key.to_string()
            } else {
                json_string(key)
            };
            let separator = if parts.is_empty() { 0 } else { 2 };
            let last = index + 1 == count;
            let reserve = if last && !cut && !open { 0 } else { MORE.len() };
            let prefix = utf16_len(&name) + if is_required { 2 } else { 3 }; // ": " / "?: "
            let child_budget = budget.saturating_sub(used + separator + prefix + reserve);
            let child = match properties.get(key) {
                Some(schema) => self.render(schema, depth + 1, child_budget),
                None => Hint::unknown(),
            };
            let child_len = child.len();
            if used + separator + prefix + child_len + reserve > budget {
                cut = true;
                break;
            }
            complete &= child.complete;
            let marker = if is_required { "" } else { "?" };
            parts.push(format!("{name}{marker}: {}", child.text()));
            used += separator + prefix + child_len;
        }
        if parts.is_empty() {
            return Hint::partial(OPEN);
        }
        let suffix = if cut || open { MORE } else { "" };
        Hint {
            members: vec![format!("{{ {}{suffix} }}", parts.join("; "))],
            complete: complete && !cut,
        }
    }
}

/// `values` as a literal union (`"a" | "b" | 1 | null`): every value primitive, at most
/// [`MAX_LITERAL_VALUES`] of them, de-duplicated, at most [`MAX_LITERAL_CHARS`] long once joined.
fn literal_union<'a>(values: impl Iterator<Item = &'a Value>) -> Option<Hint> {
    let mut hint = Hint {
        members: Vec::new(),
        complete: true,
    };
    for (index, value) in values.enumerate() {
        if index >= MAX_LITERAL_VALUES {
            return None;
        }
        if let Value::String(s) = value {
            // A string literal is at least as long as its content; skip rendering huge ones.
            if utf16_longer_than(s, MAX_LITERAL_CHARS) {
                return None;
            }
        }
        hint.push_member(primitive_literal(value)?);
    }
    if hint.members.is_empty() || hint.len() > MAX_LITERAL_CHARS {
        return None;
    }
    Some(hint)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(v: Value) -> String {
        input_hint(Some(&v))
    }

    fn output(v: Value) -> Option<String> {
        output_hint(&v)
    }

    #[test]
    fn spec_rendering_rules() {
        assert_eq!(
            input(json!({"type": "object", "properties": {"value": {"type": "string"}}})),
            "{ value?: string }"
        );
        assert_eq!(
            input(json!({"type": "object", "properties": {
                "optional": {"type": "boolean"}, "beta": {"type": "number"}, "alpha": {"type": "string"}
            }, "required": ["beta", "alpha"]})),
            "{ alpha: string; beta: number; optional?: boolean }"
        );
        assert_eq!(
            input(json!({"type": "object", "properties": {"a-b": {"type": "integer"}}})),
            "{ \"a-b\"?: number }"
        );
        assert_eq!(
            input(json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true})),
            "{ a?: unknown; ... }"
        );
        assert_eq!(
            input(json!({"type": "object", "additionalProperties": false})),
            "{}"
        );
        assert_eq!(input(json!({"type": "object"})), "{ ... }");
        assert_eq!(input(json!({})), "unknown");
        assert_eq!(input_hint(None), "unknown");
        assert_eq!(
            input(json!({"type": "string", "enum": ["a", "b", "a"]})),
            "\"a\" | \"b\""
        );
        assert_eq!(input(json!({"const": 1.0})), "1");
        assert_eq!(
            input(json!({"type": ["string", "null", "integer", "number"]})),
            "string | null | number"
        );
        assert_eq!(
            input(
                json!({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "number"}}]})
            ),
            "string | Array<number>"
        );
        assert_eq!(
            input(json!({"type": "string", "nullable": true})),
            "string | null"
        );
        assert_eq!(
            input(json!({"type": ["string", "null"], "nullable": true})),
            "string | null"
        );
    }

    #[test]
    fn output_completeness() {
        let closed = json!({"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "score": {"type": "number"}
        }, "required": ["id", "score"], "additionalProperties": false}});
        assert_eq!(
            output(closed).as_deref(),
            Some("Array<{ id: string; score: number }>")
        );
        // Open object.
        assert_eq!(
            output(json!({"type": "object", "properties": {"a": {"type": "string"}}})),
            None
        );
        // Unsupported keywords.
        for kw in ["$ref", "allOf", "patternProperties", "if", "prefixItems"] {
            let mut schema =
                json!({"type": "object", "properties": {}, "additionalProperties": false});
            schema[kw] = json!([]);
            assert_eq!(output(schema), None, "{kw}");
        }
        // Union with base shape, empty anyOf, anyOf with oneOf.
        assert_eq!(
            output(json!({"type": "string", "anyOf": [{"type": "string"}]})),
            None
        );
        assert_eq!(output(json!({"anyOf": []})), None);
        assert_eq!(
            output(json!({"anyOf": [{"type": "string"}], "oneOf": [{"type": "string"}]})),
            None
        );
        // Eight literals are fine, nine give no hint.
        let eight: Vec<Value> = (0..8).map(|i| json!(i)).collect();
        let nine: Vec<Value> = (0..9).map(|i| json!(i)).collect();
        assert_eq!(
            output(json!({"enum": eight})).as_deref(),
            Some("0 | 1 | 2 | 3 | 4 | 5 | 6 | 7")
        );
        assert_eq!(output(json!({"type": "number", "enum": nine})), None);
        let const_variants: Vec<Value> = (0..9).map(|i| json!({"const": i})).collect();
        assert_eq!(output(json!({"oneOf": const_variants})), None);
        // Opaque leaves stay complete.
        assert_eq!(
            output(json!({"type": "object", "properties": {"raw": {}}, "required": ["raw"], "additionalProperties": false})).as_deref(),
            Some("{ raw: unknown }")
        );
    }

    #[test]
    fn bounds_hold_for_hostile_schemas() {
        // 1000 properties: 16 rendered, cut marker.
        let mut props = Map::new();
        for i in 0..1000 {
            props.insert(format!("p{i:04}"), json!({"type": "string"}));
        }
        let h = input(json!({"type": "object", "properties": props}));
        assert!(h.ends_with("; ... }"), "{h}");
        assert!(h.starts_with("{ p0000?: string; p0001?: string;"), "{h}");
        assert!(utf16_len(&h) <= 300);
        // 10k-character key: never rendered.
        let long = "k".repeat(10_000);
        let h = input(
            json!({"type": "object", "properties": {long: {"type": "string"}, "ok": {"type": "string"}}}),
        );
        assert_eq!(h, "{ ok?: string; ... }");
        // Deep nesting: cut at the depth bound.
        let mut schema = json!({"type": "string"});
        for _ in 0..200 {
            schema = json!({"type": "object", "properties": {"a": schema}});
        }
        assert_eq!(
            input(schema),
            "{ a?: { a?: { a?: { a?: { a?: unknown } } } } }"
        );
        // Cyclic $ref is never followed.
        assert_eq!(
            input(json!({"$defs": {"n": {"$ref": "#/$defs/n"}}, "$ref": "#/$defs/n"})),
            "unknown"
        );
    }
}
