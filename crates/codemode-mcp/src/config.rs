//! The MCP servers config: the `{"mcpServers": {…}}` file format that Claude Desktop, Cursor and
//! most MCP clients already use, so a user can point `codemode` at the file they have (VS Code's
//! `{"servers": {…}, "inputs": […]}` is read the same way, its `inputs` ignored).
//!
//! ```json
//! {"mcpServers": {
//!   "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "/tmp/memory.jsonl"}},
//!   "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}}
//! }}
//! ```
//!
//! A server with `command` runs as a child process speaking MCP over stdio; a server with `url`
//! is reached over streamable HTTP. `type`/`transport` (`"stdio"`, `"http"`,
//! `"streamable-http"`, `"streamableHttp"`) may say which explicitly; `"sse"` (the deprecated
//! HTTP+SSE transport) is refused with a clear error. `disabled: true` skips a server, as in
//! Cline's format. Unknown keys are ignored so files written for other clients still load.
//!
//! As in Claude Code and Cursor, `${VAR}` and `${VAR:-default}` in `command`, `args`, `env`
//! values, `url` and `headers` values are replaced by the variable from `codemode`'s own
//! environment (the default when it is unset or empty; `$${` is a literal `${`); an unset
//! variable without a default is a config error naming the server, the field and the variable. `timeoutMs` (a positive
//! integer, at most [`MAX_TIMEOUT_MS`]) replaces the per-request timeout for that server, and
//! `connectTimeoutMs` (the same range) its budget for connecting and the first listing
//! ([`McpServersConfig::connect_timeouts`]; docs/mcp.md, "Servers that are not connected").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

/// The largest config file [`McpServersConfig::load`] reads: 4 MiB.
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// The largest per-server `timeoutMs`: 86,400,000 ms (one day).
pub const MAX_TIMEOUT_MS: u64 = 86_400_000;

/// All configured MCP servers, by configured name (sorted by name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpServersConfig {
    /// Server name → how to reach it.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Server name → its `connectTimeoutMs`: how long connecting and the first listing may take
    /// (an `npx -y` download on first use can take minutes); a server without one keeps
    /// [`crate::ClientOptions::connect_timeout`].
    pub connect_timeouts: BTreeMap<String, Duration>,
}

/// How to reach one MCP server.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerConfig {
    /// A child process speaking MCP over stdin/stdout (`command`, `args`, `env`, `cwd`).
    Stdio {
        /// The program to run (looked up on `PATH` when it has no `/`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for the child on top of the safe default environment (see
        /// `process.rs`: `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER` on Unix).
        env: BTreeMap<String, String>,
        /// Working directory; the current one when `None`.
        cwd: Option<PathBuf>,
        /// `timeoutMs`: this server's per-request timeout; `None` keeps
        /// [`crate::ClientOptions::call_timeout`].
        timeout: Option<Duration>,
    },
    /// A streamable HTTP endpoint (`url`, `headers`).
    Http {
        /// The endpoint URL (`http://` or `https://`).
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
        /// `timeoutMs`: this server's per-request timeout; `None` keeps
        /// [`crate::ClientOptions::call_timeout`].
        timeout: Option<Duration>,
    },
}

impl ServerConfig {
    /// The server's own per-request timeout (`timeoutMs`), if it has one.
    pub fn timeout(&self) -> Option<Duration> {
        match self {
            ServerConfig::Stdio { timeout, .. } | ServerConfig::Http { timeout, .. } => *timeout,
        }
    }
}

