//! The run context read lazily through the `codemode.context_*` imports (docs/guest-abi.md,
//! "Run context"): a `RunContext` given to `Vm::start` is read only when the program touches the
//! catalog globals, a restored VM reads it again after `Vm::set_context`, and without one the
//! touching access fails with a clear error instead of seeing an empty catalog.

use crate::common;

use codemode_bridge::{Delivery, GuestState, RunContext};
use codemode_runtime::VmLimits;
use common::{budget, runtime, value};
use serde_json::json;

/// Two tools (`echo`, and `dup` twice) and one MCP path.
const CONTEXT: &str = r#"{"tools":[{"id":"openclaw:core:echo","name":"echo"},
    {"id":"openclaw:a:dup","name":"dup"},{"id":"openclaw:b:dup","name":"dup"}],
    "apiFiles":[{"path":"mcp/index.d.ts","description":"Root.","bytes":3,"content":"abc"}],
    "mcp":{"paths":[["srv","ping"]],"serverNames":[["srv","Server"]]}}"#;

fn lazy() -> RunContext {
    RunContext::from_json(CONTEXT).unwrap()
}

const PROBE: &str = r#"return [Object.keys(tools), ALL_TOOLS.map((t) => t.id), Object.keys(MCP.srv),
    MCP.srv.$serverName, (await API.read("mcp/index.d.ts")).content, typeof tools.dup]"#;

#[test]
fn a_lazy_context_gives_the_same_globals_as_the_eager_one() {
    let rt = runtime();
    let limits = VmLimits::default();
    let expected = json!([
        ["search", "describe", "call", "callValue", "echo"],
        ["openclaw:core:echo", "openclaw:a:dup", "openclaw:b:dup"],
        ["$serverName", "ping"],
        "Server",
        "abc",
        "undefined"
    ]);
    let mut vm = rt.fresh_vm(&limits).unwrap();
    assert_eq!(
        value(vm.start(PROBE, lazy(), &limits, &budget(5000)).unwrap()),
        expected
    );
    let mut vm = rt.fresh_vm(&limits).unwrap();
    assert_eq!(
        value(vm.start(PROBE, CONTEXT, &limits, &budget(5000)).unwrap()),
        expected
    );
}

#[test]
fn a_convenience_call_asks_only_for_its_name() {
    let rt = runtime();
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).unwrap();
    let report = vm
        .start(
            "return await tools.echo({a: 1})",
            lazy(),
            &limits,
            &budget(5000),
        )
        .unwrap();
    assert_eq!(report.state, GuestState::Pending);
    let pending = vm.pending().to_vec();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, "bridge:callValue:1");
    assert_eq!(
        pending[0].args,
        json!({"id": "openclaw:core:echo", "input": {"a": 1}})
    );
}

#[test]
fn a_restored_vm_reads_the_context_it_is_given_again() {
    let rt = runtime();
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).unwrap();
    let code = "await yield_control(); return [Object.keys(tools).length, ALL_TOOLS.length];";
    let report = vm.start(code, lazy(), &limits, &budget(5000)).unwrap();
    assert_eq!(report.state, GuestState::Pending);
    let snapshot = vm.snapshot().unwrap();
    drop(vm);
    let resume = Delivery {
        id: "bridge:yield:1".into(),
        outcome: Ok(json!({"status": "yielded", "reason": null})),
    };

    let mut restored = rt.restore(&snapshot, &limits).unwrap();
    restored.set_context(lazy());
    assert_eq!(
        value(restored.deliver(&resume, &budget(5000)).unwrap()),
        json!([5, 3])
    );

    // Without the context, the first touch fails the run with a clear error.
    let mut bare = rt.restore(&snapshot, &limits).unwrap();
    match bare.deliver(&resume, &budget(5000)).unwrap().state {
        GuestState::Failed { error } => assert_eq!(
            error.lines().next().unwrap(),
            "Error: code mode run context is unavailable"
        ),
        other => panic!("expected failed, got {other:?}"),
    }
}
