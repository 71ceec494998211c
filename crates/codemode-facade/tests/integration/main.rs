//! The integration tests of `codemode-facade` in one test binary: each file here is a module, as
//! each was its own binary before. Every test binary links wasmtime, swc and rmcp (some 100 MB
//! in a debug build), so one binary instead of one per file saves gigabytes of CI disk and a
//! link per file (docs/ci.md, "Disk"). Files that change process-wide state (environment
//! variables, peak RSS, open descriptors) or whose test names a tool runs with `--exact` stay
//! binaries of their own beside this folder.

#[path = "../common/mod.rs"]
mod common;
#[path = "../../../codemode-catalog/tests/support/examples.rs"]
mod examples;

mod conveniences;
mod deadlines;
mod exec_wait;
mod host_pipeline;
mod hostile;
mod intrinsics;
mod lazy_catalog;
mod offline_mcp;
mod run_store;
mod settle_at_once;
mod surface;
