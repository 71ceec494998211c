//! Declared output contracts (docs/contract/catalog.md#output-contracts; docs/contract/catalog.md#s3-5).

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::Value;

/// The compiled state of one tool's `outputSchema`, built once per catalog entry, on the tool's
/// first call ([`crate::Entry::contract`]).
pub enum OutputContract {
    /// The tool declares no trusted `outputSchema` (none at all, or an MCP/client claim, which
    /// is never enforced): any `details` pass.
    Undeclared,
    /// A schema that compiled; `details` must validate against it.
    Valid(Box<jsonschema::Validator>),
    /// A schema that failed to compile: the tool cannot be called.
    Invalid,
}

impl fmt::Debug for OutputContract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputContract::Undeclared => f.write_str("Undeclared"),
            OutputContract::Valid(_) => f.write_str("Valid(..)"),
            OutputContract::Invalid => f.write_str("Invalid"),
        }
    }
}

impl OutputContract {
    /// Compiles `schema` (JSON Schema, draft from `$schema`, 2020-12 by default; the schema is
    /// itself checked against its meta-schema). Remote `$ref`s cannot be resolved (no network or
    /// file access) and make the schema invalid. Never panics.
    pub fn compile(schema: &Value) -> OutputContract {
        match catch_unwind(AssertUnwindSafe(|| jsonschema::validator_for(schema).ok())) {
            Ok(Some(validator)) => OutputContract::Valid(Box::new(validator)),
            Ok(None) | Err(_) => OutputContract::Invalid,
        }
    }

    /// True unless the schema failed to compile.
    pub fn is_callable(&self) -> bool {
        !matches!(self, OutputContract::Invalid)
    }

    /// True when `details` satisfies the contract (always for `Undeclared`, never for
    /// `Invalid`). Never panics.
    pub fn accepts(&self, details: &Value) -> bool {
        match self {
            OutputContract::Undeclared => true,
            OutputContract::Invalid => false,
            OutputContract::Valid(validator) => {
                catch_unwind(AssertUnwindSafe(|| validator.is_valid(details))).unwrap_or(false)
            }
        }
    }
}

/// Deepest nesting [`certainly_compiles`] walks; deeper schemas are compiled to find out.
const CERTAIN_DEPTH: usize = 16;

/// The JSON Schema type names (draft 2020-12 `simpleTypes`).
const SIMPLE_TYPES: [&str; 7] = [
    "array", "boolean", "integer", "null", "number", "object", "string",
];

/// True when `schema` is built only from keywords whose every value of the shape checked here
/// passes the draft 2020-12 meta-schema and compiles, so [`OutputContract::compile`] would give
/// [`OutputContract::Valid`]: a boolean schema, or an object whose keys are all among `type` (one
/// of [`SIMPLE_TYPES`], or a non-empty list of distinct ones), `properties` (an object of such
/// schemas), `required` (distinct strings), `additionalProperties` and `items` (such schemas),
/// `enum` (a list), `const`, `title` and `description` (strings), nested at most
/// [`CERTAIN_DEPTH`] deep. False says nothing (compile to know); `$schema`, `$ref`, `pattern`,
/// `format` and every other keyword are outside the check. Linear in the schema's size.
pub(crate) fn certainly_compiles(schema: &Value) -> bool {
    certainly_compiles_at(schema, 0)
}

fn certainly_compiles_at(schema: &Value, depth: usize) -> bool {
    let object = match schema {
        Value::Bool(_) => return true,
        Value::Object(object) if depth < CERTAIN_DEPTH => object,
        _ => return false,
    };
    let sub = |v: &Value| certainly_compiles_at(v, depth + 1);
    let distinct_strings = |v: &Value, allowed: &dyn Fn(&str) -> bool| match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .all(|(i, item)| item.as_str().is_some_and(allowed) && !items[..i].contains(item)),
        _ => false,
    };
    let simple_type = |t: &str| SIMPLE_TYPES.contains(&t);
    object.iter().all(|(key, value)| match key.as_str() {
        "type" => match value {
            Value::String(t) => simple_type(t),
            Value::Array(types) => !types.is_empty() && distinct_strings(value, &simple_type),
            _ => false,
        },
        "properties" => value.as_object().is_some_and(|p| p.values().all(sub)),
        "required" => distinct_strings(value, &|_| true),
        "additionalProperties" | "items" => sub(value),
        "enum" => value.is_array(),
        "const" => true,
        "title" | "description" => value.is_string(),
        _ => false,
    })
}

