//! `codemode-catalog`: the code-mode tool catalog, usable on its own (no runtime, no async).
//!
//! Tool specs go in ([`ToolSpec`]); [`Catalog::build`] keeps the catalogable ones, gives them
//! `<source>:<owner>:<name>` ids in catalog order, renders bounded TypeScript-style hints, and
//! compiles declared output contracts. The built catalog answers everything the guest runtime
//! needs: `ALL_TOOLS` ([`Catalog::all_tools`]), `tools.search` ([`Catalog::search`]),
//! `tools.describe` / `call` / `callValue` lookups ([`Catalog::describe`],
//! [`Catalog::resolve_call`]) with the exact error messages, convenience names
//! ([`Catalog::conveniences`]), the `exec` description's quick index ([`Catalog::quick_index`]),
//! output validation ([`Entry::validate_output`]) and replay safety
//! ([`Catalog::is_replay_safe`]). [`cli`] renders the same views for the `codemode catalog`
//! subcommand. [`mcp`] models the `MCP` namespace, `$api`, the `API` `.d.ts` files and the
//! namespace prompt (docs/contract/mcp.md#s7) over the catalog's MCP entries. [`schema_ts`] is the one
//! JSON-Schema-to-TypeScript walker behind both the hints and the `.d.ts` types.
//!
//! Everything the guest can trigger fails with a typed error whose `Display` is the exact spec
//! message ([`LookupError`], [`ContractError`], [`NamespaceError`], [`ApiFileError`]); each
//! converts into that message with `String::from`.
//!
//! Spec: docs/contract/catalog.md#s3-1, docs/contract/guest.md#runtime-api, docs/contract/catalog.md#output-contracts, docs/contract/catalog.md#names; docs/contract/surface.md#s2-5, docs/contract/catalog.md#s3, docs/contract/telemetry.md#s9. Lengths are UTF-16 code units and string
//! order is UTF-16 code-unit order throughout, as in the JavaScript reference.
//!
//! ```
//! use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
//! use serde_json::json;
//!
//! let catalog = Catalog::build(
//!     vec![ToolSpec::plugin("fake-code-mode", "fake_create_ticket", "Create a ticket.")
//!         .with_parameters(json!({"type": "object", "properties": {"value": {"type": "string"}}}))],
//!     &SearchLimits::default(),
//! )
//! .unwrap();
//! let hits = catalog.search(&json!("ticket"), None).unwrap();
//! assert_eq!(hits[0].id, "openclaw:fake-code-mode:fake_create_ticket");
//! assert_eq!(hits[0].input, "{ value?: string }");
//! assert!(catalog.lookup("missing").is_err());
//! ```

#![warn(missing_docs)]

mod catalog;
pub mod cli;
mod contract;
mod entry;
mod error;
pub mod hint;
pub mod index;
pub mod js;
pub mod mcp;
pub mod schema_ts;
pub mod search;
mod spec;

pub use catalog::{
    Catalog, CatalogError, CatalogGroup, Convenience, Entry, SearchLimits, SourceCounts,
    DEFAULT_READ_ONLY_CORE_TOOLS, MAX_SEARCH_LIMIT_CAP, RESERVED_CONVENIENCE_NAMES,
};
pub use contract::{ContractError, OutputContract};
pub use entry::{CompactEntry, DescribedEntry, Source};
pub use error::{
    LookupError, LookupOp, CATALOG_UNAVAILABLE, LIMIT_NOT_POSITIVE_INTEGER,
    SEARCH_QUERY_NOT_STRING, UNKNOWN_TOOL_RECOVERY,
};
pub use hint::{input_hint, output_hint};
pub use index::QUICK_INDEX_MAX_CHARS;
pub use mcp::{
    api_list, api_read, namespace_prompt, ApiFile, ApiFileError, McpMethod, McpNamespace,
    McpServer, McpToolDocs, NamespaceAction, NamespaceError, OfflineServer, OfflineState,
};
pub use spec::{CatalogMode, ControlKind, McpOperation, ToolOrigin, ToolSpec};
