//! The hub: every configured MCP server, its catalog entries (built from each listing in
//! `hub/specs.rs`) and the executor that runs them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use codemode_bridge::{ToolCall, ToolError, ToolExecutor, ToolFuture};
use codemode_catalog::{McpOperation, OfflineServer, OfflineState, ToolSpec};
use codemode_config::ToolPolicy;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::client::{ClientOptions, ServerClient, ServerListing};
use crate::config::{safe_server_name, McpServersConfig};
use crate::error::ClientError;

mod specs;

use specs::server_specs;

/// What one configured server looks like right now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// The configured name (the entries' `serverName`).
    pub name: String,
    /// The name used in catalog ids (`mcp:<safeName>:…`); see [`safe_server_name`].
    pub safe_name: String,
    /// `true` once a listing succeeded.
    pub connected: bool,
    /// `true` while the first connection attempt is still under way (after
    /// [`McpHub::start`]); `error` is then `None`.
    pub connecting: bool,
    /// Tools cataloged from the server.
    pub tools: usize,
    /// Why the last connect or listing failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Listing warnings (page cap, repeated cursor, skipped tools).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Connections made so far (more than 1 after reconnects).
    pub connects: u64,
}

/// Where a catalog id goes: server index, operation, raw MCP tool name.
#[derive(Debug, Clone)]
struct Route {
    server: usize,
    operation: McpOperation,
    tool: String,
}

#[derive(Default)]
struct RefreshState {
    running: bool,
    again: bool,
    /// When the last listing started.
    started: Option<Instant>,
}

struct ServerEntry {
    client: Arc<ServerClient>,
    /// Set once the first connect-and-list attempt has finished (either way).
    attempted: std::sync::atomic::AtomicBool,
    safe_name: String,
    /// Budget of one whole listing, connect included: the server's `connectTimeoutMs`, else
    /// [`ClientOptions::connect_timeout`].
    listing_timeout: Duration,
    /// The last good listing, or why there never was one (shared: statuses and refreshes read it).
    listing: RwLock<Result<ServerListing, Arc<ClientError>>>,
    refresh: Mutex<RefreshState>,
}

struct HubInner {
    servers: Vec<ServerEntry>,
    retry_failed_after: Duration,
    /// The longest of the servers' listing budgets ([`ServerEntry::listing_timeout`]).
    listing_timeout: Duration,
    routes: RwLock<HashMap<String, Route>>,
    generation: tokio::sync::watch::Sender<u64>,
    /// How many servers' first attempt has finished.
    settled: tokio::sync::watch::Sender<usize>,
    /// When [`McpHub::start`] ran.
    started: Instant,
}

/// A configured server that a run cannot reach, and why (see [`McpHub::unavailable`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unavailable {
    /// The configured name.
    pub server: String,
    /// One line: `still connecting (<n> ms so far)`, or the last connect or listing error.
    pub reason: String,
}

/// One downstream tool as [`McpHub::direct_tools`] gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectTool {
    /// The registered name, `<server>__<tool>`: what the client calls.
    pub name: String,
    /// The catalog id, `mcp:<safeName>:<name>`: what policy, hooks and the executor see.
    pub id: String,
    /// The tool's own name on its server (`<tool>`): what `serve --bare-names` exposes.
    pub server_tool: String,
    /// The configured name of its server ([`McpHub::client`] finds the server by it).
    pub server: String,
    /// The server's tool JSON (`description`, `inputSchema`, `outputSchema`, `annotations`,
    /// `execution`, …, as the server sent them) with `name` set to [`DirectTool::name`].
    pub tool: Map<String, Value>,
}

/// One connected server's prompts and resources as `codemode serve` aggregates them with code
/// mode off ([`McpHub::direct_servers`]; docs/mcp.md, "Code mode off").
#[derive(Clone)]
pub struct DirectServer {
    /// The name used in catalog ids and in the served prompt names (`<safeName>__<prompt>`).
    pub safe_name: String,
    /// The server's client, for its lists.
    pub client: Arc<ServerClient>,
    /// The catalog entry `<safeName>__prompts_get` (registered name, catalog id) when the server
    /// has the prompts capability: how a `prompts/get` goes through the host pipeline.
    pub prompts_get: Option<(String, String)>,
    /// The catalog entry `<safeName>__resources_read` (registered name, catalog id) when the
    /// server has the resources capability.
    pub resources_read: Option<(String, String)>,
}

