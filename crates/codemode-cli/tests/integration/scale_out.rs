//! `codemode serve --http` scaled out (issue 24 items 3 and 4; docs/deployment.md): real
//! `serve` processes, a real `redis-server`, real HTTP requests of a stateless 2026-07-28 client.
//!
//! - Anonymous stateless requests share one scope that is the same in every instance on one
//!   store: a run parked through A is resumed by a `wait` on B.
//! - `--auth FILE`: 401 with `WWW-Authenticate` without a valid token (and the token is in no
//!   log), runs scoped to their principal, the per-principal cap, and a non-loopback bind
//!   refused without `--auth`.
//! - A run parked on A with a tool call in flight is owned by A: `wait`s on B and C wait for A
//!   and answer with the run's result when A's call finishes; when A is killed they restore the
//!   run after the owner lease expires, with the call lost inside the program.
//! - A run parked as an MCP task on A is seen, answered and cancelled through B; when A dies,
//!   B takes the task over and completes it.

#[path = "../../../codemode-snapshot/tests/support/redis_server.rs"]
mod redis_server;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use codemode_test_support::everything_servers;
use codemode_test_support::mcp::{jsonrpc_response, post_2026};
use redis_server::RedisServer;
use serde_json::{json, Value};

/// A 32-byte sealing key, standard base64 (the test's own; never a real one).
const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// A running `codemode serve --http 127.0.0.1:0`, killed by pid when dropped.
struct Serve {
    child: Child,
    url: String,
}

impl Serve {
    /// Starts `serve --http 127.0.0.1:0` with `args` and waits for its URL on stderr.
    fn start(args: &[&str]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .env("CODEMODE_STATE_KEY", KEY)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn codemode serve");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        let url = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                panic!("serve exited before serving: {seen}");
            }
            if let Some(url) = line
                .trim()
                .strip_prefix("codemode: serving MCP over streamable HTTP at ")
            {
                break url.to_string();
            }
            seen.push_str(&line);
        };
        // Keep draining stderr so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stderr.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        Serve { child, url }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One stateless 2026-07-28 `tools/call` of `tool` with `arguments`, with `token` as bearer
/// token; the HTTP status, the `WWW-Authenticate` header and the JSON-RPC response (`Null` when
/// the body is not one).
async fn call(
    url: &str,
    token: Option<&str>,
    tool: &str,
    arguments: Value,
) -> (u16, Option<String>, Value) {
    let reply = post_2026(
        url,
        1,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        json!({}),
        token,
    )
    .await;
    let message = jsonrpc_response(&reply.text, 1).unwrap_or(Value::Null);
    (reply.status, reply.challenge, message)
}

/// The `structuredContent` of a successful call (the code-mode result).
async fn result(url: &str, token: Option<&str>, tool: &str, arguments: Value) -> Value {
    let (status, _, message) = call(url, token, tool, arguments).await;
    assert_eq!(status, 200, "{message}");
    message["result"]["structuredContent"].clone()
}

const PARK: &str = "text('before'); await yield_control(); text('after'); return 7";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anonymous_stateless_wait_resumes_on_another_instance() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let state = redis.url(0);
    let a = Serve::start(&["--state", &state]);
    let b = Serve::start(&["--state", &state]);
    let parked = result(&a.url, None, "exec", json!({"code": PARK})).await;
    assert_eq!(parked["status"], "waiting", "{parked}");
    assert_eq!(
        parked["output"],
        json!([{"type": "text", "text": "before"}])
    );
    let run_id = parked["runId"].clone();
    let done = result(&b.url, None, "wait", json!({"runId": run_id})).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["value"], 7);
    assert_eq!(done["output"], json!([{"type": "text", "text": "after"}]));
    // Finished: neither instance has it any more.
    let again = result(&a.url, None, "wait", json!({"runId": run_id})).await;
    assert_eq!(again["error"], "code mode run is unavailable or expired.");

    // A's own restart does not lose it either: park on B, stop B, wait on a new B.
    let parked = result(&b.url, None, "exec", json!({"code": PARK})).await;
    drop(b);
    let b = Serve::start(&["--state", &state]);
    let done = result(&b.url, None, "wait", json!({"runId": parked["runId"]})).await;
    assert_eq!(done["value"], 7, "{done}");
}