/// A config file or value that cannot be used. `Display` is the message the CLI prints; it names
/// the file, the server and the key.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigError {
    /// The root is not a JSON object.
    #[error("the MCP config must be a JSON object")]
    NotAnObject,
    /// `mcpServers` (or VS Code's `servers`) is not an object.
    #[error("\"mcpServers\" must be an object")]
    ServersNotAnObject,
    /// No `mcpServers` key, and the root is not a bare map of server objects.
    #[error("the MCP config needs an \"mcpServers\" object")]
    NoServers,
    /// A server name that is empty, blank or longer than 64 characters.
    #[error("MCP server name {name:?} must be 1 to 64 characters")]
    ServerName {
        /// The name as written.
        name: String,
    },
    /// A bare map's entry that holds server objects: a wrong top-level key.
    #[error("\"{name}\" holds servers, but the MCP config's top-level key must be \"mcpServers\" (or the file is the bare map of servers)")]
    HoldsServers {
        /// The entry's key.
        name: String,
    },
    /// A server entry that is not an object.
    #[error("MCP server \"{server}\" must be a JSON object")]
    ServerNotAnObject {
        /// The server's name.
        server: String,
    },
    /// A server with both `command` and `url`.
    #[error("MCP server \"{server}\" has both \"command\" and \"url\"; give one")]
    BothCommandAndUrl {
        /// The server's name.
        server: String,
    },
    /// A server with neither `command` nor `url`.
    #[error("MCP server \"{server}\" needs \"command\" (stdio) or \"url\" (streamable HTTP)")]
    NeitherCommandNorUrl {
        /// The server's name.
        server: String,
    },
    /// One key of a server entry is unusable.
    #[error("MCP server \"{server}\": {problem}")]
    Server {
        /// The server's name.
        server: String,
        /// What is wrong with which key.
        problem: ServerProblem,
    },
    /// The file cannot be read (or its size cannot be known).
    #[error("{}: {source}", path.display())]
    Read {
        /// The config file.
        path: PathBuf,
        /// What the OS reported (shared, so the error stays `Clone`).
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The file is not one an operator may name: a symbolic link, not a regular file (a FIFO),
    /// another user's, writable by others (docs/threat-model.md, "Files an operator names").
    #[error("{}: {source}", path.display())]
    File {
        /// The config file.
        path: PathBuf,
        /// What the checked path refused (shared, so the error stays `Clone`).
        #[source]
        source: Arc<codemode_files::FileError>,
    },
    /// The file is larger than [`MAX_CONFIG_BYTES`].
    #[error("{}: {size} bytes is larger than the {MAX_CONFIG_BYTES}-byte limit for an MCP config", path.display())]
    TooLarge {
        /// The config file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
    },
    /// The file is not JSON.
    #[error("{}: invalid JSON: {source}", path.display())]
    InvalidJson {
        /// The config file.
        path: PathBuf,
        /// What serde_json reported (shared, so the error stays `Clone`).
        #[source]
        source: Arc<serde_json::Error>,
    },
    /// The file's JSON is not a usable config: `<path>: <the value's error>`.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The config file.
        path: PathBuf,
        /// Why its value cannot be used.
        #[source]
        source: Box<ConfigError>,
    },
}

/// What is wrong with one key of a server entry (the text after `MCP server "<name>": `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerProblem {
    /// `disabled` is not a boolean.
    #[error("\"disabled\" must be true or false")]
    Disabled,
    /// `timeoutMs` is not an integer from 1 to [`MAX_TIMEOUT_MS`].
    #[error("\"timeoutMs\" must be an integer from 1 to {MAX_TIMEOUT_MS} (milliseconds)")]
    Timeout,
    /// `connectTimeoutMs` is not an integer from 1 to [`MAX_TIMEOUT_MS`].
    #[error("\"connectTimeoutMs\" must be an integer from 1 to {MAX_TIMEOUT_MS} (milliseconds)")]
    ConnectTimeout,
    /// `type`/`transport` is not a string.
    #[error("\"type\" must be a string")]
    TypeNotAString,
    /// `type: "sse"`.
    #[error("the deprecated HTTP+SSE transport is not supported; use a streamable HTTP url")]
    Sse,
    /// Another `type`.
    #[error("unknown transport {transport:?}; use \"stdio\" (command) or \"http\" (url)")]
    UnknownTransport {
        /// The value given.
        transport: String,
    },
    /// `command`, `url` or `cwd` is not a string.
    #[error("\"{key}\" must be a string")]
    NotAString {
        /// The key.
        key: String,
    },
    /// `type: "stdio"` without `command`.
    #[error("a stdio server needs \"command\"")]
    StdioNeedsCommand,
    /// An HTTP `type` without `url`.
    #[error("an HTTP server needs \"url\"")]
    HttpNeedsUrl,
    /// `command` is empty after expansion.
    #[error("\"command\" is empty")]
    EmptyCommand,
    /// `args` is not an array of strings.
    #[error("\"args\" must be an array of strings")]
    Args,
    /// `url` is not http(s).
    #[error("\"url\" must start with http:// or https://")]
    UrlScheme,
    /// `env` or `headers` has a non-string value.
    #[error("\"{key}\" values must be strings")]
    ValuesNotStrings {
        /// `env` or `headers`.
        key: String,
    },
    /// `env` or `headers` is not an object.
    #[error("\"{key}\" must be an object of strings")]
    NotAnObjectOfStrings {
        /// `env` or `headers`.
        key: String,
    },
    /// `${VAR}` with `VAR` unset and no default.
    #[error("\"{field}\" uses ${{{var}}}, but {var} is not set (set it, or give a default: ${{{var}:-default}})")]
    UnsetVariable {
        /// Where: `command`, `args[0]`, `env.KEY`, `url`, `headers.KEY`.
        field: String,
        /// The variable.
        var: String,
    },
    /// `${` without its `}`.
    #[error("\"{field}\" has a \"${{\" without its closing \"}}\"")]
    Unterminated {
        /// Where.
        field: String,
    },
    /// `${…}` whose name is not `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("\"{field}\" has ${{{name}}}, which is not a variable name (letters, digits and _, not starting with a digit)")]
    BadVariableName {
        /// Where.
        field: String,
        /// The text between the braces.
        name: String,
    },
}

