//! The integration tests of `codemode-cli` in one test binary: each file here is a module, as
//! each was its own binary before. Every test binary links wasmtime, swc and rmcp, so one
//! binary instead of one per file saves CI disk and a link per file (docs/ci.md, "Disk").

#[path = "../common/mod.rs"]
mod common;

mod agent;
mod cli_usage;
mod closed_pipe;
mod conformance;
mod direct_passthrough;
mod direct_tasks;
mod exec_output_bound;
mod host_policy;
mod limits;
mod mcp_config;
mod nodes;
mod operator_files;
mod progress;
mod scale_out;
mod serve_e2e;
mod serve_plain;
mod session;
mod session_hostile;
mod state;
mod static_tools;
mod surface;
mod tasks_long_tool;
mod tokens;