/// Writes an auth file for `alice` (token `tok-alice`) and `bob` (token `tok-bob`), mode 600.
fn auth_file(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("tokens");
    let text = format!(
        "# codemode serve --auth\n{} alice\n{} bob\n",
        codemode_mcp::http_auth::token_hash("tok-alice"),
        codemode_mcp::http_auth::token_hash("tok-bob"),
    );
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_scope_runs_to_their_principal() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tokens = auth_file(dir.path());
    let log = dir.path().join("serve.log");
    let state = redis.url(1);
    let (tokens, log_arg) = (tokens.to_str().unwrap(), log.to_str().unwrap());
    let common = [
        "--state",
        &state,
        "--auth",
        tokens,
        "--runs-per-principal",
        "2",
    ];
    let a = Serve::start(&[&common[..], &["--log-file", log_arg]].concat());
    let b = Serve::start(&common);

    let (status, challenge, _) = call(&a.url, None, "exec", json!({"code": "return 1"})).await;
    assert_eq!(status, 401);
    assert_eq!(challenge.as_deref(), Some("Bearer realm=\"codemode\""));
    let (status, challenge, _) = call(
        &a.url,
        Some("tok-mallory"),
        "exec",
        json!({"code": "return 1"}),
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge.as_deref(),
        Some("Bearer realm=\"codemode\", error=\"invalid_token\"")
    );

    let parked = result(&a.url, Some("tok-alice"), "exec", json!({"code": PARK})).await;
    assert_eq!(parked["status"], "waiting", "{parked}");
    let run_id = parked["runId"].clone();
    // Bob sees neither Alice's run here nor on the other instance.
    for url in [&a.url, &b.url] {
        let refused = result(url, Some("tok-bob"), "wait", json!({"runId": run_id})).await;
        assert_eq!(
            refused["error"], "code mode run belongs to a different session.",
            "{refused}"
        );
    }
    let done = result(&b.url, Some("tok-alice"), "wait", json!({"runId": run_id})).await;
    assert_eq!(done["value"], 7, "{done}");

    // The cap: two parked runs per principal in one process; Bob is not affected.
    for _ in 0..2 {
        let parked = result(&a.url, Some("tok-alice"), "exec", json!({"code": PARK})).await;
        assert_eq!(parked["status"], "waiting", "{parked}");
    }
    let refused = result(&a.url, Some("tok-alice"), "exec", json!({"code": PARK})).await;
    assert_eq!(refused["status"], "failed");
    assert_eq!(refused["error"], "too many suspended code mode runs.");
    let bobs = result(&a.url, Some("tok-bob"), "exec", json!({"code": PARK})).await;
    assert_eq!(bobs["status"], "waiting", "{bobs}");

    drop(a);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("refused an MCP HTTP request without a valid bearer token"),
        "{logged}"
    );
    for token in ["tok-alice", "tok-bob", "tok-mallory"] {
        assert!(!logged.contains(token), "{token} in the log: {logged}");
    }
}

#[test]
fn a_non_loopback_bind_needs_auth_and_a_bad_auth_file_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["serve", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codemode: --http 0.0.0.0:0: not a loopback address; code mode hands whoever can reach it the configured tools, so serve it on 127.0.0.1 or ::1, or require bearer tokens with --auth FILE\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("tokens");
    std::fs::write(&bad, "not-a-hash alice\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["serve", "--http", "0.0.0.0:0", "--auth"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "codemode: --auth {}: line 1: expected `<sha256 hex of the token> <principal>`\n",
            bad.display()
        )
    );
}

