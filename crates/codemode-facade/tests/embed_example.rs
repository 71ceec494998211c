//! `examples/embed.rs` works as documented: its program calls the host's tool and completes.

#[allow(dead_code)] // the example's `main` only runs under `cargo run --example embed`
#[path = "../examples/embed.rs"]
mod embed;

#[tokio::test(flavor = "multi_thread")]
async fn the_embedding_example_completes_with_the_tool_value() {
    let result = embed::run().await.unwrap();
    assert_eq!(
        result,
        serde_json::json!({
            "status": "completed",
            "value": {"city": "Oslo", "tempC": 21},
            "output": [],
            "replaySafe": false,
            "telemetry": {
                "catalogSize": 1,
                "sources": {"openclaw": 1, "mcp": 0, "client": 0},
                "searchCount": 0,
                "describeCount": 0,
                "callCount": 1,
                "visibleTools": ["exec", "wait"]
            }
        })
    );
}