/// All configured MCP servers behind one catalog: [`McpHub::specs`] gives their catalog entries
/// (`mcp:<server>:<server>__<tool>` with MCP metadata, so they enter the `MCP` namespace,
/// docs/contract/catalog.md#s3-1, docs/contract/mcp.md#s7-1) and [`McpHub::executor`] runs them.
///
/// `notifications/tools/list_changed` re-lists that server in the background and bumps
/// [`McpHub::generation`]; hosts read [`McpHub::specs`] again for the next `exec`. A
/// notification that arrives while the server is being listed causes one more listing only if
/// the listing changed, at most [`MAX_RELISTS`] times in a row, and one server is listed at most
/// once per [`MIN_RELIST_INTERVAL`]: a server that notifies on every `tools/list`, or floods
/// notifications while its listing keeps changing, costs at most one listing a second and never
/// holds up [`McpHub::connect`] past the connect timeout. (rmcp runs notification handlers as
/// tasks, so a notification sent during a listing may arrive after its refresh ended and start
/// another; the rate bound holds regardless.)
#[derive(Clone)]
pub struct McpHub {
    inner: Arc<HubInner>,
}

impl McpHub {
    /// Connects to every server in `config` concurrently and lists it, in at most
    /// [`ClientOptions::connect_timeout`] or the longest per-server `connectTimeoutMs`
    /// ([`McpHub::connect_budget`]) for connect and listing together. Never fails as a whole: a server that cannot be reached is reported by
    /// [`McpHub::status`] and contributes no entries. Must run inside a tokio runtime.
    pub async fn connect(config: &McpServersConfig, options: ClientOptions) -> McpHub {
        let hub = McpHub::start(config, options);
        let budget = hub.connect_budget();
        hub.settle(budget).await;
        hub
    }

    /// How long the first connect-and-list of every server can take: the longest listing budget
    /// (per-server `connectTimeoutMs`, else [`ClientOptions::connect_timeout`]) plus
    /// [`MIN_RELIST_INTERVAL`].
    pub fn connect_budget(&self) -> Duration {
        self.inner.listing_timeout + MIN_RELIST_INTERVAL
    }

    /// Starts connecting to every server in `config` in the background and returns at once
    /// (`codemode serve` answers `initialize` before any server is up). Until a server's first
    /// attempt ends, [`McpHub::status`] says `connecting` and it contributes no entries;
    /// [`McpHub::settle`] waits for the attempts. Must run inside a tokio runtime (it spawns
    /// one task per server).
    pub fn start(config: &McpServersConfig, options: ClientOptions) -> McpHub {
        McpHub::start_with(config, options, None)
    }

    /// [`McpHub::start`] for `codemode serve`: every server's elicitation and sampling requests
    /// go through `forward` to the upstream MCP client (`forward.rs`).
    pub fn start_forwarding(
        config: &McpServersConfig,
        options: ClientOptions,
        forward: Arc<crate::forward::Forwarder>,
    ) -> McpHub {
        McpHub::start_with(config, options, Some(forward))
    }

