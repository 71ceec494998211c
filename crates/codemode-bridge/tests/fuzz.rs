//! Fuzz target `guest_report` (docs/threat-model.md, "Fuzzing"): the host's parser of guest
//! reports (`GuestReport::parse`, the bytes a hostile guest leaves in its memory) never panics,
//! and what it accepts follows the protocol (ids valid for their method).

#[path = "../../../xtask/fuzz/engine.rs"]
mod engine;

use codemode_bridge::{valid_bridge_id, GuestReport};
use serde_json::json;

fn report(rng: &mut engine::Rng) -> Vec<u8> {
    let methods = [
        "call",
        "callValue",
        "search",
        "describe",
        "yield",
        "namespace",
        "nodes",
        "exec",
        "",
    ];
    let requests: Vec<_> = (0..rng.below(4))
        .map(|_| {
            let m = methods[rng.below(methods.len())];
            json!({
                "id": if rng.chance(3) { engine::string(rng) } else { format!("bridge:{m}:{}", rng.below(30)) },
                "method": m,
                "args": if rng.chance(2) { engine::json_value(rng, 6).to_string() } else { engine::string(rng) },
            })
        })
        .collect();
    let status = [
        "ready",
        "completed",
        "pending",
        "failed",
        "protocolError",
        "x",
    ][rng.below(6)];
    let mut value = json!({
        "status": status,
        "outstanding": rng.below(5),
        "requests": requests,
        "output": (0..rng.below(3)).map(|_| engine::json_value(rng, 4)).collect::<Vec<_>>(),
        "outputOverflow": rng.chance(4),
        "requestOverflow": rng.chance(4),
    });
    if rng.chance(2) {
        value["value"] = engine::json_value(rng, 8);
    }
    if rng.chance(2) {
        value["error"] = json!(engine::string(rng));
    }
    value.to_string().into_bytes()
}

#[test]
fn fuzz_guest_report() {
    let seeds = vec![
        br#"{"status":"pending","outstanding":1,"requests":[{"id":"bridge:call:1","method":"call","args":"{\"id\":\"x\"}"}],"output":[{"type":"text","text":"hi"}]}"#.to_vec(),
        br#"{"status":"completed","value":{"a":[1,2,{"b":null}]},"output":[{"type":"json","value":1}]}"#.to_vec(),
        br#"{"status":"failed","error":"Error: x\n    at <anonymous>"}"#.to_vec(),
        br#"{"status":"protocolError","error":"bad"}"#.to_vec(),
    ];
    engine::run("guest_report", &seeds, Some(&report), &|bytes| {
        if let Ok(report) = GuestReport::parse(bytes) {
            for r in &report.requests {
                assert!(valid_bridge_id(&r.id, r.method), "accepted id {:?}", r.id);
            }
        }
    });
}
