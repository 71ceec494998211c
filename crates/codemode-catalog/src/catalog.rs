//! The run-scoped catalog: membership, ids, order, views, search, lookup, conveniences, quick
//! index, output contracts and replay safety (docs/contract/surface.md#s2-5, docs/contract/catalog.md#s3; docs/contract/catalog.md#s3-1, docs/contract/guest.md#runtime-api, docs/contract/catalog.md#names).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use codemode_bridge::RunContext;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::{certainly_compiles, ContractError, OutputContract};
use crate::entry::{CompactEntry, DescribedEntry, Source};
use crate::error::{LookupError, LookupOp};
use crate::hint::{input_hint, output_hint, UNKNOWN};
use crate::index::{quick_index_line, render_quick_index};
use crate::js::{cmp_utf16, is_identifier, js_trim};
use crate::mcp::offline::OfflineServer;
use crate::mcp::McpNamespace;
use crate::search::{SearchDoc, SearchIndex};
use crate::spec::{McpToolDocs, ToolOrigin, ToolSpec};

mod find;

/// Upper bound of `maxSearchLimit` (docs/contract/config.md#s1).
pub const MAX_SEARCH_LIMIT_CAP: u32 = 50;

/// Names of the `tools` helpers; a catalog tool with one of these names never gets a
/// convenience function (docs/contract/catalog.md#s3-4). The bridge's
/// [`TOOLS_MEMBER_NAMES`](codemode_bridge::TOOLS_MEMBER_NAMES), the list's one home.
pub const RESERVED_CONVENIENCE_NAMES: [&str; 4] = codemode_bridge::TOOLS_MEMBER_NAMES;

/// The minimal audited read-only core tools of docs/contract/catalog.md#s3-6 ("at least `read`, `grep`,
/// `find`"). Hosts pass their own list to [`Catalog::is_replay_safe`].
pub const DEFAULT_READ_ONLY_CORE_TOOLS: [&str; 3] = ["read", "grep", "find"];

/// The resolved search limits, shared with the config that resolves them
/// (`CodeModeConfig::search_limits`). [`Catalog::build`] rejects values outside `1..=50` and
/// `1..=max_search_limit`.
pub use codemode_bridge::SearchLimits;

/// Why a catalog could not be built. Each message names the offending tool(s) by input position
/// (0-based index into the specs given to [`Catalog::build`]) and origin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// Two catalogable tools map to the same id.
    #[error("duplicate catalog id {id:?}: tool #{first_index} ({first}) and tool #{second_index} ({second}) both map to it")]
    DuplicateId {
        /// The shared id.
        id: String,
        /// Input position of the first tool.
        first_index: usize,
        /// The first tool, described by origin and name.
        first: String,
        /// Input position of the second tool.
        second_index: usize,
        /// The second tool, described by origin and name.
        second: String,
    },
    /// A catalogable tool's name is empty or only whitespace.
    #[error("tool #{index} ({origin}) has an empty name")]
    EmptyName {
        /// Input position.
        index: usize,
        /// The tool's origin, described.
        origin: String,
    },
    /// A plugin tool's plugin id is empty or only whitespace.
    #[error("tool #{index} ({name:?}) has a blank plugin id")]
    BlankPluginId {
        /// Input position.
        index: usize,
        /// Tool name.
        name: String,
    },
    /// Search limits outside the config ranges.
    #[error("invalid search limits: maxSearchLimit must be 1-50 and searchDefaultLimit 1-maxSearchLimit (got maxSearchLimit {max_search_limit}, searchDefaultLimit {search_default_limit})")]
    InvalidSearchLimits {
        /// Given `maxSearchLimit`.
        max_search_limit: u32,
        /// Given `searchDefaultLimit`.
        search_default_limit: u32,
    },
}

/// Catalog order groups (docs/contract/decisions.md#d2): core, bundled plugin, external plugin, MCP, client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CatalogGroup {
    /// OpenClaw core tools.
    Core,
    /// Plugins shipped with the host.
    BundledPlugin,
    /// Installed third-party plugins.
    ExternalPlugin,
    /// MCP tools.
    Mcp,
    /// Client-provided tools.
    Client,
}