    fn start_with(
        config: &McpServersConfig,
        options: ClientOptions,
        forward: Option<Arc<crate::forward::Forwarder>>,
    ) -> McpHub {
        // Two configured names can make the same safe name (`a.b`, `a_b`): the later one gets
        // `_2`, `_3`, … so catalog ids stay unique.
        let mut used = std::collections::HashSet::new();
        let safe_names: Vec<String> = config
            .servers
            .keys()
            .map(|name| {
                let base = safe_server_name(name);
                let mut candidate = base.clone();
                let mut n = 2;
                while !used.insert(candidate.to_ascii_lowercase()) {
                    candidate = format!("{base}_{n}");
                    n += 1;
                }
                candidate
            })
            .collect();
        let inner = Arc::new_cyclic(|weak: &Weak<HubInner>| {
            let servers = config
                .servers
                .iter()
                .enumerate()
                .map(|(index, (name, server))| {
                    let weak = weak.clone();
                    let content_weak = weak.clone();
                    let on_changed: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
                        if let Some(inner) = weak.upgrade() {
                            // Coalesce into a running refresh here rather than in a new task,
                            // so a notification sent during a listing is seen by that refresh.
                            if mark_again_if_running(&inner.servers[index]) {
                                return;
                            }
                            tokio::spawn(refresh(inner, index));
                        }
                    });
                    let mut server_options = options.clone();
                    if let Some(timeout) = config.connect_timeouts.get(name) {
                        server_options.connect_timeout = *timeout;
                    }
                    let listing_timeout = server_options.connect_timeout;
                    // A prompt or resource list that changed changes nothing the hub keeps
                    // (`serve` lists them live), but it is announced like a catalog change, so
                    // `serve` with code mode off tells its clients (docs/mcp.md, "Code mode off").
                    let on_content_changed: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
                        if let Some(inner) = content_weak.upgrade() {
                            inner.generation.send_modify(|g| *g += 1);
                        }
                    });
                    let client =
                        ServerClient::new(name, server.clone(), server_options, on_changed)
                            .with_on_content_changed(on_content_changed);
                    let client = match &forward {
                        Some(forward) => client.with_forwarder(forward.clone()),
                        None => client,
                    };
                    ServerEntry {
                        client: Arc::new(client),
                        safe_name: safe_names[index].clone(),
                        listing_timeout,
                        attempted: std::sync::atomic::AtomicBool::new(false),
                        listing: RwLock::new(Err(Arc::new(ClientError::NotListedYet {
                            server: name.clone(),
                        }))),
                        refresh: Mutex::new(RefreshState::default()),
                    }
                })
                .collect();
            HubInner {
                servers,
                retry_failed_after: options.retry_failed_after,
                listing_timeout: config
                    .servers
                    .keys()
                    .filter_map(|name| config.connect_timeouts.get(name))
                    .copied()
                    .fold(options.connect_timeout, Duration::max),
                routes: RwLock::new(HashMap::new()),
                generation: tokio::sync::watch::channel(0).0,
                settled: tokio::sync::watch::channel(0).0,
                started: Instant::now(),
            }
        });
        // Each server's first listing is bounded by the connect timeout; listings that
        // notifications ask for meanwhile go on in the background.
        for i in 0..inner.servers.len() {
            tokio::spawn(refresh_then(inner.clone(), i, true));
        }
        McpHub { inner }
    }

    /// Waits until every server's first connection attempt has ended (connected or failed), at
    /// most `within`; `true` when none is still connecting.
    pub async fn settle(&self, within: Duration) -> bool {
        let all = self.inner.servers.len();
        let mut rx = self.inner.settled.subscribe();
        let _ = tokio::time::timeout(within, rx.wait_for(|n| *n >= all)).await;
        self.connecting() == 0
    }

    /// How many servers are still on their first connection attempt.
    pub fn connecting(&self) -> usize {
        self.inner.servers.len() - *self.inner.settled.borrow()
    }

    /// The servers a run started now cannot reach (no successful listing yet), in name order,
    /// each with a one-line reason: `still connecting (<n> ms so far)` or its last error.
    pub fn unavailable(&self) -> Vec<Unavailable> {
        self.offline()
            .into_iter()
            .map(|server| Unavailable {
                reason: match server.state {
                    OfflineState::Failed { reason } => reason,
                    OfflineState::Connecting { elapsed } => {
                        format!("still connecting ({} ms so far)", elapsed.as_millis())
                    }
                },
                server: server.server_name,
            })
            .collect()
    }

    /// The configured servers with no successful listing yet, in name order, as the catalog shows
    /// them to a run ([`codemode_catalog::Catalog::with_offline_mcp_servers`]): still
    /// connecting (for how long since [`McpHub::start`]) or failed, with the last connect or
    /// listing error (docs/mcp.md, "Servers that are not connected").
    pub fn offline(&self) -> Vec<OfflineServer> {
        let elapsed = self.inner.started.elapsed();
        self.inner
            .servers
            .iter()
            .filter_map(|server| {
                let listing = server.listing.read().unwrap_or_else(|e| e.into_inner());
                let error = listing.as_ref().err()?;
                let state = if server.attempted.load(std::sync::atomic::Ordering::Acquire) {
                    OfflineState::Failed {
                        reason: error.to_string(),
                    }
                } else {
                    OfflineState::Connecting { elapsed }
                };
                Some(OfflineServer {
                    server_name: server.client.name().to_string(),
                    safe_server_name: server.safe_name.clone(),
                    state,
                })
            })
            .collect()
    }

    /// The catalog entries of every listed server, servers in name order, each server's tools
    /// in listing order followed by `resources_list`/`resources_read` (when the server has the
    /// resources capability) and `prompts_list`/`prompts_get` (prompts capability). MCP
    /// metadata is untrusted: entries never carry an output schema.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.specs_where(|_, _| true)
    }

    /// [`McpHub::specs`] without the entries `policy` denies (docs/contract/host.md#h1): an entry
    /// is kept when [`ToolPolicy::allows`] it by its registered name (`<server>__<tool>`,
    /// `<server>__resources_read`, …) and catalog id (`mcp:<safeName>:<name>`). Denied entries
    /// are then absent from the catalog, so from `MCP.<server>` and from
    /// `API.read("mcp/<server>.d.ts")`; the executor still routes them, and the host's
    /// call-time policy check rejects them.
    pub fn specs_allowed(&self, policy: &ToolPolicy) -> Vec<ToolSpec> {
        self.specs_where(|name, id| policy.allows(name, id))
    }

    /// The entries of [`McpHub::specs`] for which `keep(name, catalog id)` is true.
    pub fn specs_where(&self, keep: impl Fn(&str, &str) -> bool) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        for server in &self.inner.servers {
            let listing = server.listing.read().unwrap_or_else(|e| e.into_inner());
            let Ok(listing) = &*listing else { continue };
            specs.extend(
                server_specs(server.client.name(), &server.safe_name, listing)
                    .into_iter()
                    .map(|(spec, _, _)| spec)
                    .filter(|spec| {
                        keep(
                            &spec.name,
                            &format!("mcp:{}:{}", server.safe_name, spec.name),
                        )
                    }),
            );
        }
        specs
    }

    /// The servers' tools as `codemode serve` exposes them with code mode off (docs/mcp.md,
    /// "Code mode off"): every `tools` entry of [`McpHub::specs_where`] (not the resource and
    /// prompt operations) for which `keep(name, catalog id)` is true, as the server's own tool
    /// JSON with `name` replaced by the registered name (`<server>__<tool>`, collisions resolved
    /// as the catalog resolves them: first wins), with its catalog id.
    pub fn direct_tools(&self, keep: impl Fn(&str, &str) -> bool) -> Vec<DirectTool> {
        let mut tools = Vec::new();
        for server in &self.inner.servers {
            let listing = server.listing.read().unwrap_or_else(|e| e.into_inner());
            let Ok(listing) = &*listing else { continue };
            for (spec, operation, original) in
                server_specs(server.client.name(), &server.safe_name, listing)
            {
                let id = format!("mcp:{}:{}", server.safe_name, spec.name);
                if operation != McpOperation::Tool || !keep(&spec.name, &id) {
                    continue;
                }
                let found = listing
                    .tools
                    .iter()
                    .find(|t| t.get("name").and_then(Value::as_str) == Some(original.as_str()));
                let Some(Value::Object(mut tool)) = found.cloned() else {
                    continue;
                };
                tool.insert("name".into(), Value::String(spec.name.clone()));
                tools.push(DirectTool {
                    name: spec.name,
                    id,
                    server_tool: original,
                    server: server.client.name().to_string(),
                    tool,
                });
            }
        }
        tools
    }

    /// The listed servers in name order with their `prompts_get` and `resources_read` catalog
    /// entries, each kept only when `keep(name, catalog id)` is true (the host's policy): what
    /// `serve` with code mode off aggregates into its own `prompts/list` and `resources/list`.
    pub fn direct_servers(&self, keep: impl Fn(&str, &str) -> bool) -> Vec<DirectServer> {
        let mut servers = Vec::new();
        for server in &self.inner.servers {
            let listing = server.listing.read().unwrap_or_else(|e| e.into_inner());
            let Ok(listing) = &*listing else { continue };
            let entry = |wanted: McpOperation| {
                server_specs(server.client.name(), &server.safe_name, listing)
                    .into_iter()
                    .find(|(_, operation, _)| *operation == wanted)
                    .map(|(spec, _, _)| {
                        let id = format!("mcp:{}:{}", server.safe_name, spec.name);
                        (spec.name, id)
                    })
                    .filter(|(name, id)| keep(name, id))
            };
            servers.push(DirectServer {
                safe_name: server.safe_name.clone(),
                client: server.client.clone(),
                prompts_get: entry(McpOperation::PromptsGet),
                resources_read: entry(McpOperation::ResourcesRead),
            });
        }
        servers
    }

    /// Starts a new connection attempt, in the background, for every server whose last attempt
    /// failed at least [`ClientOptions::retry_failed_after`] ago (a server that was down at
    /// startup, or an `npx` download that outlasted the connect timeout). Cheap when nothing
    /// failed; hosts call it before each `exec`, and a success bumps [`McpHub::generation`] so
    /// a later `exec` sees the server. Must run inside a tokio runtime to do anything.
    pub fn retry_failed(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        for (index, server) in self.inner.servers.iter().enumerate() {
            // A server still on its first attempt is not due: that attempt is the retry.
            let failed = server.attempted.load(std::sync::atomic::Ordering::Acquire)
                && server.listing.read().map(|l| l.is_err()).unwrap_or(false);
            let due = {
                let state = server.refresh.lock().unwrap_or_else(|e| e.into_inner());
                !state.running
                    && state
                        .started
                        .is_none_or(|t| t.elapsed() >= self.inner.retry_failed_after)
            };
            if failed && due {
                runtime.spawn(refresh(self.inner.clone(), index));
            }
        }
    }

    /// The state of every configured server, in name order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.inner
            .servers
            .iter()
            .map(|server| {
                let listing = server.listing.read().unwrap_or_else(|e| e.into_inner());
                let attempted = server.attempted.load(std::sync::atomic::Ordering::Acquire);
                ServerStatus {
                    name: server.client.name().to_string(),
                    safe_name: server.safe_name.clone(),
                    connected: listing.is_ok(),
                    connecting: !attempted,
                    tools: listing.as_ref().map(|l| l.tools.len()).unwrap_or(0),
                    error: match &*listing {
                        Err(e) if attempted => Some(e.to_string()),
                        _ => None,
                    },
                    warnings: listing
                        .as_ref()
                        .map(|l| l.warnings.clone())
                        .unwrap_or_default(),
                    connects: server.client.connects(),
                }
            })
            .collect()
    }

    /// Bumped every time a listing changes a server's entries (starts at the number of servers
    /// whose first listing succeeded).
    pub fn generation(&self) -> u64 {
        *self.inner.generation.borrow()
    }

    /// A receiver that sees every later [`McpHub::generation`] bump (a server connected late,
    /// re-listed, or its entries changed): `codemode serve` tells its MCP clients
    /// `notifications/tools/list_changed` on each, since the `exec` description follows the
    /// catalog.
    pub fn subscribe_generation(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.generation.subscribe()
    }

    /// Waits until [`McpHub::generation`] exceeds `seen`, at most `timeout`; returns the
    /// generation then.
    pub async fn changed_since(&self, seen: u64, timeout: Duration) -> u64 {
        let mut rx = self.inner.generation.subscribe();
        let _ = tokio::time::timeout(timeout, rx.wait_for(|g| *g > seen)).await;
        self.generation()
    }

    /// The client of the server with configured name `name`.
    pub fn client(&self, name: &str) -> Option<Arc<ServerClient>> {
        self.inner
            .servers
            .iter()
            .find(|s| s.client.name() == name)
            .map(|s| s.client.clone())
    }

    /// An executor for the hub's catalog ids; other ids go to `fallback` (or fail with
    /// `no tool executor for <id>` without one).
    pub fn executor(&self, fallback: Option<Arc<dyn ToolExecutor>>) -> McpExecutor {
        McpExecutor {
            inner: self.inner.clone(),
            fallback,
        }
    }

    /// Closes every connection (a child gets its stdin closed, up to 3 s to exit, then SIGKILL).
    pub async fn shutdown(&self) {
        let all = self.inner.servers.iter().map(|s| s.client.shutdown());
        futures::future::join_all(all).await;
    }
}

