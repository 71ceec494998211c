//! MCP both ways for code mode (docs/mcp.md).
//!
//! - **Client side**: [`McpServersConfig`] reads the `{"mcpServers": {…}}` file users already
//!   have; [`McpHub::connect`] connects to every server (stdio child processes or streamable
//!   HTTP, through rmcp), lists their tools, resources and prompts, and gives catalog entries
//!   ([`McpHub::specs`], `mcp:<server>:<server>__<tool>` with MCP metadata, so the guest reaches
//!   them only through the `MCP` namespace, docs/contract/mcp.md#s7) and a [`McpExecutor`] that runs them.
//! - **Server side**: [`CodeModeServer`] serves code mode itself as an MCP server with exactly
//!   two tools, `exec` and `wait` (`codemode serve`); nested calls that need approval are asked
//!   of the session's client by MCP elicitation ([`ElicitationApprover`]), and a [`ServeHost`]
//!   gives the policy, hooks and trajectory of its runs.

pub mod auth;
pub mod client;
pub mod config;
pub mod description;
pub mod drain;
mod error;
pub mod forward;
pub mod http_auth;
pub mod hub;
mod lifecycle;
pub mod mrtr;
pub mod origin;
mod process;
pub mod source;
mod stderr;
pub mod stdio;
pub mod tasks;

pub use client::{ClientOptions, ServerClient, ServerListing};
pub use config::{safe_server_name, ConfigError, McpServersConfig, ServerConfig, ServerProblem};
pub use error::{ClientError, McpRequest};
pub use hub::{DirectServer, McpExecutor, McpHub, ServerStatus, Unavailable};

pub mod elicit;
pub mod server;
pub mod shared_scope;
pub use elicit::ElicitationApprover;
pub use server::{CodeModeServer, EnvSource, ServeHost};