/// A `tools.<name>` convenience function: `tools.<name>(input)` is `tools.callValue(<id>, input)`
/// (docs/contract/catalog.md#s3-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Convenience {
    /// The property name on `tools` (the tool name).
    pub name: String,
    /// The exact id it calls.
    pub id: String,
}

/// Counts per source over the whole catalog, MCP included: telemetry `sources` (docs/contract/telemetry.md#s9). The type lives in `codemode-bridge`, the shared vocabulary; re-exported here.
pub use codemode_bridge::SourceCounts;

/// Lowercased text used by search and suggestions, computed once per entry.
#[derive(Debug)]
struct Lowered {
    name: String,
    id: String,
    label: String,
    description: String,
}

/// One cataloged tool.
#[derive(Debug)]
pub struct Entry {
    compact: CompactEntry,
    parameters: Option<Value>,
    output_schema: Option<Value>,
    origin: ToolOrigin,
    channel: bool,
    mcp_docs: Option<McpToolDocs>,
    spec_index: usize,
    group: CatalogGroup,
    /// Compiled from `output_schema` on first use ([`Entry::contract`]), or by [`Entry::new`]
    /// when the `output` hint depends on whether it compiles.
    contract: OnceLock<OutputContract>,
    lower: Lowered,
}

impl Entry {
    /// The exact id, `<source>:<owner>:<name>`.
    pub fn id(&self) -> &str {
        &self.compact.id
    }

    /// The registered tool name.
    pub fn name(&self) -> &str {
        &self.compact.name
    }

    /// `openclaw`, `mcp` or `client`.
    pub fn source(&self) -> Source {
        self.compact.source
    }

    /// The origin given in the spec.
    pub fn origin(&self) -> &ToolOrigin {
        &self.origin
    }

    /// The catalog order group.
    pub fn group(&self) -> CatalogGroup {
        self.group
    }

    /// Position of this tool in the specs given to [`Catalog::build`], to map an entry back to
    /// the host's executable tool.
    pub fn spec_index(&self) -> usize {
        self.spec_index
    }

    /// True for entries the guest may see and call (every source but MCP).
    pub fn is_guest_visible(&self) -> bool {
        self.compact.source != Source::Mcp
    }

    /// True for channel tools (never replay-safe).
    pub fn is_channel(&self) -> bool {
        self.channel
    }

    /// The compact entry (`ALL_TOOLS` element).
    pub fn compact(&self) -> &CompactEntry {
        &self.compact
    }

    /// The full input schema as given (`None` when the tool has none).
    pub fn parameters(&self) -> Option<&Value> {
        self.parameters.as_ref()
    }

    /// The trusted `outputSchema` (core and plugin tools only; MCP and client claims are
    /// dropped).
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// What an MCP server declared about the tool (untrusted documentation, see
    /// [`ToolSpec::mcp_docs`](crate::ToolSpec::mcp_docs)).
    pub fn mcp_docs(&self) -> Option<&McpToolDocs> {
        self.mcp_docs.as_ref()
    }

    /// The compiled output contract, compiled on the first call (a process that never calls
    /// the tool never compiles its schema; docs/contract/catalog.md#output-contracts: "compiled
    /// before the tool runs").
    pub fn contract(&self) -> &OutputContract {
        self.contract.get_or_init(|| match &self.output_schema {
            Some(schema) => OutputContract::compile(schema),
            None => OutputContract::Undeclared,
        })
    }

    /// What `tools.describe` returns: the compact entry plus `parameters` (`{}` when absent) and
    /// the trusted `outputSchema` when declared.
    pub fn described(&self) -> DescribedEntry {
        DescribedEntry {
            entry: self.compact.clone(),
            parameters: self
                .parameters
                .clone()
                .unwrap_or_else(|| Value::Object(Default::default())),
            output_schema: self.output_schema.clone(),
        }
    }

    /// `Ok` unless the declared `outputSchema` failed to compile, in which case the tool must
    /// not run: [`ContractError::InvalidOutputSchema`] (docs/contract/catalog.md#s3-5).
    pub fn check_callable(&self) -> Result<(), ContractError> {
        if self.contract().is_callable() {
            Ok(())
        } else {
            Err(ContractError::InvalidOutputSchema {
                id: self.id().to_string(),
            })
        }
    }