/// Asks a running refresh of `server` for one more listing; `false` when none is running.
fn mark_again_if_running(server: &ServerEntry) -> bool {
    let mut state = server.refresh.lock().unwrap_or_else(|e| e.into_inner());
    if state.running {
        state.again = true;
    }
    state.running
}

/// Most listings one refresh of a server makes after its first, for notifications that arrived
/// meanwhile.
pub const MAX_RELISTS: usize = 3;

/// Least time between the starts of two listings of one server (notifications in between are
/// coalesced into the next listing).
pub const MIN_RELIST_INTERVAL: Duration = Duration::from_secs(1);

/// Lists server `index` again, coalescing notifications that arrive meanwhile (see [`McpHub`]).
async fn refresh(inner: Arc<HubInner>, index: usize) {
    refresh_then(inner, index, false).await;
}

/// [`refresh`]; with `first`, this is the server's first attempt, and its end (or finding a
/// refresh already running) is counted in `settled`.
async fn refresh_then(inner: Arc<HubInner>, index: usize, first: bool) {
    let server = &inner.servers[index];
    let mut first_listed = first.then_some(());
    let settle = |inner: &HubInner| {
        let server = &inner.servers[index];
        if !server
            .attempted
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            inner.settled.send_modify(|n| *n += 1);
        }
    };
    let previous = {
        let mut state = server.refresh.lock().unwrap_or_else(|e| e.into_inner());
        if state.running {
            state.again = true;
            drop(state);
            if first_listed.is_some() {
                settle(&inner);
            }
            return;
        }
        state.running = true;
        state.again = false;
        state.started
    };
    let mut relists = 0;
    let mut last_start = previous;
    loop {
        if let Some(wait) = last_start.and_then(|t| MIN_RELIST_INTERVAL.checked_sub(t.elapsed())) {
            tokio::time::sleep(wait).await;
        }
        let now = Instant::now();
        last_start = Some(now);
        server
            .refresh
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .started = Some(now);
        let listing = tokio::time::timeout(server.listing_timeout, server.client.list())
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::ListingTimeout {
                    server: server.client.name().to_string(),
                    timeout: server.listing_timeout,
                })
            })
            .map_err(Arc::new);
        let changed = {
            let mut slot = server.listing.write().unwrap_or_else(|e| e.into_inner());
            let changed = match (&*slot, &listing) {
                (Ok(old), Ok(new)) => old != new,
                (Err(_), Ok(_)) => true,
                (Ok(_), Err(_)) | (Err(_), Err(_)) => false,
            };
            match &listing {
                Ok(new) => {
                    // The routes of this listing and the one before: a run that started before
                    // a change still reaches the tools of its catalog (the server decides whether
                    // they still exist), and a server whose tool names keep changing cannot grow
                    // the table without bound.
                    let id = |spec: &ToolSpec| format!("mcp:{}:{}", server.safe_name, spec.name);
                    let mut keep: std::collections::HashSet<String> = match &*slot {
                        Ok(old) => server_specs(server.client.name(), &server.safe_name, old)
                            .iter()
                            .map(|(spec, _, _)| id(spec))
                            .collect(),
                        Err(_) => Default::default(),
                    };
                    let mut routes = inner.routes.write().unwrap_or_else(|e| e.into_inner());
                    for (spec, operation, tool) in
                        server_specs(server.client.name(), &server.safe_name, new)
                    {
                        keep.insert(id(&spec));
                        routes.insert(
                            id(&spec),
                            Route {
                                server: index,
                                operation,
                                tool,
                            },
                        );
                    }
                    routes.retain(|key, route| route.server != index || keep.contains(key));
                    drop(routes);
                    *slot = listing;
                }
                Err(e) => {
                    tracing::debug!("{e}");
                    // Keep the last good listing: its calls reconnect on their own.
                    if slot.is_err() {
                        *slot = Err(e.clone());
                    }
                }
            }
            changed
        };
        if changed {
            inner.generation.send_modify(|g| *g += 1);
        }
        if first_listed.take().is_some() {
            settle(&inner);
        }
        let mut state = server.refresh.lock().unwrap_or_else(|e| e.into_inner());
        if state.again && changed && relists < MAX_RELISTS {
            state.again = false;
            relists += 1;
            continue;
        }
        state.running = false;
        state.again = false;
        return;
    }
}