impl ServerProblem {
    /// This problem as the [`ConfigError`] of server `server`.
    fn of(self, server: &str) -> ConfigError {
        ConfigError::Server {
            server: server.to_string(),
            problem: self,
        }
    }
}

impl McpServersConfig {
    /// Parses a config value: `{"mcpServers": {name: server}}`, or the bare `{name: server}` map.
    ///
    /// Errors: a non-object root or server, a server with neither `command` nor `url` (or both),
    /// non-string `command`/`url`/`args`/`env`/`headers` values, a non-boolean `disabled`, a
    /// `type`/`transport` other than `stdio`, `http`, `streamable-http`, `streamableHttp` (`sse`
    /// is refused) or one that does not match `command`/`url`, an empty or over-long (> 64
    /// characters) server name, a `timeoutMs` that is not an integer from 1 to
    /// [`MAX_TIMEOUT_MS`], a `${VAR}` that is unset (without a default), unterminated or not a
    /// variable name. The message names the server and the key.
    ///
    /// `${VAR}` is looked up in this process's environment (a variable that is not valid UTF-8
    /// counts as unset); [`McpServersConfig::from_value_with_env`] takes the lookup.
    pub fn from_value(value: &Value) -> Result<Self, ConfigError> {
        Self::from_value_with_env(value, &|name| std::env::var(name).ok())
    }

    /// [`McpServersConfig::from_value`] with `lookup` giving the value of a `${VAR}` (`None`:
    /// unset).
    ///
    /// # Errors
    /// As [`McpServersConfig::from_value`].
    pub fn from_value_with_env(
        value: &Value,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let root = value.as_object().ok_or(ConfigError::NotAnObject)?;
        // VS Code's `.vscode/mcp.json` keeps the same server objects under `servers` (next to its
        // `inputs`); a bare map's server *named* "servers" has a `command` or `url` of its own.
        let key = match root.get("servers").and_then(Value::as_object) {
            Some(s) if !root.contains_key("mcpServers") && !is_server(s) => "servers",
            _ => "mcpServers",
        };
        let bare = !root.contains_key(key);
        let servers = match root.get(key) {
            Some(Value::Object(servers)) => servers,
            Some(_) => return Err(ConfigError::ServersNotAnObject),
            None if root.values().all(|v| v.is_object()) => root,
            None => return Err(ConfigError::NoServers),
        };
        let mut config = McpServersConfig::default();
        for (name, server) in servers {
            if name.trim().is_empty() || name.chars().count() > 64 {
                return Err(ConfigError::ServerName { name: name.clone() });
            }
            let server = server
                .as_object()
                .ok_or_else(|| ConfigError::ServerNotAnObject {
                    server: name.clone(),
                })?;
            match server.get("disabled") {
                None | Some(Value::Null) | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => continue,
                Some(_) => return Err(ServerProblem::Disabled.of(name)),
            }
            if bare && holds_servers(server) {
                return Err(ConfigError::HoldsServers { name: name.clone() });
            }
            config
                .servers
                .insert(name.clone(), parse_server(name, server, lookup)?);
            match server.get("connectTimeoutMs") {
                None | Some(Value::Null) => {}
                Some(value) => match value.as_u64() {
                    Some(ms @ 1..=MAX_TIMEOUT_MS) => {
                        config
                            .connect_timeouts
                            .insert(name.clone(), Duration::from_millis(ms));
                    }
                    _ => return Err(ServerProblem::ConnectTimeout.of(name)),
                },
            }
        }
        Ok(config)
    }