    /// Validates a result's final `details` against the declared contract (docs/contract/catalog.md#s3-5).
    ///
    /// Errors: [`ContractError::InvalidOutputSchema`] for an uncompilable schema;
    /// [`ContractError::OutputMismatch`] on a mismatch (the value is never echoed). Tools
    /// without a trusted contract always pass.
    pub fn validate_output(&self, details: &Value) -> Result<(), ContractError> {
        self.check_callable()?;
        if self.contract().accepts(details) {
            Ok(())
        } else {
            Err(ContractError::OutputMismatch {
                id: self.id().to_string(),
            })
        }
    }
}

/// The run-scoped tool catalog. Immutable once built; cheap to share (`Send + Sync`).
#[derive(Debug)]
pub struct Catalog {
    entries: Vec<Entry>,
    by_id: HashMap<String, usize>,
    guest_by_name: HashMap<String, Vec<usize>>,
    conveniences: Vec<Convenience>,
    quick_index: Option<String>,
    limits: SearchLimits,
    /// The MCP namespace, built on first use and shared by every run of this catalog.
    pub(crate) namespace: OnceLock<Arc<McpNamespace>>,
    /// The guest's run context, built on first use and shared by every run of this catalog
    /// (docs/benchmarks.md, "Catalog scale").
    run_context: OnceLock<RunContext>,
    /// The search index over the guest-visible entries and, per document, its entry's
    /// position; built on the first search or suggestion (docs/contract/decisions.md#d15).
    search_index: OnceLock<(SearchIndex, Vec<usize>)>,
    /// Configured MCP servers that are not connected ([`Catalog::with_offline_mcp_servers`]).
    offline_mcp: Vec<OfflineServer>,
}

/// Where a spec lands: source, id owner segment, `sourceName`, group.
struct Placement {
    source: Source,
    owner: String,
    group: CatalogGroup,
}

fn non_blank(value: Option<&str>) -> Option<&str> {
    value.map(js_trim).filter(|v| !v.is_empty())
}

fn describe_origin(origin: &ToolOrigin) -> String {
    match origin {
        ToolOrigin::Core => "core".to_string(),
        ToolOrigin::Plugin { plugin_id, .. } => format!("plugin {plugin_id:?}"),
        ToolOrigin::Mcp {
            server_name,
            safe_server_name,
            ..
        } => format!("MCP server {server_name:?} (safe name {safe_server_name:?})"),
        ToolOrigin::Client { owner: Some(owner) } => format!("client {owner:?}"),
        ToolOrigin::Client { owner: None } => "client".to_string(),
    }
}

fn place(spec: &ToolSpec, index: usize) -> Result<Placement, CatalogError> {
    Ok(match &spec.origin {
        ToolOrigin::Core => Placement {
            source: Source::Openclaw,
            owner: "core".into(),
            group: CatalogGroup::Core,
        },
        ToolOrigin::Plugin {
            plugin_id, bundled, ..
        } => {
            let Some(plugin_id) = non_blank(Some(plugin_id)) else {
                return Err(CatalogError::BlankPluginId {
                    index,
                    name: spec.name.clone(),
                });
            };
            if plugin_id == "bundle-mcp" {
                // An MCP tool without MCP metadata (docs/contract/catalog.md#s3-1).
                Placement {
                    source: Source::Mcp,
                    owner: plugin_id.into(),
                    group: CatalogGroup::Mcp,
                }
            } else {
                Placement {
                    source: Source::Openclaw,
                    owner: plugin_id.into(),
                    group: if *bundled {
                        CatalogGroup::BundledPlugin
                    } else {
                        CatalogGroup::ExternalPlugin
                    },
                }
            }
        }
        ToolOrigin::Mcp {
            safe_server_name,
            plugin_id,
            ..
        } => Placement {
            source: Source::Mcp,
            owner: non_blank(Some(safe_server_name))
                .or_else(|| non_blank(plugin_id.as_deref()))
                .unwrap_or("mcp")
                .into(),
            group: CatalogGroup::Mcp,
        },
        ToolOrigin::Client { owner } => Placement {
            source: Source::Client,
            owner: non_blank(owner.as_deref()).unwrap_or("client").into(),
            group: CatalogGroup::Client,
        },
    })
}

