//! The MCP servers config: the `{"mcpServers": {…}}` file format that Claude Desktop, Cursor and
//! most MCP clients already use, so a user can point `codemode` at the file they have.
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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The largest config file [`McpServersConfig::load`] reads: 4 MiB.
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// All configured MCP servers, by configured name (sorted by name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpServersConfig {
    /// Server name → how to reach it.
    pub servers: BTreeMap<String, ServerConfig>,
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
        /// Variables added to the inherited environment.
        env: BTreeMap<String, String>,
        /// Working directory; the current one when `None`.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint (`url`, `headers`).
    Http {
        /// The endpoint URL (`http://` or `https://`).
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// A config file or value that cannot be used; the message names the server and the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

impl McpServersConfig {
    /// Parses a config value: `{"mcpServers": {name: server}}`, or the bare `{name: server}` map.
    ///
    /// Errors: a non-object root or server, a server with neither `command` nor `url` (or both),
    /// non-string `command`/`url`/`args`/`env`/`headers` values, a non-boolean `disabled`, a
    /// `type`/`transport` other than `stdio`, `http`, `streamable-http`, `streamableHttp` (`sse`
    /// is refused) or one that does not match `command`/`url`, an empty or over-long (> 64
    /// characters) server name. The message names the server and the key.
    pub fn from_value(value: &Value) -> Result<Self, ConfigError> {
        let root = value
            .as_object()
            .ok_or_else(|| ConfigError("the MCP config must be a JSON object".into()))?;
        let bare = !root.contains_key("mcpServers");
        let servers = match root.get("mcpServers") {
            Some(Value::Object(servers)) => servers,
            Some(_) => return Err(ConfigError("\"mcpServers\" must be an object".into())),
            None if root.values().all(|v| v.is_object()) => root,
            None => {
                return Err(ConfigError(
                    "the MCP config needs an \"mcpServers\" object".into(),
                ))
            }
        };
        let mut config = McpServersConfig::default();
        for (name, server) in servers {
            if name.trim().is_empty() || name.chars().count() > 64 {
                return Err(ConfigError(format!(
                    "MCP server name {name:?} must be 1 to 64 characters"
                )));
            }
            let server = server.as_object().ok_or_else(|| {
                ConfigError(format!("MCP server \"{name}\" must be a JSON object"))
            })?;
            match server.get("disabled") {
                None | Some(Value::Null) | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => continue,
                Some(_) => {
                    return Err(ConfigError(format!(
                        "MCP server \"{name}\": \"disabled\" must be true or false"
                    )))
                }
            }
            if bare && holds_servers(server) {
                return Err(ConfigError(format!(
                    "\"{name}\" holds servers, but the MCP config's top-level key must be \"mcpServers\" (or the file is the bare map of servers)"
                )));
            }
            config
                .servers
                .insert(name.clone(), parse_server(name, server)?);
        }
        Ok(config)
    }

    /// Reads a config file (JSON, at most [`MAX_CONFIG_BYTES`]). Errors name the file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let size = std::fs::metadata(path)
            .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?
            .len();
        if size > MAX_CONFIG_BYTES {
            return Err(ConfigError(format!(
                "{}: {size} bytes is larger than the {MAX_CONFIG_BYTES}-byte limit for an MCP config",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| ConfigError(format!("{}: invalid JSON: {e}", path.display())))?;
        McpServersConfig::from_value(&value)
            .map_err(|e| ConfigError(format!("{}: {}", path.display(), e.0)))
    }
}

/// A would-be server entry that has neither `command` nor `url` but whose values look like
/// servers: a wrong top-level key such as VS Code's `"servers"` or a misspelt `"mcpServer"`.
fn holds_servers(entry: &Map<String, Value>) -> bool {
    !entry.contains_key("command")
        && !entry.contains_key("url")
        && entry.values().any(|v| {
            v.as_object()
                .is_some_and(|v| v.contains_key("command") || v.contains_key("url"))
        })
}

fn parse_server(name: &str, server: &Map<String, Value>) -> Result<ServerConfig, ConfigError> {
    let kind = match server.get("type").or_else(|| server.get("transport")) {
        None | Some(Value::Null) => None,
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(_) => {
            return Err(ConfigError(format!(
                "MCP server \"{name}\": \"type\" must be a string"
            )))
        }
    };
    match kind {
        None | Some("stdio" | "http" | "streamable-http" | "streamableHttp" | "streamable_http") => {}
        Some("sse") => {
            return Err(ConfigError(format!(
                "MCP server \"{name}\": the deprecated HTTP+SSE transport is not supported; use a streamable HTTP url"
            )))
        }
        Some(other) => {
            return Err(ConfigError(format!(
                "MCP server \"{name}\": unknown transport {other:?}; use \"stdio\" (command) or \"http\" (url)"
            )))
        }
    }
    let wants_stdio = kind == Some("stdio");
    let wants_http = kind.is_some() && !wants_stdio;
    let string = |key: &str| -> Result<Option<String>, ConfigError> {
        match server.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ConfigError(format!(
                "MCP server \"{name}\": \"{key}\" must be a string"
            ))),
        }
    };
    let command = string("command")?;
    let url = string("url")?;
    if wants_stdio && command.is_none() {
        return Err(ConfigError(format!(
            "MCP server \"{name}\": a stdio server needs \"command\""
        )));
    }
    if wants_http && url.is_none() {
        return Err(ConfigError(format!(
            "MCP server \"{name}\": an HTTP server needs \"url\""
        )));
    }
    match (command, url) {
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(ConfigError(format!(
                    "MCP server \"{name}\": \"command\" is empty"
                )));
            }
            let args = match server.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|a| a.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        ConfigError(format!(
                            "MCP server \"{name}\": \"args\" must be an array of strings"
                        ))
                    })?,
                Some(_) => {
                    return Err(ConfigError(format!(
                        "MCP server \"{name}\": \"args\" must be an array of strings"
                    )))
                }
            };
            Ok(ServerConfig::Stdio {
                command,
                args,
                env: string_map(name, server, "env")?,
                cwd: string("cwd")?.map(PathBuf::from),
            })
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError(format!(
                    "MCP server \"{name}\": \"url\" must start with http:// or https://"
                )));
            }
            Ok(ServerConfig::Http {
                url,
                headers: string_map(name, server, "headers")?,
            })
        }
        (Some(_), Some(_)) => Err(ConfigError(format!(
            "MCP server \"{name}\" has both \"command\" and \"url\"; give one"
        ))),
        (None, None) => Err(ConfigError(format!(
            "MCP server \"{name}\" needs \"command\" (stdio) or \"url\" (streamable HTTP)"
        ))),
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
                ConfigError(format!(
                    "MCP server \"{name}\": \"{key}\" values must be strings"
                ))
            }),
        Some(_) => Err(ConfigError(format!(
            "MCP server \"{name}\": \"{key}\" must be an object of strings"
        ))),
    }
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
            }
        );
        assert_eq!(
            config.servers["remote"],
            ServerConfig::Http {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer x".into())]),
            }
        );
    }

    #[test]
    fn bad_configs_name_the_server_and_key() {
        let err = |v: Value| McpServersConfig::from_value(&v).unwrap_err().0;
        assert_eq!(err(json!([])), "the MCP config must be a JSON object");
        assert_eq!(
            err(json!({"mcpServers": {"a": {}}})),
            "MCP server \"a\" needs \"command\" (stdio) or \"url\" (streamable HTTP)"
        );
        assert_eq!(
            err(json!({"servers": {"memory": {"command": "mcp-server-memory"}}})),
            "\"servers\" holds servers, but the MCP config's top-level key must be \"mcpServers\" (or the file is the bare map of servers)"
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
