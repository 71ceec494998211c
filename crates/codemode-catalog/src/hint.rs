//! Bounded TypeScript-style hints rendered from JSON Schema (docs/contract/catalog.md#s3-2).
//!
//! [`input_hint`] renders a tool's `parameters` for the compact entry's `input` field and
//! [`output_hint`] renders a trusted `outputSchema` for `output`. Both are pure, deterministic and
//! bounded; the walking itself is [`crate::schema_ts`] under the docs/contract/catalog.md#s3-2 rules
//! ([`Keywords::Exact`], required keys first and sorted, `; ...` cut markers, a character budget).
//! The renderer never follows `$ref`, never descends deeper than the depth bound, looks at no
//! more than a fixed number of properties per object (picking them with a linear-time selection,
//! not a full sort), and stops adding properties once the character budget is spent. Rendering a
//! schema therefore costs time linear in the size of the parts it inspects, whatever the schema
//! holds (10k-character keys, 1000 properties, deep nesting, cyclic `$ref`s).
//!
//! Lengths are UTF-16 code units, as in the JavaScript reference.

use serde_json::Value;

use crate::js::utf16_longer_than;
use crate::schema_ts::{render, render_budgeted, KeyOrder, Keywords, ObjectRules, Rules};

pub use crate::schema_ts::UNKNOWN;

/// Bounds for one kind of hint (docs/contract/catalog.md#s3-2-limits "Hint limits").
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

/// The [`schema_ts`](crate::schema_ts) rules of a compact hint with these bounds.
pub const fn hint_rules(limits: &HintLimits) -> Rules {
    Rules {
        max_depth: limits.max_depth,
        max_nodes: usize::MAX,
        max_literals: MAX_LITERAL_VALUES,
        max_literal_chars: Some(MAX_LITERAL_CHARS),
        max_union_members: MAX_UNION_MEMBERS,
        keywords: Keywords::Exact,
        objects: ObjectRules {
            max_properties: limits.max_properties,
            max_name_chars: MAX_PROPERTY_NAME_CHARS,
            order: KeyOrder::RequiredFirstSorted,
            more: "...",
            open_shows_more: true,
            without_properties: None,
        },
    }
}

const INPUT_RULES: Rules = hint_rules(&INPUT_HINT_LIMITS);
const OUTPUT_RULES: Rules = hint_rules(&OUTPUT_HINT_LIMITS);

/// The compact `input` hint of a tool's `parameters` (docs/contract/catalog.md#s3-2).
///
/// `None` (no parameters) and anything that cannot be rendered give `"unknown"`, as does a hint
/// that does not fit in [`INPUT_HINT_LIMITS`]`.max_chars`: longer, or shortened to fit (a list
/// that drops fields for length would read as the whole input, so the model is sent to
/// `describe` instead; issue 25). An object schema of a tool that takes no arguments (no or
/// empty `properties`, `additionalProperties` absent or `false`, nothing else constraining)
/// gives `{}` rather than the open object's `{ ... }`. Otherwise incomplete input hints are
/// still shown (they are only a guide to the full schema that `describe` returns), including
/// an object cut at [`INPUT_HINT_LIMITS`]`.max_properties`.
pub fn input_hint(parameters: Option<&Value>) -> String {
    let Some(schema) = parameters else {
        return UNKNOWN.to_string();
    };
    if takes_no_arguments(schema) {
        return "{}".to_string();
    }
    let (rendered, budget_cut) =
        render_budgeted(schema, 0, INPUT_HINT_LIMITS.max_chars, &INPUT_RULES);
    let text = rendered.text();
    if budget_cut || utf16_longer_than(&text, INPUT_HINT_LIMITS.max_chars) {
        UNKNOWN.to_string()
    } else {
        text
    }
}

/// Whether `schema` is the input schema of a tool without arguments: an object whose only
/// keywords are `type: "object"`, an empty or absent `properties`, an empty or absent
/// `required`, `additionalProperties: false` and annotations.
fn takes_no_arguments(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return false;
    };
    map.iter().all(|(key, value)| match key.as_str() {
        "type" => value == "object",
        "properties" => value.as_object().is_some_and(|p| p.is_empty()),
        "required" => value.as_array().is_some_and(|r| r.is_empty()),
        "additionalProperties" => value == &Value::Bool(false),
        "title" | "description" | "$schema" | "$id" | "$comment" | "examples" | "default" => true,
        _ => false,
    }) && map.get("type").is_some_and(|t| t == "object")
}

/// The compact `output` hint of a trusted `outputSchema` (docs/contract/catalog.md#s3-2), or `None` when the
/// hint would not be complete: an open object (no `additionalProperties: false`), an unsupported
/// keyword (`$ref`, `allOf`, `patternProperties`, `if`, `prefixItems`, …), a union mixed with a
/// base shape, an empty `anyOf`, `anyOf` together with `oneOf`, anything cut by the bounds
/// (depth, properties, literal values, name length), or a hint longer than
/// [`OUTPUT_HINT_LIMITS`]`.max_chars`. Opaque `{}` leaves render as `unknown` and stay complete.
pub fn output_hint(schema: &Value) -> Option<String> {
    let rendered = render(schema, 0, OUTPUT_HINT_LIMITS.max_chars, &OUTPUT_RULES);
    if !rendered.complete {
        return None;
    }
    let text = rendered.text();
    (!utf16_longer_than(&text, OUTPUT_HINT_LIMITS.max_chars)).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::js::utf16_len;
    use serde_json::{json, Map};

    fn input(v: Value) -> String {
        input_hint(Some(&v))
    }

    fn output(v: Value) -> Option<String> {
        output_hint(&v)
    }

    /// Issue 25: an input hint that does not fit its budget is `unknown`, never a shortened
    /// list that reads as the whole input; a cut at 16 properties still shows `; ...`.
    #[test]
    fn over_budget_input_hints_are_unknown() {
        let fields: Map<String, Value> = (0..12)
            .map(|i| {
                (
                    format!("field_{i:02}_with_a_rather_long_name"),
                    json!({"type": "string"}),
                )
            })
            .collect();
        let required: Vec<String> = fields.keys().cloned().collect();
        let wide = json!({"type": "object", "properties": fields, "required": required});
        assert_eq!(input(wide), "unknown");
        // Nested: the inner object is the one shortened.
        let nested = json!({"type": "object", "properties": {"inner": {"type": "object",
            "properties": (0..12).map(|i| (format!("nested_field_number_{i:02}_long"), json!({"type": "number"})))
                .collect::<Map<String, Value>>()}}});
        assert_eq!(input(nested), "unknown");
        // Seventeen short optional properties: cut by count, not budget.
        let many: Map<String, Value> = (0..17)
            .map(|i| (format!("p{i:02}"), json!({"type": "number"})))
            .collect();
        let hint = input(json!({"type": "object", "properties": many}));
        assert!(
            hint.starts_with("{ p00?: number; ") && hint.ends_with("p15?: number; ... }"),
            "{hint}"
        );
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
        // A tool without arguments is `{}`, not an open object (issue 25); an object that says
        // it is open still reads as one.
        assert_eq!(input(json!({"type": "object"})), "{}");
        assert_eq!(
            input(
                json!({"type": "object", "properties": {}, "required": [], "description": "none"})
            ),
            "{}"
        );
        assert_eq!(
            input(json!({"type": "object", "additionalProperties": true})),
            "{ ... }"
        );
        assert_eq!(
            input(json!({"type": "object", "properties": {"o": {"type": "object"}}})),
            "{ o?: { ... } }"
        );
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