impl Catalog {
    /// Builds the catalog from the host's effective tools (docs/contract/catalog.md#s3-1, docs/contract/decisions.md#d2).
    ///
    /// Drops denied, `direct-only` and control-marked tools; assigns ids; orders core, bundled
    /// plugin, external plugin, MCP, client, each by id in UTF-16 code-unit order; renders every
    /// entry's hints; compiles each trusted `outputSchema` once; precomputes conveniences and the
    /// quick index. Linear in the input apart from the id sort.
    ///
    /// Errors: [`CatalogError::DuplicateId`] when two tools share an id,
    /// [`CatalogError::EmptyName`], [`CatalogError::BlankPluginId`],
    /// [`CatalogError::InvalidSearchLimits`].
    pub fn build(specs: Vec<ToolSpec>, limits: &SearchLimits) -> Result<Catalog, CatalogError> {
        if limits.max_search_limit < 1
            || limits.max_search_limit > MAX_SEARCH_LIMIT_CAP
            || limits.search_default_limit < 1
            || limits.search_default_limit > limits.max_search_limit
        {
            return Err(CatalogError::InvalidSearchLimits {
                max_search_limit: limits.max_search_limit,
                search_default_limit: limits.search_default_limit,
            });
        }

        let mut first_by_id: HashMap<String, (usize, String)> = HashMap::new();
        let mut entries = Vec::new();
        for (spec_index, spec) in specs.into_iter().enumerate() {
            if !spec.is_catalogable() {
                continue;
            }
            if js_trim(&spec.name).is_empty() {
                return Err(CatalogError::EmptyName {
                    index: spec_index,
                    origin: describe_origin(&spec.origin),
                });
            }
            let placement = place(&spec, spec_index)?;
            let id = format!(
                "{}:{}:{}",
                placement.source.as_str(),
                placement.owner,
                spec.name
            );
            let described = format!("{} tool {:?}", describe_origin(&spec.origin), spec.name);
            if let Some((first_index, first)) = first_by_id.get(&id) {
                return Err(CatalogError::DuplicateId {
                    id,
                    first_index: *first_index,
                    first: first.clone(),
                    second_index: spec_index,
                    second: described,
                });
            }
            first_by_id.insert(id.clone(), (spec_index, described));
            entries.push(Entry::new(spec, spec_index, id, placement));
        }
        entries.sort_by(|a, b| {
            a.group
                .cmp(&b.group)
                .then_with(|| cmp_utf16(a.id(), b.id()))
        });

        let mut by_id = HashMap::with_capacity(entries.len());
        let mut guest_by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (position, entry) in entries.iter().enumerate() {
            by_id.insert(entry.id().to_string(), position);
            if entry.is_guest_visible() {
                guest_by_name
                    .entry(entry.name().to_string())
                    .or_default()
                    .push(position);
            }
        }

        let conveniences = entries
            .iter()
            .filter(|e| {
                e.is_guest_visible()
                    && is_identifier(e.name())
                    && !RESERVED_CONVENIENCE_NAMES.contains(&e.name())
                    && guest_by_name.get(e.name()).map_or(0, Vec::len) == 1
            })
            .map(|e| Convenience {
                name: e.name().to_string(),
                id: e.id().to_string(),
            })
            .collect();

        let mut indexed: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.source() == Source::Openclaw)
            .collect();
        indexed.sort_by(|a, b| {
            let a_declared = a.compact.output.is_none();
            let b_declared = b.compact.output.is_none();
            a_declared
                .cmp(&b_declared)
                .then_with(|| cmp_utf16(a.id(), b.id()))
        });
        let lines: Vec<String> = indexed
            .iter()
            .map(|e| quick_index_line(e.id(), &e.compact.input, e.compact.output.as_deref()))
            .collect();
        let quick_index = render_quick_index(&lines);

