//! Typed errors for what the guest can ask of the catalog (docs/contract/catalog.md#s3-1, docs/contract/catalog.md#s3-3 to #s3-5). Each
//! spec message lives in exactly one place: the `Display` of its error variant (fixed messages
//! are also public constants, which the `Display` prints). The runtime rejects the guest's
//! promise with `error.to_string()`, verbatim.
//!
//! Every guest-facing error type of the crate ([`LookupError`], [`ContractError`],
//! [`NamespaceError`](crate::mcp::NamespaceError), [`ApiFileError`](crate::mcp::ApiFileError))
//! converts into its message with `String::from` (so `?` works in code that settles bridge
//! requests as `Result<_, String>`) and compares equal to a string that is exactly its message.

use crate::contract::ContractError;

/// `search query must be a string.` (docs/contract/catalog.md#s3-3).
pub const SEARCH_QUERY_NOT_STRING: &str = "search query must be a string.";
/// `limit must be a positive integer.` (docs/contract/catalog.md#s3-3).
pub const LIMIT_NOT_POSITIVE_INTEGER: &str = "limit must be a positive integer.";
/// `Tool Search catalog is unavailable for this run.` (docs/contract/catalog.md#s3-1), for runtimes without
/// a catalog.
pub const CATALOG_UNAVAILABLE: &str = "Tool Search catalog is unavailable for this run.";
/// The recovery sentence that ends every unknown-tool message (docs/contract/catalog.md#s3-4).
pub const UNKNOWN_TOOL_RECOVERY: &str = "Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.";

/// Which guest operation a lookup serves; selects the non-string-id message (docs/contract/catalog.md#s3-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupOp {
    /// `tools.describe(id)`.
    Describe,
    /// `tools.call(id, input)`.
    Call,
    /// `tools.callValue(id, input)` and convenience functions.
    CallValue,
}

impl LookupOp {
    /// `describe id must be a string.`, `call id must be a string.` or
    /// `callValue id must be a string.`.
    pub fn non_string_message(self) -> &'static str {
        match self {
            LookupOp::Describe => "describe id must be a string.",
            LookupOp::Call => "call id must be a string.",
            LookupOp::CallValue => "callValue id must be a string.",
        }
    }
}

/// Why `tools.search`, `tools.describe`, `tools.call`, `tools.callValue` or a convenience
/// function failed (docs/contract/catalog.md#s3-3, docs/contract/catalog.md#s3-4, docs/contract/catalog.md#s3-5). `Display` is the exact guest message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// `search query must be a string.`
    #[error("{}", SEARCH_QUERY_NOT_STRING)]
    SearchQueryNotString,
    /// `limit must be a positive integer.`
    #[error("{}", LIMIT_NOT_POSITIVE_INTEGER)]
    LimitNotPositiveInteger,
    /// `describe id must be a string.`, `call id must be a string.` or
    /// `callValue id must be a string.` (see [`LookupOp::non_string_message`]).
    #[error("{}", .0.non_string_message())]
    NonStringId(LookupOp),
    /// More than one guest-visible entry has this name:
    /// `Ambiguous tool name: <needle>; use an exact tool id.`
    #[error("Ambiguous tool name: {needle}; use an exact tool id.")]
    AmbiguousName {
        /// The trimmed needle.
        needle: String,
    },
    /// No guest-visible entry has this id or name:
    /// `Unknown tool id: <needle>. [Did you mean: <a>, <b>? ]Use tools.search to find a tool,
    /// tools.describe to inspect it, then tools.call with the exact id or name.`
    #[error("Unknown tool id: {needle}. {}{}", did_you_mean(.suggestions), UNKNOWN_TOOL_RECOVERY)]
    UnknownTool {
        /// The trimmed needle.
        needle: String,
        /// At most three suggestions, best first (see [`crate::Catalog::suggestions`]); the
        /// `Did you mean: …? ` part is printed only when there are some.
        suggestions: Vec<String>,
    },
    /// `Tool Search catalog is unavailable for this run.`
    #[error("{}", CATALOG_UNAVAILABLE)]
    CatalogUnavailable,
    /// The tool was found but its output contract refuses the call or the result.
    #[error(transparent)]
    Contract(#[from] ContractError),
}

fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!("Did you mean: {}? ", suggestions.join(", "))
    }
}

/// True when `error`'s `Display` is exactly `text`, compared piece by piece without building
/// the message.
pub(crate) fn message_eq(error: &dyn std::fmt::Display, text: &str) -> bool {
    struct Rest<'a>(Option<&'a str>);
    impl std::fmt::Write for Rest<'_> {
        fn write_str(&mut self, piece: &str) -> std::fmt::Result {
            self.0 = self.0.and_then(|rest| rest.strip_prefix(piece));
            Ok(())
        }
    }
    let mut rest = Rest(Some(text));
    std::fmt::write(&mut rest, format_args!("{error}")).is_ok() && rest.0 == Some("")
}

/// `From<E> for String` (the guest message) and equality with strings, for each guest-facing
/// error type (invoked here and next to the MCP errors, `mcp/route.rs` and `mcp/api.rs`).
macro_rules! guest_message {
    ($($ty:ty),* $(,)?) => {$(
        impl From<$ty> for String {
            fn from(error: $ty) -> String {
                error.to_string()
            }
        }
        impl PartialEq<str> for $ty {
            fn eq(&self, other: &str) -> bool {
                $crate::error::message_eq(self, other)
            }
        }
        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                $crate::error::message_eq(self, other)
            }
        }
        impl PartialEq<String> for $ty {
            fn eq(&self, other: &String) -> bool {
                $crate::error::message_eq(self, other)
            }
        }
    )*};
}

pub(crate) use guest_message;

guest_message!(LookupError, ContractError);