    /// Reads a config file (JSON, at most [`MAX_CONFIG_BYTES`]) through the checked path for
    /// operator files (`codemode_files::read_to_string` with `Rules::READ`: no symbolic link, a
    /// regular file, never a FIFO, this user's or root's, not writable by others;
    /// docs/threat-model.md "Files an operator names"). Errors name the file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text =
            codemode_files::read_to_string(path, &codemode_files::Rules::READ, MAX_CONFIG_BYTES)
                .map_err(|e| match e {
                    codemode_files::FileError::TooLarge { size, .. } => ConfigError::TooLarge {
                        path: path.to_path_buf(),
                        size,
                    },
                    e => ConfigError::File {
                        path: path.to_path_buf(),
                        source: Arc::new(e),
                    },
                })?;
        let value: Value = serde_json::from_str(&text).map_err(|e| ConfigError::InvalidJson {
            path: path.to_path_buf(),
            source: Arc::new(e),
        })?;
        McpServersConfig::from_value(&value).map_err(|e| ConfigError::InFile {
            path: path.to_path_buf(),
            source: Box::new(e),
        })
    }
}

/// A would-be server entry that has neither `command` nor `url` but whose values look like
/// servers: a wrong top-level key such as VS Code's `"servers"` or a misspelt `"mcpServer"`.
fn holds_servers(entry: &Map<String, Value>) -> bool {
    !is_server(entry) && entry.values().any(|v| v.as_object().is_some_and(is_server))
}

/// A server entry says how to reach it: `command` (stdio) or `url` (streamable HTTP).
fn is_server(entry: &Map<String, Value>) -> bool {
    entry.contains_key("command") || entry.contains_key("url")
}

fn parse_server(
    name: &str,
    server: &Map<String, Value>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, ConfigError> {
    let expand =
        |field: &str, text: &str| expand_vars(text, lookup).map_err(|e| e.for_field(name, field));
    let timeout = match server.get("timeoutMs") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_u64() {
            Some(ms @ 1..=MAX_TIMEOUT_MS) => Some(Duration::from_millis(ms)),
            _ => return Err(ServerProblem::Timeout.of(name)),
        },
    };
    let kind = match server.get("type").or_else(|| server.get("transport")) {
        None | Some(Value::Null) => None,
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(_) => return Err(ServerProblem::TypeNotAString.of(name)),
    };
    match kind {
        None
        | Some("stdio" | "http" | "streamable-http" | "streamableHttp" | "streamable_http") => {}
        Some("sse") => return Err(ServerProblem::Sse.of(name)),
        Some(other) => {
            return Err(ServerProblem::UnknownTransport {
                transport: other.to_string(),
            }
            .of(name))
        }
    }
    let wants_stdio = kind == Some("stdio");
    let wants_http = kind.is_some() && !wants_stdio;
    let string = |key: &str| -> Result<Option<String>, ConfigError> {
        match server.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ServerProblem::NotAString {
                key: key.to_string(),
            }
            .of(name)),
        }
    };
    let command = string("command")?;
    let url = string("url")?;
    if wants_stdio && command.is_none() {
        return Err(ServerProblem::StdioNeedsCommand.of(name));
    }
    if wants_http && url.is_none() {
        return Err(ServerProblem::HttpNeedsUrl.of(name));
    }
    match (command, url) {
        (Some(command), None) => {
            let command = expand("command", &command)?;
            if command.trim().is_empty() {
                return Err(ServerProblem::EmptyCommand.of(name));
            }
            let args = match server.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|a| a.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| ServerProblem::Args.of(name))?,
                Some(_) => return Err(ServerProblem::Args.of(name)),
            };
            let args = args
                .iter()
                .enumerate()
                .map(|(i, arg)| expand(&format!("args[{i}]"), arg))
                .collect::<Result<Vec<_>, _>>()?;
            let mut env = string_map(name, server, "env")?;
            for (key, value) in env.iter_mut() {
                *value = expand(&format!("env.{key}"), value)?;
            }
            Ok(ServerConfig::Stdio {
                command,
                args,
                env,
                cwd: string("cwd")?.map(PathBuf::from),
                timeout,
            })
        }
        (None, Some(url)) => {
            let url = expand("url", &url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ServerProblem::UrlScheme.of(name));
            }
            let mut headers = string_map(name, server, "headers")?;
            for (key, value) in headers.iter_mut() {
                *value = expand(&format!("headers.{key}"), value)?;
            }
            Ok(ServerConfig::Http {
                url,
                headers,
                timeout,
            })
        }
        (Some(_), Some(_)) => Err(ConfigError::BothCommandAndUrl {
            server: name.to_string(),
        }),
        (None, None) => Err(ConfigError::NeitherCommandNorUrl {
            server: name.to_string(),
        }),
    }
}