        Ok(Catalog {
            entries,
            by_id,
            guest_by_name,
            conveniences,
            quick_index,
            limits: *limits,
            namespace: OnceLock::new(),
            run_context: OnceLock::new(),
            search_index: OnceLock::new(),
            offline_mcp: Vec::new(),
        })
    }

    /// This catalog with `servers`, configured MCP servers that are not connected (still
    /// connecting or failed): the guest's `MCP` exists, `MCP.<server>` of each throws
    /// `MCP server "<name>" is not connected: …`, and `API.list()` lists a file per server that
    /// says so (docs/mcp.md, "Servers that are not connected"). Their order is kept.
    pub fn with_offline_mcp_servers(mut self, servers: Vec<OfflineServer>) -> Catalog {
        self.offline_mcp = servers;
        // Built from the offline list: drop anything computed before it was set.
        self.namespace = OnceLock::new();
        self.run_context = OnceLock::new();
        self
    }

    /// The configured MCP servers that are not connected ([`Catalog::with_offline_mcp_servers`]).
    pub fn offline_mcp_servers(&self) -> &[OfflineServer] {
        &self.offline_mcp
    }

    /// The guest run context of this catalog: `init` builds it on the first call, every later
    /// call (every later exec of the catalog) gets the same one, a clone of one `Arc`.
    pub fn run_context(&self, init: impl FnOnce(&Catalog) -> RunContext) -> RunContext {
        self.run_context.get_or_init(|| init(self)).clone()
    }

    /// The search limits in force.
    pub fn limits(&self) -> &SearchLimits {
        &self.limits
    }

    /// Number of entries, MCP included (telemetry `catalogSize`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing was cataloged.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry in catalog order (core, bundled plugin, external plugin, MCP, client; by id).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Guest-visible entries (all but MCP) in catalog order: the source of `ALL_TOOLS`.
    pub fn guest_entries(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.entries.iter().filter(|e| e.is_guest_visible())
    }

    /// `ALL_TOOLS`: the guest-visible compact entries in catalog order.
    pub fn all_tools(&self) -> Vec<CompactEntry> {
        self.guest_entries().map(|e| e.compact.clone()).collect()
    }

    /// The entry with exactly this id, of any source (no trimming, no name matching).
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.by_id.get(id).map(|&i| &self.entries[i])
    }

    /// True when the catalog has an MCP entry (selects the API/MCP parts of the `exec`
    /// description, docs/contract/surface.md#s2-4).
    pub fn has_mcp(&self) -> bool {
        self.entries.iter().any(|e| e.source() == Source::Mcp)
    }

    /// Entries per source over the whole catalog (telemetry `sources`).
    pub fn source_counts(&self) -> SourceCounts {
        let mut counts = SourceCounts::default();
        for entry in &self.entries {
            match entry.source() {
                Source::Openclaw => counts.openclaw += 1,
                Source::Mcp => counts.mcp += 1,
                Source::Client => counts.client += 1,
            }
        }
        counts
    }

    /// The `tools.<name>` convenience functions to install, in catalog order: guest-visible
    /// entries whose name matches `^[A-Za-z_$][A-Za-z0-9_$]*$`, is carried by exactly one
    /// guest-visible entry, and is not `search`, `describe`, `call` or `callValue`.
    pub fn conveniences(&self) -> &[Convenience] {
        &self.conveniences
    }

    /// The quick index for the `exec` description (docs/contract/surface.md#s2-5), or `None` when the
    /// catalog has no core or plugin entry. At most 8000 UTF-16 units; identical for identical
    /// input; never contains a description.
    pub fn quick_index(&self) -> Option<&str> {
        self.quick_index.as_deref()
    }

    /// Whether a `call`/`callValue` of `id` is replay-safe (docs/contract/catalog.md#s3-6): `id` (trimmed)
    /// must be an exact catalog id (names never count) of an `openclaw` entry that is not a
    /// channel tool and is either a plugin tool marked replay-safe or a core tool whose name is
    /// in `read_only_core_tools` (the host's audited list, e.g.
    /// [`DEFAULT_READ_ONLY_CORE_TOOLS`]). MCP and client tools never are.
    pub fn is_replay_safe(&self, id: &str, read_only_core_tools: &[&str]) -> bool {
        let Some(entry) = self.entry(js_trim(id)) else {
            return false;
        };
        if entry.source() != Source::Openclaw || entry.channel {
            return false;
        }
        match &entry.origin {
            ToolOrigin::Core => read_only_core_tools.contains(&entry.name()),
            ToolOrigin::Plugin { replay_safe, .. } => *replay_safe,
            ToolOrigin::Mcp { .. } | ToolOrigin::Client { .. } => false,
        }
    }
}

