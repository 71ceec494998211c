//! Embedding code mode in a Rust host: one tool, one `exec`, the result printed as JSON.
//!
//! Run it with `cargo run -p codemode-facade --example embed`. In your own project, depend on
//! `codemode-facade` only (everything used here comes from its prelude) and on `tokio` and
//! `serde_json`.
//!
//! The program the model would write calls the `weather` tool from JavaScript; the host answers
//! the call through its [`ToolExecutor`], and `exec` returns the program's value:
//! `{"status":"completed","value":{"city":"Oslo","tempC":21},…}`.

use std::sync::Arc;

use codemode_facade::prelude::*;
use serde_json::{json, Value};

/// The host's tools: here one, `weather`, answered in-process.
struct HostTools;

impl ToolExecutor for HostTools {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        Box::pin(async move {
            match call.tool_name.as_str() {
                "weather" => {
                    let city = call.input["city"].as_str().unwrap_or("nowhere").to_string();
                    let details = json!({"city": city, "tempC": 21});
                    // The tool-result shape: content for the model, details for the program.
                    Ok(json!({
                        "content": [{"type": "text", "text": details.to_string()}],
                        "details": details,
                    }))
                }
                other => Err(ToolError::unknown_tool(format!("no such tool: {other}"))),
            }
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let result = run().await?;
    println!("{result}");
    Ok(())
}

/// Builds the catalog and the run, executes the model's program and returns the result JSON
/// (`tests/embed_example.rs` runs it too).
pub(crate) async fn run() -> Result<Value, Box<dyn std::error::Error>> {
    // 1. The catalog the program can search and call.
    let weather = ToolSpec::core("weather", "Current weather for a city.").with_parameters(json!({
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }));
    let catalog = Catalog::build(vec![weather], &SearchLimits::default())?;

    // 2. What the model sees: put these two definitions in the provider request.
    let [exec_tool, wait_tool] = surface_tools(&catalog);
    eprintln!(
        "model tools: {} ({} bytes of description), {}",
        exec_tool.name,
        exec_tool.description.len(),
        wait_tool.name
    );

    // 3. One run: the config (the spec's tools.codeMode shape), catalog, executor and owner.
    let config = resolve_config(&json!({"timeoutMs": 10_000})).config;
    let env = RunEnv::new(
        config,
        Arc::new(catalog),
        Arc::new(HostTools),
        RunScope::default(),
    );
    let code_mode = CodeMode::with_global_runtime()?;

    // 4. The model's exec call; a `waiting` result would be resumed with `code_mode.wait`.
    let input = json!({
        "code": "const w = await tools.weather({ city: 'Oslo' }); return w;",
    });
    let result = code_mode.exec(&env, &input, &AbortHandle::new()).await;
    Ok(result.to_json())
}
