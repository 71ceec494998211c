//! `codemode exec` with a static `nodes` tool (docs/contract/host.md#h7): the `nodes` global
//! over `openclaw:core:nodes`, declared with `resultByAction` in a `--tools` file, and the `exec`
//! description's nodes line (docs/contract/surface.md#s2-4).

use crate::common;

use serde_json::{json, Value};

const TOOLS: &str = r#"[
    {"name": "nodes", "description": "Paired Gateway nodes.", "resultByAction": {
        "status": {"nodes": [
            {"nodeId": "mac-1", "displayName": " Studio Mac ", "platform": "darwin",
             "connected": true, "paired": true, "commands": ["fs.listDir", "camera.snap"]},
            {"nodeId": "old-2", "displayName": "Old", "paired": false}
        ]},
        "invoke": {"ok": true}
    }}
]"#;

fn exec(code: &str) -> (i32, Value) {
    common::exec_with_tools(TOOLS, code, &[])
}

#[test]
fn nodes_over_a_static_tool() {
    let (code, result) = exec(
        r#"const list = await nodes.list();
           const mac = await nodes.get("Studio Mac");
           let missing;
           try { await nodes.get("old-2"); } catch (e) { missing = e.message; }
           console.log("keys", Object.keys(mac));
           return {list, invoked: await mac.invoke("camera.snap", {q: 1}),
                   listed: await mac.listDir("/"), missing};"#,
    );
    assert_eq!(code, 0, "{result}");
    assert_eq!(
        result,
        json!({
            "status": "completed",
            "value": {
                "list": [{"id": "mac-1", "name": "Studio Mac", "platform": "darwin",
                          "connected": true, "commands": ["fs.listDir", "camera.snap"]}],
                "invoked": {"ok": true},
                "listed": {"ok": true},
                "missing": "node \"old-2\" is not paired (paired node ids: mac-1)"
            },
            "output": [{"type": "text", "text": "keys [\"id\",\"name\",\"invoke\",\"listDir\"]"}],
            "replaySafe": false,
            "telemetry": common::core_telemetry(1, 5)
        })
    );
}