/// Waits (at most 60 s) until `url`'s MCP servers are connected: an `exec` no longer names
/// unavailable servers.
async fn connected(url: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (_, _, message) = call(url, None, "exec", json!({"code": "return 1"})).await;
        if message["result"]["_meta"]["codemode/unavailableServers"].is_null() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{message}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// `SIGTERM` with a durable store: the `exec` in flight (a 30 s tool call) answers `waiting`
/// instead of an error, the process exits within a bound, and another instance resumes the run,
/// whose lost call rejects inside the program.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_parks_the_runs_in_flight_into_the_store() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = everything_servers(dir.path());
    let state = redis.url(2);
    let args = ["--state", &state, "--mcp-config", config.to_str().unwrap()];
    let a = Serve::start(&args);
    connected(&a.url).await;
    let code = "try { await MCP.everything.triggerLongRunningOperation({duration: 30, steps: 2}); return 'finished'; } catch (e) { return 'caught: ' + e.message; }";
    let url = a.url.clone();
    let exec = tokio::spawn(async move {
        call(
            &url,
            None,
            "exec",
            json!({"code": code, "timeoutMs": 60000}),
        )
        .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let stopping = std::time::Instant::now();
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(a.child.id() as i32, libc::SIGTERM) }, 0);
    let (status, _, message) = exec.await.unwrap();
    assert_eq!(status, 200, "{message}");
    let parked = &message["result"]["structuredContent"];
    assert_eq!(parked["status"], "waiting", "{message}");
    let mut a = a;
    let exited = loop {
        if let Some(status) = a.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            stopping.elapsed() < std::time::Duration::from_secs(10),
            "serve did not exit within 10 s of SIGTERM"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(exited.success(), "{exited:?}");
    let b = Serve::start(&args);
    // The record is sealed to the catalog: B must list the same tools first.
    connected(&b.url).await;
    let done = result(&b.url, None, "wait", json!({"runId": parked["runId"]})).await;
    assert_eq!(done["status"], "completed", "{done}");
    let value = done["value"].as_str().unwrap();
    assert!(
        value.starts_with("caught: tool call \"")
            && value.ends_with("\" was lost: the codemode process running it stopped"),
        "{value}"
    );
}

/// A tool `slow` that answers `{"slow": "done"}` after `delay_ms`, in a tools file in `dir`.
fn slow_tool(dir: &std::path::Path, delay_ms: u64) -> std::path::PathBuf {
    let path = dir.join("tools.json");
    let tools = json!([{"name": "slow", "result": {"slow": "done"}, "delayMs": delay_ms}]);
    std::fs::write(&path, tools.to_string()).unwrap();
    path
}

/// `serve` on `state` with the tools file `tools`, whose calls get `timeout_ms`.
fn serve_tools(state: &str, tools: &std::path::Path, timeout_ms: &str) -> Serve {
    let tools = tools.to_str().unwrap();
    Serve::start(&[
        "--state",
        state,
        "--tools",
        tools,
        "--timeout-ms",
        timeout_ms,
    ])
}

/// The program both owner tests run: one slow call, its failure handled by the program.
const SLOW: &str = "text('started'); try { const r = await tools.slow({}); text('after'); return r; } catch (e) { return 'caught: ' + e.message; }";

/// Parks [`SLOW`] on `a` (an instance whose calls get 500 ms) with the call in flight.
async fn park_slow(a: &Serve) -> Value {
    let parked = result(&a.url, None, "exec", json!({"code": SLOW})).await;
    assert_eq!(parked["status"], "waiting", "{parked}");
    assert_eq!(
        parked["pendingToolCalls"],
        json!([{"id": "bridge:callValue:1", "method": "callValue"}])
    );
    parked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_elsewhere_answer_when_the_owner_finishes_the_call() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tools = slow_tool(dir.path(), 3000);
    let state = redis.url(5);
    let a = serve_tools(&state, &tools, "500");
    let b = serve_tools(&state, &tools, "20000");
    let c = serve_tools(&state, &tools, "20000");
    let parked = park_slow(&a).await;
    let started = std::time::Instant::now();
    let wait = json!({"runId": parked["runId"]});
    let (on_b, on_c) = tokio::join!(
        result(&b.url, None, "wait", wait.clone()),
        result(&c.url, None, "wait", wait.clone())
    );
    let elapsed = started.elapsed();
    let done = json!({
        "status": "completed",
        "value": {"slow": "done"},
        "output": [{"type": "text", "text": "after"}],
        "replaySafe": false
    });
    assert_eq!(on_b, done);
    assert_eq!(on_c, done);
    eprintln!("waits on B and C answered {elapsed:?} after they started (tool: 3 s)");
    assert!(elapsed < std::time::Duration::from_secs(10), "{elapsed:?}");
    // A wait that starts after the run finished gets the contract's answer.
    let late = result(&c.url, None, "wait", wait).await;
    assert_eq!(late["error"], "code mode run is unavailable or expired.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_owner_loses_its_call_visibly_after_the_lease_expires() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tools = slow_tool(dir.path(), 60_000);
    let state = redis.url(6);
    let a = serve_tools(&state, &tools, "500");
    let b = serve_tools(&state, &tools, "20000");
    let parked = park_slow(&a).await;
    let url = b.url.clone();
    let wait = json!({"runId": parked["runId"]});
    let waiting = tokio::spawn(async move { result(&url, None, "wait", wait).await });
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let killed = std::time::Instant::now();
    drop(a); // SIGKILL: the owner lease is neither renewed nor dropped
    let done = waiting.await.unwrap();
    let after = killed.elapsed();
    assert_eq!(
        done,
        json!({
            "status": "completed",
            "value": "caught: tool call \"bridge:callValue:1\" was lost: the codemode process running it stopped",
            "output": [],
            "replaySafe": false
        })
    );
    eprintln!("the wait on B completed {after:?} after A was killed");
    assert!(
        after >= std::time::Duration::from_secs(3) && after < std::time::Duration::from_secs(10),
        "{after:?}"
    );
}

/// `serve` on `state` with the tools file `tools` and a config requiring approval for `slow`
/// (`--timeout-ms 500`: runs park half a second into a wait).
fn serve_approving(state: &str, tools: &std::path::Path, dir: &std::path::Path) -> Serve {
    let config = dir.join("config.json");
    let body = json!({"tools": {"approvals": {"require": ["slow"]}}});
    std::fs::write(&config, body.to_string()).unwrap();
    let (tools, config) = (tools.to_str().unwrap(), config.to_str().unwrap());
    Serve::start(&[
        "--state",
        state,
        "--tools",
        tools,
        "--config",
        config,
        "--timeout-ms",
        "500",
    ])
}

/// The program of the approval tests: one call that needs approval.
const APPROVED: &str = "text('asking'); const r = await tools.slow({}); text('ran'); return r;";

/// One stateless 2026-07-28 `exec` of [`APPROVED`] from a client that declared form
/// elicitation (`extra` adds `requestState` and `inputResponses`); the JSON-RPC result.
async fn exec_approved(url: &str, extra: Value) -> Value {
    call_eliciting(url, "exec", json!({"code": APPROVED}), extra).await
}

/// One stateless 2026-07-28 `tools/call` of `tool` with `arguments` from a client that declared
/// form elicitation, as an MRTR client does on every call (`extra` adds params); the JSON-RPC
/// result.
async fn call_eliciting(url: &str, tool: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    let capabilities = json!({"elicitation": {"form": {}}});
    let reply = post_2026(url, 1, "tools/call", params, capabilities, None).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let message = jsonrpc_response(&reply.text, 1).expect("a JSON-RPC response");
    message["result"].clone()
}

/// Asks through `a`: the `input_required` result's one approval id and its `requestState`.
async fn asked_on(a: &Serve) -> (String, String) {
    let asked = exec_approved(&a.url, json!({})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let requests = asked["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{asked}");
    let approval = requests.keys().next().unwrap().clone();
    assert!(approval.starts_with("approval_"), "{approval}");
    let state = asked["requestState"].as_str().unwrap().to_string();
    (approval, state)
}

/// The result of a run of [`APPROVED`] whose approval was granted.
fn approved_result() -> Value {
    json!({
        "status": "completed",
        "value": {"slow": "done"},
        "output": [{"type": "text", "text": "asking"}, {"type": "text", "text": "ran"}],
        "replaySafe": false
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_answered_through_another_instance_reaches_its_run() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tools = slow_tool(dir.path(), 0);
    let state = redis.url(7);
    let a = serve_approving(&state, &tools, dir.path());
    let b = serve_approving(&state, &tools, dir.path());
    let (approval, request_state) = asked_on(&a).await;
    // The balancer sends the retry to B: B accepts A's requestState (one key derived from the
    // shared sealing key), relays the answer to A, which holds the approval, and follows the
    // run until A's call is done.
    let approve = json!({"action": "accept", "content": {"approve": true}});
    let started = std::time::Instant::now();
    let done = exec_approved(
        &b.url,
        json!({"requestState": request_state.clone(), "inputResponses": {approval.clone(): approve.clone()}}),
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(done["structuredContent"], approved_result(), "{done}");
    eprintln!("the retry on B completed the run held by A in {elapsed:?}");
    assert!(elapsed < std::time::Duration::from_secs(5), "{elapsed:?}");
    // The same state again on B, which used it: refused.
    let replay = post_2026(
        &b.url,
        2,
        "tools/call",
        json!({"name": "exec", "arguments": {"code": APPROVED}, "requestState": request_state, "inputResponses": {approval: approve}}),
        json!({"elicitation": {"form": {}}}),
        None,
    )
    .await;
    let replay = jsonrpc_response(&replay.text, 2).unwrap();
    assert_eq!(
        replay["error"]["message"], "Invalid or expired requestState",
        "{replay}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_answered_after_its_instance_died_is_used_where_the_run_is_restored() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tools = slow_tool(dir.path(), 0);
    let state = redis.url(8);
    let a = serve_approving(&state, &tools, dir.path());
    let b = serve_approving(&state, &tools, dir.path());
    let (approval, request_state) = asked_on(&a).await;
    drop(a); // SIGKILL while the approval is outstanding: the owner lease lapses in 5 s
    let approve = json!({"action": "accept", "content": {"approve": true}});
    let retry = json!({"requestState": request_state, "inputResponses": {approval: approve}});
    // B holds the answer; its wait follows the run until A's lease lapses (answering
    // `waiting` when its 500 ms budget ends first), then restores the run, which asks the
    // approval again under the same id and finds the answer: the person is not asked twice.
    let first = exec_approved(&b.url, retry).await;
    let mut result = first["structuredContent"].clone();
    // The output is delivered once, across the answers: what the program wrote before it asked
    // (carried in the requestState) in the first, the rest in the last.
    let mut output = Vec::new();
    let started = std::time::Instant::now();
    while result["status"] == "waiting" && started.elapsed() < std::time::Duration::from_secs(20) {
        assert!(result.get("pendingApprovals").is_none(), "{result}");
        output.extend(result["output"].as_array().unwrap().iter().cloned());
        let wait = json!({"runId": result["runId"]});
        let answer = call_eliciting(&b.url, "wait", wait, json!({})).await;
        assert_ne!(
            answer["resultType"], "input_required",
            "asked again: {answer}"
        );
        result = answer["structuredContent"].clone();
    }
    output.extend(result["output"].as_array().unwrap().iter().cloned());
    result["output"] = Value::Array(output);
    assert_eq!(result, approved_result(), "{first}");
}

/// One stateless 2026-07-28 request of a client that declares the tasks extension and form
/// elicitation (as the SDKs' Tasks clients do); the JSON-RPC response.
async fn task_request(url: &str, method: &str, params: Value) -> Value {
    let capabilities = json!({
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    });
    let reply = post_2026(url, 1, method, params, capabilities, None).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    jsonrpc_response(&reply.text, 1).expect("a JSON-RPC response")
}

/// `exec` of `code` through `url` as a Tasks client: the id of the task it created.
async fn exec_task(url: &str, code: &str) -> String {
    let created = task_request(
        url,
        "tools/call",
        json!({"name": "exec", "arguments": {"code": code}}),
    )
    .await;
    created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string()
}

/// Polls `tasks/get` of `task` through `url` until its status is `status` (at most `secs`);
/// the last `tasks/get` result.
async fn poll_until(url: &str, task: &str, status: &str, secs: u64) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let got = task_request(url, "tasks/get", json!({"taskId": task})).await;
        let result = got["result"].clone();
        if result["status"] == status {
            return result;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still not {status}: {got}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// The one approval a task asks for in its `input_required` state `got`.
fn asked_approval(got: &Value) -> String {
    let requests = got["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{got}");
    let approval = requests.keys().next().unwrap().clone();
    assert!(approval.starts_with("approval_"), "{approval}");
    assert_eq!(requests[&approval]["method"], "elicitation/create", "{got}");
    approval
}

/// Answers `approval` of `task` through `url` with an approval.
async fn approve_task(url: &str, task: &str, approval: &str) {
    let approve = json!({"action": "accept", "content": {"approve": true}});
    let updated = task_request(
        url,
        "tasks/update",
        json!({"taskId": task, "inputResponses": {approval: approve}}),
    )
    .await;
    assert_eq!(
        updated["result"],
        json!({"resultType": "complete"}),
        "{updated}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_parked_on_one_instance_is_seen_answered_and_cancelled_through_another() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tools = slow_tool(dir.path(), 0);
    let state = redis.url(9);
    let a = serve_approving(&state, &tools, dir.path());
    let b = serve_approving(&state, &tools, dir.path());
    // The task is A's; B answers tasks/get from its record in Redis.
    let task = exec_task(&a.url, APPROVED).await;
    let asked = poll_until(&b.url, &task, "input_required", 10).await;
    assert_eq!(asked["taskId"], task.as_str());
    assert_eq!(asked["pollIntervalMs"], 1000);
    let approval = asked_approval(&asked);
    // Answered through B: relayed to A, which holds the approval and completes the run.
    approve_task(&b.url, &task, &approval).await;
    let done = poll_until(&b.url, &task, "completed", 20).await;
    assert_eq!(
        done["result"]["structuredContent"],
        approved_result(),
        "{done}"
    );
    assert!(done.get("pollIntervalMs").is_none(), "{done}");
    let on_a = task_request(&a.url, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(on_a["result"]["result"], done["result"], "{on_a}");
    // An id nobody created is unknown everywhere.
    let unknown = task_request(&b.url, "tasks/get", json!({"taskId": "cm_nobody"})).await;
    assert_eq!(
        unknown["error"]["message"], "Unknown task: cm_nobody",
        "{unknown}"
    );

    // A task on A with a call that takes a minute, cancelled through B: A aborts the run.
    let long = slow_tool(dir.path(), 60_000);
    let c = serve_tools(&state, &long, "500");
    let slow = exec_task(&c.url, SLOW).await;
    poll_until(&b.url, &slow, "working", 10).await;
    let cancelled = task_request(&b.url, "tasks/cancel", json!({"taskId": slow})).await;
    assert_eq!(
        cancelled["result"],
        json!({"resultType": "complete"}),
        "{cancelled}"
    );
    let on_c = poll_until(&c.url, &slow, "cancelled", 10).await;
    assert_eq!(on_c["taskId"], slow.as_str());
    poll_until(&b.url, &slow, "cancelled", 10).await;
    // The run is gone with its task: a wait anywhere finds nothing.
    let wait = result(&b.url, None, "wait", json!({"runId": slow})).await;
    assert_eq!(
        wait["error"], "code mode run is unavailable or expired.",
        "{wait}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_instance_died_is_taken_over_and_completed_by_another() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tools = slow_tool(dir.path(), 0);
    let state = redis.url(10);
    let a = serve_approving(&state, &tools, dir.path());
    let b = serve_approving(&state, &tools, dir.path());
    let task = exec_task(&a.url, APPROVED).await;
    let asked = poll_until(&b.url, &task, "input_required", 10).await;
    let approval = asked_approval(&asked);
    drop(a); // SIGKILL: its driver lease lapses in 5 s, its wait's claim when that wait's lease ends
    approve_task(&b.url, &task, &approval).await;
    // B takes the task over once A's lease lapsed, resumes the run from Redis (the approval,
    // asked again under its id, finds the relayed answer) and completes it with the whole
    // output: what A's exec wrote, then what B's resumption wrote.
    let done = poll_until(&b.url, &task, "completed", 60).await;
    assert_eq!(
        done["result"]["structuredContent"],
        approved_result(),
        "{done}"
    );
}