impl Entry {
    fn new(spec: ToolSpec, spec_index: usize, id: String, placement: Placement) -> Entry {
        let trusted = placement.source == Source::Openclaw;
        let source_name = match &spec.origin {
            ToolOrigin::Plugin { plugin_id, .. } => js_trim(plugin_id).to_string(),
            _ => placement.owner.clone(),
        };
        let input = if trusted {
            input_hint(spec.parameters.as_ref())
        } else {
            UNKNOWN.to_string()
        };
        let output_schema = spec.output_schema.filter(|_| trusted);
        let contract = OnceLock::new();
        // A contract that cannot be enforced is never advertised: a complete hint needs to know
        // that the schema compiles, which only a schema outside `certainly_compiles` is compiled
        // here to find out; every other schema is compiled on the tool's first call.
        let output = output_schema.as_ref().and_then(|schema| {
            let hint = output_hint(schema)?;
            let compiles = certainly_compiles(schema)
                || contract
                    .get_or_init(|| OutputContract::compile(schema))
                    .is_callable();
            compiles.then_some(hint)
        });
        let name = spec.name.to_lowercase();
        let id_lower = id.to_lowercase();
        let label = spec.label.as_deref().unwrap_or("").to_lowercase();
        let description = spec.description.to_lowercase();
        let lower = Lowered {
            name,
            id: id_lower,
            label,
            description,
        };
        Entry {
            compact: CompactEntry {
                id,
                name: spec.name,
                label: spec.label,
                description: spec.description,
                source: placement.source,
                source_name: Some(source_name),
                input,
                output,
            },
            parameters: spec.parameters,
            output_schema,
            origin: spec.origin,
            channel: spec.channel,
            mcp_docs: spec.mcp_docs,
            spec_index,
            group: placement.group,
            contract,
            lower,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Catalog, SearchLimits};
    use crate::spec::ToolSpec;

    /// Only a schema outside `certainly_compiles` whose hint is complete is compiled while the
    /// catalog is built; the others wait for their tool's first call. The hints are the same
    /// as if every schema had been compiled: a schema that does not compile is never advertised.
    #[test]
    fn schemas_are_compiled_at_build_only_when_the_hint_needs_it() {
        let closed = |extra: serde_json::Value| {
            let mut schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
                "required": ["n"], "additionalProperties": false});
            schema["properties"]["n"]
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            schema
        };
        let catalog = Catalog::build(
            vec![
                ToolSpec::core("vouched", "v").with_output_schema(closed(json!({}))),
                ToolSpec::core("checked", "c").with_output_schema(closed(json!({"minimum": 1}))),
                ToolSpec::core("broken", "b").with_output_schema(closed(json!({"minimum": "one"}))),
                // No complete hint (an open object): nothing to decide at build.
                ToolSpec::core("open", "o").with_output_schema(
                    json!({"type": "object", "properties": {"n": {"minimum": "one"}}}),
                ),
            ],
            &SearchLimits::default(),
        )
        .unwrap();
        let entry = |name: &str| catalog.entry(&format!("openclaw:core:{name}")).unwrap();
        let compiled = |name: &str| entry(name).contract.get().is_some();
        assert_eq!(
            ["vouched", "checked", "broken", "open"].map(compiled),
            [false, true, true, false]
        );
        assert_eq!(
            ["vouched", "checked", "broken", "open"].map(|n| entry(n).compact().output.clone()),
            [
                Some("{ n: number }".to_string()),
                Some("{ n: number }".to_string()),
                None,
                None
            ]
        );
        // The first call compiles.
        assert_eq!(entry("vouched").validate_output(&json!({"n": 2})), Ok(()));
        assert!(entry("open").check_callable().is_err());
        assert!(compiled("vouched") && compiled("open"));
    }
}
