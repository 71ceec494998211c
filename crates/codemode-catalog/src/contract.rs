//! Declared output contracts (docs/contract/catalog.md#output-contracts; docs/contract/catalog.md#s3-5).

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::Value;

/// The compiled state of one tool's `outputSchema`, built once by [`crate::Catalog::build`].
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