/// Why a tool's declared output contract refuses a call or its result (docs/contract/catalog.md#s3-5).
/// `Display` is the exact guest message; the offending value is never part of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    /// The declared `outputSchema` did not compile, so the tool must not run:
    /// `Tool "<id>" has an invalid outputSchema.`
    #[error("Tool \"{id}\" has an invalid outputSchema.")]
    InvalidOutputSchema {
        /// The exact catalog id.
        id: String,
    },
    /// The final `details` do not validate:
    /// `Tool "<id>" returned details that do not match its declared outputSchema.`
    #[error("Tool \"{id}\" returned details that do not match its declared outputSchema.")]
    OutputMismatch {
        /// The exact catalog id.
        id: String,
    },
    /// A host policy blocked the call before execution:
    /// `Tool "<id>" was blocked before execution: <reason>`.
    #[error("Tool \"{id}\" was blocked before execution: {reason}")]
    BlockedBeforeExecution {
        /// The exact catalog id.
        id: String,
        /// The policy's reason, verbatim.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::{certainly_compiles, OutputContract};

    /// Schemas the check vouches for, each also compiled to prove the claim.
    fn certain() -> Vec<Value> {
        vec![
            json!(true),
            json!(false),
            json!({}),
            json!({"type": "string", "title": "t", "description": "d"}),
            json!({"type": ["string", "null"]}),
            json!({"enum": []}),
            json!({"enum": [1, "a", null, {"x": [1]}]}),
            json!({"const": {"any": ["thing"]}}),
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": true}),
            json!({"type": "array", "items": false}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {
                "type": "object", "properties": {"b": {"enum": ["x", "y"]}},
                "required": ["b"], "additionalProperties": false
            }}}, "required": ["a", "c"], "additionalProperties": {"type": "integer"}}),
        ]
    }

    /// Schemas it does not vouch for: invalid ones (which must not compile either) and valid
    /// ones outside its keyword set (compiled at catalog build instead).
    fn uncertain() -> Vec<(Value, bool)> {
        vec![
            (json!({"type": "strnig"}), false),
            (json!({"type": []}), false),
            (json!({"type": ["string", "string"]}), false),
            (json!({"type": 5}), false),
            (json!({"required": ["a", "a"]}), false),
            (json!({"required": [1]}), false),
            (json!({"properties": {"a": 5}}), false),
            (json!({"properties": []}), false),
            (json!({"items": [{"type": "string"}]}), false),
            (json!({"additionalProperties": "no"}), false),
            (json!({"enum": "a"}), false),
            (json!({"title": 1}), false),
            (json!({"pattern": "("}), false),
            (json!({"$ref": "https://example.com/s.json"}), false),
            (json!(5), false),
            (json!({"pattern": "^a$"}), true),
            (
                json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
                true,
            ),
            (json!({"minLength": 1}), true),
        ]
    }

    #[test]
    fn the_schemas_it_vouches_for_compile() {
        for schema in certain() {
            assert!(certainly_compiles(&schema), "{schema}");
            assert!(
                matches!(OutputContract::compile(&schema), OutputContract::Valid(_)),
                "{schema}"
            );
        }
        for (schema, compiles) in uncertain() {
            assert!(!certainly_compiles(&schema), "{schema}");
            assert_eq!(
                OutputContract::compile(&schema).is_callable(),
                compiles,
                "{schema}"
            );
        }
    }

    #[test]
    fn nesting_past_the_bound_is_compiled_to_find_out() {
        let mut schema = json!({"type": "string"});
        for _ in 0..15 {
            schema = json!({"items": schema});
        }
        assert!(certainly_compiles(&schema));
        schema = json!({"items": schema});
        assert!(!certainly_compiles(&schema));
        assert!(OutputContract::compile(&schema).is_callable());
    }
}