fn string_map(
    name: &str,
    server: &Map<String, Value>,
    key: &str,
) -> Result<BTreeMap<String, String>, ConfigError> {
    match server.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect::<Option<BTreeMap<_, _>>>()
            .ok_or_else(|| {
                ServerProblem::ValuesNotStrings {
                    key: key.to_string(),
                }
                .of(name)
            }),
        Some(_) => Err(ServerProblem::NotAnObjectOfStrings {
            key: key.to_string(),
        }
        .of(name)),
    }
}

/// Why a `${…}` reference could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ExpandError {
    /// `${VAR}` with `VAR` unset and no default.
    Unset(String),
    /// `${` without its `}`.
    Unterminated,
    /// `${…}` whose name is not `[A-Za-z_][A-Za-z0-9_]*`.
    BadName(String),
}

impl ExpandError {
    fn for_field(self, server: &str, field: &str) -> ConfigError {
        let field = field.to_string();
        match self {
            ExpandError::Unset(var) => ServerProblem::UnsetVariable { field, var },
            ExpandError::Unterminated => ServerProblem::Unterminated { field },
            ExpandError::BadName(name) => ServerProblem::BadVariableName { field, name },
        }
        .of(server)
    }
}

/// Replaces every `${VAR}` and `${VAR:-default}` in `text` with `lookup(VAR)`; the default is
/// used when `VAR` is unset or empty (as in the shell) and is taken literally (no nesting). A `$`
/// not followed by `{` stays as it is; there is no `$VAR` form (a `$` in an argument such as a
/// regex or a price must survive). `$${` is a literal `${` (as in Docker Compose), for an
/// argument that must reach the server unexpanded.
fn expand_vars(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        if let Some(before) = rest[..start].strip_suffix('$') {
            out.push_str(before);
            out.push_str("${");
            rest = &rest[start + 2..];
            continue;
        }
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or(ExpandError::Unterminated)?;
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        let valid = var
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ExpandError::BadName(inner.to_string()));
        }
        match (lookup(var), default) {
            (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Unset(var.to_string())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The server name made safe for catalog ids and the namespace: characters outside
/// `[A-Za-z0-9_-]` become `_` (so `my.server` → `my_server`). The configured name stays the
/// entry's `serverName`.
pub fn safe_server_name(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_claude_desktop_shape() {
        let config = McpServersConfig::from_value(&json!({"mcpServers": {
            "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"A": "1"}},
            "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
            "off": {"command": "nope", "disabled": true}
        }}))
        .unwrap();
        assert_eq!(config.servers.len(), 2);
        assert_eq!(
            config.servers["memory"],
            ServerConfig::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "@modelcontextprotocol/server-memory".into()],
                env: BTreeMap::from([("A".into(), "1".into())]),
                cwd: None,
                timeout: None,
            }
        );
        assert_eq!(
            config.servers["remote"],
            ServerConfig::Http {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer x".into())]),
                timeout: None,
            }
        );
    }

    fn lookup(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            "PORT" => Some("8931".into()),
            _ => None,
        }
    }

    #[test]
    fn vs_code_files_keep_their_servers_under_servers() {
        let names = |v: Value| -> Vec<String> {
            McpServersConfig::from_value_with_env(&v, &lookup)
                .unwrap()
                .servers
                .into_keys()
                .collect()
        };
        assert_eq!(
            names(json!({"servers": {}, "inputs": [{"id": "key", "type": "promptString"}]})),
            Vec::<String>::new()
        );
        assert_eq!(
            names(json!({"servers": {"gh": {"type": "stdio", "command": "gh-mcp"}}})),
            vec!["gh"]
        );
        // A bare map whose server is named "servers".
        assert_eq!(
            names(json!({"servers": {"command": "x"}, "other": {"url": "http://127.0.0.1:1/mcp"}})),
            vec!["other", "servers"]
        );
        // mcpServers wins when both are there.
        assert_eq!(
            names(
                json!({"mcpServers": {"a": {"command": "x"}}, "servers": {"b": {"command": "y"}}})
            ),
            vec!["a"]
        );
    }

    #[test]
    fn variables_expand_in_command_args_env_url_and_headers() {
        let config = McpServersConfig::from_value_with_env(
            &json!({"mcpServers": {
                "local": {
                    "command": "${BIN_DIR:-/usr/bin}/server",
                    "args": ["--token=${TOKEN}", "price $5 and ${EMPTY:-fallback}", "${EMPTY}|${MISSING:-}|$TOKEN", "--template=$${TOKEN} ${TOKEN} $${unclosed"],
                    "env": {"API_TOKEN": "${TOKEN}", "MODE": "${MODE:-dev:-x}"},
                    "cwd": "${TOKEN}",
                    "timeoutMs": 1500
                },
                "remote": {
                    "url": "http://127.0.0.1:${PORT}/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"}
                }
            }}),
            &lookup,
        )
        .unwrap();
        assert_eq!(
            config.servers["local"],
            ServerConfig::Stdio {
                command: "/usr/bin/server".into(),
                args: vec![
                    "--token=s3cret".into(),
                    "price $5 and fallback".into(),
                    "||$TOKEN".into(),
                    "--template=${TOKEN} s3cret ${unclosed".into()
                ],
                env: BTreeMap::from([
                    ("API_TOKEN".into(), "s3cret".into()),
                    ("MODE".into(), "dev:-x".into())
                ]),
                cwd: Some(PathBuf::from("${TOKEN}")),
                timeout: Some(Duration::from_millis(1500)),
            }
        );
        assert_eq!(
            config.servers["remote"],
            ServerConfig::Http {
                url: "http://127.0.0.1:8931/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer s3cret".into())]),
                timeout: None,
            }
        );
        assert_eq!(
            config.servers["local"].timeout(),
            Some(Duration::from_millis(1500))
        );
    }

    #[test]
    fn bad_variables_and_timeouts_name_the_server_field_and_variable() {
        let err = |v: Value| {
            McpServersConfig::from_value_with_env(&v, &lookup)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(json!({"mcpServers": {"gh": {"command": "x", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}}})),
            "MCP server \"gh\": \"env.GITHUB_TOKEN\" uses ${GITHUB_TOKEN}, but GITHUB_TOKEN is not set (set it, or give a default: ${GITHUB_TOKEN:-default})"
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"command": "x", "args": ["ok", "${NOPE}"]}}})),
            "MCP server \"a\": \"args[1]\" uses ${NOPE}, but NOPE is not set (set it, or give a default: ${NOPE:-default})"
        );
        assert_eq!(
            err(json!({"mcpServers": {"w": {"url": "http://h/${HOST"}}})),
            "MCP server \"w\": \"url\" has a \"${\" without its closing \"}\""
        );
        assert_eq!(
            err(json!({"mcpServers": {"w": {"url": "http://h", "headers": {"X-Key": "${1BAD}"}}}})),
            "MCP server \"w\": \"headers.X-Key\" has ${1BAD}, which is not a variable name (letters, digits and _, not starting with a digit)"
        );
        assert_eq!(
            err(json!({"mcpServers": {"w": {"command": "${}"}}})),
            "MCP server \"w\": \"command\" has ${}, which is not a variable name (letters, digits and _, not starting with a digit)"
        );
        for bad in [
            json!(0),
            json!(-5),
            json!(1.5),
            json!("100"),
            json!(86_400_001u64),
        ] {
            assert_eq!(
                err(json!({"mcpServers": {"t": {"command": "x", "timeoutMs": bad}}})),
                "MCP server \"t\": \"timeoutMs\" must be an integer from 1 to 86400000 (milliseconds)"
            );
            assert_eq!(
                err(json!({"mcpServers": {"t": {"command": "x", "connectTimeoutMs": bad}}})),
                "MCP server \"t\": \"connectTimeoutMs\" must be an integer from 1 to 86400000 (milliseconds)"
            );
        }
    }

    #[test]
    fn connect_timeouts_are_per_server() {
        let config = McpServersConfig::from_value(&json!({"mcpServers": {
            "slow": {"command": "npx", "args": ["-y", "pkg"], "connectTimeoutMs": 600000},
            "web": {"url": "https://h/mcp", "connectTimeoutMs": 5000, "timeoutMs": 100},
            "plain": {"command": "x", "connectTimeoutMs": null},
        }}))
        .unwrap();
        assert_eq!(
            config.connect_timeouts,
            BTreeMap::from([
                ("slow".to_string(), Duration::from_millis(600_000)),
                ("web".to_string(), Duration::from_millis(5_000)),
            ])
        );
        assert_eq!(
            config.servers["web"].timeout(),
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn bad_configs_name_the_server_and_key() {
        let err = |v: Value| McpServersConfig::from_value(&v).unwrap_err().to_string();
        assert_eq!(err(json!([])), "the MCP config must be a JSON object");
        assert_eq!(
            err(json!({"mcpServers": {"a": {}}})),
            "MCP server \"a\" needs \"command\" (stdio) or \"url\" (streamable HTTP)"
        );
        assert_eq!(
            err(json!({"mcp_servers": {"memory": {"command": "mcp-server-memory"}}})),
            "\"mcp_servers\" holds servers, but the MCP config's top-level key must be \"mcpServers\" (or the file is the bare map of servers)"
        );
        assert_eq!(
            err(json!({"mcpServer": {"web": {"url": "http://127.0.0.1:1/mcp"}}})),
            "\"mcpServer\" holds servers, but the MCP config's top-level key must be \"mcpServers\" (or the file is the bare map of servers)"
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"command": "x", "args": [1]}}})),
            "MCP server \"a\": \"args\" must be an array of strings"
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"command": "x", "url": "http://h"}}})),
            "MCP server \"a\" has both \"command\" and \"url\"; give one"
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"url": "ftp://h"}}})),
            "MCP server \"a\": \"url\" must start with http:// or https://"
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"url": "http://h", "type": "sse"}}})),
            "MCP server \"a\": the deprecated HTTP+SSE transport is not supported; use a streamable HTTP url"
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}})),
            "MCP server \"a\": \"env\" values must be strings"
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"command": "x", "disabled": "yes"}}})),
            "MCP server \"a\": \"disabled\" must be true or false"
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"command": "x", "type": "websocket"}}})),
            "MCP server \"a\": unknown transport \"websocket\"; use \"stdio\" (command) or \"http\" (url)"
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"url": "http://h", "type": "stdio"}}})),
            "MCP server \"a\": a stdio server needs \"command\""
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"command": "x", "transport": "http"}}})),
            "MCP server \"a\": an HTTP server needs \"url\""
        );
        assert_eq!(
            err(json!({"mcpServers": {"a": {"command": "x", "type": 5}}})),
            "MCP server \"a\": \"type\" must be a string"
        );
        assert!(McpServersConfig::from_value(
            &json!({"mcpServers": {"a": {"url": "http://h", "type": "streamable-http"}, "b": {"command": "x", "type": "stdio", "disabled": false}}})
        )
        .is_ok());
        assert_eq!(
            err(json!({"mcpServers": {"": {"command": "x"}}})),
            "MCP server name \"\" must be 1 to 64 characters"
        );
    }

    #[test]
    fn safe_names() {
        assert_eq!(safe_server_name("my.server"), "my_server");
        assert_eq!(safe_server_name(" git-hub_2 "), "git-hub_2");
        assert_eq!(safe_server_name("名前"), "__");
    }
}
