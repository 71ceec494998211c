//! The fail-closed contract: an engaged run whose runtime cannot load fails; it never falls back
//! to direct tools, and a run that did not engage never loads the runtime.

use codemode_config::{
    decide, ActivationReason, CodeModeTier, Enabled, ModelSupport, RunContext, RuntimeUnavailable,
    ToolSurface,
};
use std::cell::Cell;

fn preferred_run() -> RunContext {
    RunContext {
        model: ModelSupport {
            supports_tools: true,
            tier: Some(CodeModeTier::Preferred),
        },
        ..RunContext::default()
    }
}

#[test]
fn engaged_and_unloadable_fails() {
    for enabled in [Enabled::On, Enabled::Auto] {
        let d = decide(enabled, &preferred_run());
        assert!(d.engaged);
        let err = d
            .load_runtime(|| Err::<(), _>("guest module failed to compile"))
            .unwrap_err();
        assert_eq!(err.code, RuntimeUnavailable::CODE);
        assert_eq!(err.code, "runtime_unavailable");
        assert_eq!(err.reason, d.reason);
        assert_eq!(err.cause, "guest module failed to compile");
        assert!(err
            .to_string()
            .contains("the run fails instead of exposing its tools directly"));
    }
}

#[test]
fn engaged_and_loadable_gets_code_mode() {
    let d = decide(Enabled::On, &RunContext::default());
    assert_eq!(d.reason, ActivationReason::Forced);
    assert_eq!(
        d.load_runtime(|| Ok::<_, String>(7)).unwrap(),
        ToolSurface::CodeMode(7)
    );
}

#[test]
fn not_engaged_never_loads() {
    let called = Cell::new(false);
    for enabled in [Enabled::Off, Enabled::Auto] {
        let d = decide(enabled, &RunContext::default());
        assert!(!d.engaged);
        let surface = d
            .load_runtime(|| {
                called.set(true);
                Err::<(), _>("unreachable")
            })
            .unwrap();
        assert_eq!(surface, ToolSurface::Direct);
    }
    assert!(!called.get());
}

#[test]
fn async_loader() {
    // A minimal executor: the futures here are ready at once.
    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = std::pin::pin!(f);
        loop {
            if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }
    let d = decide(Enabled::On, &RunContext::default());
    let err = block_on(d.load_runtime_async(|| async { Err::<(), _>("no wasmtime") })).unwrap_err();
    assert_eq!(err.cause, "no wasmtime");
    let ok = block_on(d.load_runtime_async(|| async { Ok::<_, String>("rt") })).unwrap();
    assert_eq!(ok, ToolSurface::CodeMode("rt"));
    let json = serde_json::to_value(RuntimeUnavailable::new(
        ActivationReason::AutoPreferred,
        "x",
    ))
    .unwrap();
    assert_eq!(
        json,
        serde_json::json!({"code": "runtime_unavailable", "reason": "auto_preferred", "cause": "x"})
    );
}