/// Runs the hub's catalog entries for nested calls ([`ToolExecutor`]): `tool` entries as
/// `tools/call` (the raw MCP result, `isError: true` included, is the value), the resource and
/// prompt operations as `resources/list|read` and `prompts/list|get`. Errors (timeout, lost
/// connection, JSON-RPC error, bad input) reject the guest promise with a one-line message that
/// names the server.
#[derive(Clone)]
pub struct McpExecutor {
    inner: Arc<HubInner>,
    fallback: Option<Arc<dyn ToolExecutor>>,
}

impl ToolExecutor for McpExecutor {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        let route = self
            .inner
            .routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&call.tool_id)
            .cloned();
        let Some(route) = route else {
            return match &self.fallback {
                Some(fallback) => fallback.execute(call),
                None => {
                    let id = call.tool_id;
                    Box::pin(async move {
                        Err(ToolError::unknown_tool(format!(
                            "no tool executor for {id}"
                        )))
                    })
                }
            };
        };
        let client = self.inner.servers[route.server].client.clone();
        Box::pin(async move {
            let mut call = call;
            let input = match std::mem::take(&mut call.input) {
                Value::Object(map) => map,
                Value::Null => Map::new(),
                _ => {
                    return Err(ToolError::invalid_input(
                        "MCP tools take one object argument.",
                    ))
                }
            };
            let string = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_string);
            tracing::debug!(server = client.name(), tool = %route.tool, id = %call.tool_id, "MCP call");
            let result = match route.operation {
                McpOperation::Tool => client.call_tool_for(&route.tool, input, Some(&call)).await,
                McpOperation::ResourcesList => client.list_resources(string("cursor")).await,
                McpOperation::PromptsList => client.list_prompts(string("cursor")).await,
                McpOperation::ResourcesTemplates => {
                    client.list_resource_templates(string("cursor")).await
                }
                McpOperation::ResourcesRead => {
                    let Some(uri) = string("uri") else {
                        return Err(ToolError::invalid_input(
                            "resources.read needs a string uri.",
                        ));
                    };
                    client.read_resource_for(&uri, Some(&call)).await
                }
                McpOperation::PromptsGet => {
                    let Some(name) = string("name") else {
                        return Err(ToolError::invalid_input("prompts.get needs a string name."));
                    };
                    let arguments = match input.get("arguments") {
                        None | Some(Value::Null) => None,
                        Some(Value::Object(arguments)) => Some(arguments.clone()),
                        Some(_) => {
                            return Err(ToolError::invalid_input(
                                "prompts.get arguments must be an object.",
                            ))
                        }
                    };
                    client.get_prompt_for(&name, arguments, Some(&call)).await
                }
            };
            result.map_err(|e| e.tool_error())
        })
    }
}
