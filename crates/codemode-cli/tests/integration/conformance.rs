//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, installed into
//! `target/conformance` by `cargo xtask setup`, with Node 22 from npm when the system Node is
//! older) against codemode, both ways:
//!
//! - its **server** scenarios (the "active" suite) against `codemode serve --http 127.0.0.1:0`;
//! - its **client** scenarios (the "all" suite: `initialize`, `tools_call`, `sse-retry`,
//!   `elicitation-*`, the OAuth `auth/*` scenarios, back-compat, draft and extensions) against
//!   codemode's MCP client, `codemode exec --mcp-config` driven by `tests/conformance/client.sh`.
//!
//! The 2026-07-28 line's fixture scenarios (the `input-required-result-*` and `tasks-*` ones,
//! written against the SDKs' everything-servers) run against `codemode serve --http` with code
//! mode off aggregating our own fixture server, `codemode-mcp-fixture`, and so do both lines'
//! scenarios of the suite's everything server (its test tools, prompts, resources, logging and
//! completions: `FIXTURE_2025`, `FIXTURE_2026_EVERYTHING`), which with code mode on can only
//! fail (docs/mcp.md, "The everything-server scenarios through `serve` with code mode off").
//!
//! `tests/conformance-expected-failures.txt` lists the scenarios expected to fail, each with its
//! reason. A test fails on a failure not listed there and on a listed scenario that passes (or
//! did not run); the suite's own `--expected-failures` baseline, written from the same list,
//! must agree (its exit status is checked too, for the 0.1.16 line; the 0.2.0-alpha line's exit
//! status disagrees with its own summary, so there the summary decides). Without the suite installed the tests skip with
//! a message, unless `CODEMODE_CONFORMANCE` names its directory (as `cargo xtask test` does):
//! then a missing suite is a failure.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde_json::json;

use codemode_test_support::mcp::request_2026;

/// The tests of this file run one at a time: `sse-retry` times the client's reconnection to
/// within 200 ms, which two suites starting codemode processes beside it on two cores can miss.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `<mode> <scenario>` → reason, from `tests/conformance-expected-failures.txt`; the mode is
/// `server`, `client` or `fixture` (a server scenario run through `serve` with code mode off).
type Expected = BTreeMap<(String, String), String>;

/// One release line of the suite: where `cargo xtask setup` installs it under
/// `target/conformance` and which file lists its expected failures.
#[derive(Clone, Copy)]
struct Line {
    /// The suite's entry point, relative to `target/conformance`.
    entry: &'static str,
    /// The expected-failures file, relative to the crate.
    expected: &'static str,
    /// Whether the suite's exit status agrees with its per-scenario summary under the
    /// `--expected-failures` baseline. 0.2.0-alpha.12's does not: with the baseline it still
    /// lists scenarios its own summary shows passing (`sep-2164-resource-not-found: 2 passed,
    /// 0 failed`, `input-required-result-ignore-extra-params`, …) as "unexpected failures" and
    /// exits 1, so for it the summary lines are the verdict and the exit status only a note.
    trusts_exit_status: bool,
}

/// `@modelcontextprotocol/conformance` 0.1.16 (protocol 2025-11-25 and older).
const LINE_2025: Line = Line {
    entry: "node_modules/@modelcontextprotocol/conformance/dist/index.js",
    expected: "tests/conformance-expected-failures.txt",
    trusts_exit_status: true,
};

/// `@modelcontextprotocol/conformance` 0.2.0-alpha.12 (protocol 2026-07-28), installed under
/// the npm alias `mcp-conformance-2026-07-28` (xtask/src/conformance.rs).
const LINE_2026: Line = Line {
    entry: "node_modules/mcp-conformance-2026-07-28/dist/index.js",
    expected: "tests/conformance-2026-expected-failures.txt",
    trusts_exit_status: false,
};

fn expected_failures(line: Line) -> Expected {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(line.expected);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut expected = Expected::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.splitn(3, ' ');
        let (mode, scenario, reason) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default().trim(),
        );
        assert!(
            matches!(mode, "server" | "client" | "fixture")
                && !scenario.is_empty()
                && !reason.is_empty(),
            "{}:{}: expected `<server|client|fixture> <scenario>  <reason>`, got {line:?}",
            path.display(),
            n + 1
        );
        let old = expected.insert((mode.to_owned(), scenario.to_owned()), reason.to_owned());
        assert!(
            old.is_none(),
            "{}:{}: {mode} {scenario} is listed twice",
            path.display(),
            n + 1
        );
    }
    expected
}

/// The installed suite: (node binary, the suite's `dist/index.js`), or `None` (after a message)
/// when it is not installed and `CODEMODE_CONFORMANCE` is unset.
fn suite(line: Line) -> Option<(PathBuf, PathBuf)> {
    let configured = std::env::var_os("CODEMODE_CONFORMANCE").map(PathBuf::from);
    let dir = configured
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/conformance"));
    let entry = dir.join(line.entry);
    if !entry.exists() {
        assert!(
            configured.is_none(),
            "CODEMODE_CONFORMANCE={} but the conformance suite is not installed there; run `cargo xtask setup`",
            dir.display()
        );
        eprintln!(
            "SKIPPED: the MCP conformance suite is not installed ({} is missing); `cargo xtask setup` installs it",
            entry.display()
        );
        return None;
    }
    let local_node = dir.join("node_modules/.bin/node");
    let node = if local_node.exists() {
        local_node
    } else {
        PathBuf::from("node")
    };
    Some((node, entry))
}

/// Kills and reaps the child when dropped (a failing assertion must not leave `serve` running).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One scenario's line of the suite's summary: `✓ name: 3 passed, 0 failed[, 1 warnings]`;
/// (name, passed) where passed means no failed check and no warning (the suite's own rule).
fn summary_line(line: &str) -> Option<(String, bool)> {
    let rest = line
        .strip_prefix("✓ ")
        .or_else(|| line.strip_prefix("✗ "))?;
    let (name, counts) = rest.rsplit_once(": ")?;
    let mut failed = None;
    let mut warnings = 0;
    for part in counts.split(", ") {
        let (n, what) = part.split_once(' ')?;
        let n: u32 = n.parse().ok()?;
        match what {
            "passed" => {}
            "failed" => failed = Some(n),
            "warnings" => warnings = n,
            _ => return None,
        }
    }
    Some((name.to_owned(), failed? == 0 && warnings == 0))
}

/// The outcome of a single `--scenario` run: its `Passed: 3/3, 0 failed, 0 warnings` line;
/// passed means no failed check and no warning.
fn single_line(line: &str) -> Option<bool> {
    let counts = line.strip_prefix("Passed: ")?;
    let mut parts = counts.split(", ");
    parts.next()?;
    let failed: u32 = parts.next()?.strip_suffix(" failed")?.parse().ok()?;
    let warnings: u32 = parts.next()?.strip_suffix(" warnings")?.parse().ok()?;
    Some(failed == 0 && warnings == 0)
}

/// Runs the suite once per entry of `runs` (the arguments after `node index.js`; a run with
/// `--scenario NAME` is one scenario, any other a suite whose summary names each scenario),
/// each with the baseline written from the expected failures of `mode`, and checks every
/// scenario's outcome against that list.
fn run_suite(
    line: Line,
    mode: &str,
    node: &Path,
    entry: &Path,
    runs: &[Vec<&str>],
    envs: &[(&str, &Path)],
) {
    let expected: BTreeMap<String, String> = expected_failures(line)
        .into_iter()
        .filter(|((m, _), _)| m == mode)
        .map(|((_, scenario), reason)| (scenario, reason))
        .collect();
    let work = tempfile::tempdir().unwrap();
    let baseline = work.path().join("expected-failures.yml");
    // The suite knows two sides; fixture scenarios are server scenarios.
    let side = if mode == "fixture" { "server" } else { mode };
    let yaml: String = std::iter::once(format!("{side}:\n"))
        .chain(expected.keys().map(|s| format!("  - {s:?}\n")))
        .collect();
    std::fs::write(
        &baseline,
        if expected.is_empty() {
            format!("{side}: []\n")
        } else {
            yaml
        },
    )
    .unwrap();
    let started = Instant::now();
    let mut results = BTreeMap::<String, bool>::new();
    let mut problems = Vec::new();
    let mut transcript = String::new();
    for args in runs {
        let mut command = Command::new(node);
        command
            .arg(entry)
            .args(args)
            .arg("--expected-failures")
            .arg(&baseline)
            .current_dir(work.path())
            .env("NO_COLOR", "1");
        for (key, value) in envs {
            command.env(key, value);
        }
        let output = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        transcript.push_str(&format!(
            "--- {args:?}: {}\n{stdout}\n--- stderr\n{stderr}\n",
            output.status
        ));
        let before = results.len();
        match args.iter().position(|a| *a == "--scenario") {
            Some(i) => {
                // On stderr for a client scenario, on stdout for a server scenario.
                let outcome = stderr.lines().chain(stdout.lines()).find_map(single_line);
                match outcome {
                    Some(passed) => {
                        results.insert(args[i + 1].to_owned(), passed);
                    }
                    None => problems.push(format!("{}: no result line", args[i + 1])),
                }
            }
            None => results.extend(stdout.lines().filter_map(summary_line)),
        }
        if results.len() == before {
            problems.push(format!("{args:?}: no scenario ran"));
        }
        // The suite's own verdict on the same baseline (checked when ours finds nothing), where
        // it can be trusted (`Line::trusts_exit_status`).
        if !output.status.success() {
            if line.trusts_exit_status {
                problems.push(format!("{args:?}: the suite exited with {}", output.status));
            } else {
                eprintln!(
                    "{args:?}: the suite exited with {} (not trusted for this line: the verdict is its per-scenario summary)",
                    output.status
                );
            }
        }
    }
    let elapsed = started.elapsed();
    eprintln!(
        "conformance {mode} scenarios: {} run, {} passed, {} expected failures, in {:.1} s",
        results.len(),
        results.values().filter(|p| **p).count(),
        expected.len(),
        elapsed.as_secs_f64()
    );
    let mut verdicts = Vec::new();
    for (scenario, passed) in &results {
        match (passed, expected.get(scenario)) {
            (false, None) => verdicts.push(format!(
                "{scenario}: FAILED, and it is not an expected failure"
            )),
            (true, Some(reason)) => verdicts.push(format!(
                "{scenario}: PASSED but is listed as an expected failure ({reason}); remove it from tests/conformance-expected-failures.txt"
            )),
            _ => {}
        }
    }
    for scenario in expected.keys().filter(|s| !results.contains_key(*s)) {
        verdicts.push(format!(
            "{scenario}: listed as an expected failure but did not run"
        ));
    }
    // Our verdicts first: the suite's exit status only adds something when they are silent.
    if !verdicts.is_empty() {
        problems.retain(|p| !p.contains("the suite exited with"));
        problems.splice(0..0, verdicts);
    }
    assert!(
        problems.is_empty(),
        "conformance {mode} scenarios:\n  {}\n{transcript}",
        problems.join("\n  ")
    );
}

/// `codemode serve --http 127.0.0.1:0` with `args` after it, and the URL it serves.
fn serve_http(args: &[&str]) -> (Reaped, String) {
    let mut serve = codemode_test_support::process::spawn_with(
        Command::new(env!("CARGO_BIN_EXE_codemode"))
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args),
        Stdio::null(),
        Stdio::null(),
        Stdio::piped(),
    );
    let stderr = serve.stderr.take().unwrap();
    let serve = Reaped(serve);
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("codemode serve exited before printing its URL")
            .unwrap();
        if let Some(url) = line.strip_prefix("codemode: serving MCP over streamable HTTP at ") {
            break url.to_owned();
        }
    };
    // Keep draining serve's stderr so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (serve, url)
}

/// The server scenarios of `line` (`server --url <url> <extra>…`) against `codemode serve
/// --http` with code mode on.
fn server_scenarios(line: Line, extra: &[&str]) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((node, entry)) = suite(line) else {
        return;
    };
    let (serve, url) = serve_http(&[]);
    let run = [&["server", "--url", url.as_str()][..], extra].concat();
    run_suite(line, "server", &node, &entry, &[run], &[]);
    drop(serve);
}

/// The fixture scenarios of the 2026-07-28 line: SEP-2322's `input_required` ones and the
/// Tasks extension's (SEP-2663).
const FIXTURE_2026: [&str; 24] = [
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-missing-input-response",
    "input-required-result-non-tool-request",
    "input-required-result-result-type",
    "input-required-result-unsupported-methods",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// The tools of `codemode-mcp-fixture` (src/bin/codemode-mcp-fixture/ in codemode-mcp): 8
/// MRTR tools, 7 task tools and the everything server's 13 (`test_simple_text`, …,
/// `json_schema_2020_12_tool`).
const FIXTURE_TOOLS: usize = 28;

/// The 2026-07-28 line's scenarios of the suite's everything server (its test tools, prompts
/// and resources) that apply at 2026-07-28, run through `serve` over the fixture with
/// `--spec-version 2026-07-28`.
const FIXTURE_2026_EVERYTHING: [&str; 19] = [
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "json-schema-2020-12",
    "completion-complete",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
];

/// The 0.1.16 line's scenarios of the suite's everything server, run through `serve` over the
/// fixture.
const FIXTURE_2025: [&str; 27] = [
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "json-schema-2020-12",
    "logging-set-level",
    "completion-complete",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
];

/// Waits until `serve` at `url` lists the fixture server's tools (servers connect in the
/// background), at most 30 s; the names it lists.
fn fixture_tools_listed(url: &str) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let deadline = Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let listed = request_2026(url, 1, "tools/list", json!({}), json!({})).await;
            let names: Vec<String> = listed["result"]["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|tool| tool["name"].as_str().map(str::to_string))
                .collect();
            if names.len() >= FIXTURE_TOOLS || Instant::now() > deadline {
                return names;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
}

/// `codemode serve --http` with code mode off (`{"tools": {"codeMode": false}}`) aggregating
/// `codemode-mcp-fixture` under `--bare-names` (the scenarios call the fixture's tools and
/// prompts by their own names), once it lists the fixture's tools; its URL, and the directory of
/// its config files (kept while it runs).
fn serve_over_fixture() -> (Reaped, String, tempfile::TempDir) {
    // Built beside `codemode` by `cargo test --workspace` (a bin of codemode-mcp).
    let fixture = Path::new(env!("CARGO_BIN_EXE_codemode")).with_file_name("codemode-mcp-fixture");
    assert!(
        fixture.exists(),
        "{} is missing: `cargo test --workspace --no-run` (or `cargo build -p codemode-mcp`) builds it",
        fixture.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");
    std::fs::write(
        &servers,
        json!({"mcpServers": {"fixture": {"command": fixture}}}).to_string(),
    )
    .unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"tools": {"codeMode": false}}"#).unwrap();
    let (serve, url) = serve_http(&[
        "--mcp-config",
        servers.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--bare-names",
    ]);
    let listed = fixture_tools_listed(&url);
    assert_eq!(
        listed.len(),
        FIXTURE_TOOLS,
        "serve lists the fixture's tools under their own names: {listed:?}"
    );
    assert!(listed.contains(&"test_input_required_result_elicitation".to_string()));
    assert!(listed.contains(&"test_simple_text".to_string()));
    (serve, url, dir)
}

/// The 2026-07-28 line's fixture scenarios, one at a time, against `codemode serve --http` with
/// code mode off over `codemode-mcp-fixture` ([`serve_over_fixture`]): the `input-required-*`
/// and `tasks-*` ones, then the everything server's at `--spec-version 2026-07-28`.
#[test]
fn fixture_scenarios_2026_07_28_through_serve_with_code_mode_off() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((node, entry)) = suite(LINE_2026) else {
        return;
    };
    let (serve, url, _dir) = serve_over_fixture();
    let mut runs: Vec<Vec<&str>> = FIXTURE_2026
        .iter()
        .map(|scenario| vec!["server", "--url", &url, "--scenario", scenario])
        .collect();
    runs.extend(FIXTURE_2026_EVERYTHING.iter().map(|scenario| {
        vec![
            "server",
            "--url",
            &url,
            "--scenario",
            scenario,
            "--spec-version",
            "2026-07-28",
        ]
    }));
    run_suite(LINE_2026, "fixture", &node, &entry, &runs, &[]);
    drop(serve);
}

/// The 0.1.16 line's everything-server scenarios (`FIXTURE_2025`), one at a time, against
/// `codemode serve --http` with code mode off over `codemode-mcp-fixture`
/// ([`serve_over_fixture`]): the pass-through of tools, prompts, resources, sampling and
/// elicitation that the code-mode-on run cannot show.
#[test]
fn fixture_scenarios_through_serve_with_code_mode_off() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((node, entry)) = suite(LINE_2025) else {
        return;
    };
    let (serve, url, _dir) = serve_over_fixture();
    let runs: Vec<Vec<&str>> = FIXTURE_2025
        .iter()
        .map(|scenario| vec!["server", "--url", &url, "--scenario", scenario])
        .collect();
    run_suite(LINE_2025, "fixture", &node, &entry, &runs, &[]);
    drop(serve);
}

/// The conformance client driver, tests/conformance/client.sh, as a canonical path.
fn client_driver() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance/client.sh")
        .canonicalize()
        .unwrap()
}

/// The client scenarios of `line` against `codemode exec --mcp-config` ([`client_driver`]):
/// each of `scenarios` on its own (`--scenario NAME`), then one run per entry of `suites` (the
/// arguments after the driver, such as `--suite auth`). Tokens the OAuth scenarios store go to a
/// scratch `XDG_CONFIG_HOME`.
fn client_scenarios(line: Line, scenarios: &[&str], suites: &[&[&str]]) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((node, entry)) = suite(line) else {
        return;
    };
    let driver = client_driver();
    let driver_str = driver.to_str().unwrap();
    // The suite splits --command on spaces.
    assert!(
        !driver_str.contains(' '),
        "the driver's path has a space: {driver_str}"
    );
    let config = tempfile::tempdir().unwrap();
    let client = ["client", "--command", driver_str];
    let mut runs: Vec<Vec<&str>> = scenarios
        .iter()
        .map(|scenario| [&client[..], &["--scenario", scenario]].concat())
        .collect();
    runs.extend(suites.iter().map(|args| [&client[..], args].concat()));
    run_suite(
        line,
        "client",
        &node,
        &entry,
        &runs,
        &[
            ("CODEMODE_BIN", Path::new(env!("CARGO_BIN_EXE_codemode"))),
            ("XDG_CONFIG_HOME", config.path()),
        ],
    );
}

#[test]
fn server_scenarios_against_codemode_serve_http() {
    server_scenarios(LINE_2025, &[]);
}

/// The 2026-07-28 line's server scenarios (`--suite all --spec-version 2026-07-28`: every
/// scenario of that revision, with the draft ones: stateless, caching, header validation) against
/// `codemode serve --http` with code mode on.
/// The suite's exit status is not trusted for this line (`Line::trusts_exit_status`): every
/// scenario's summary line is checked against the expected failures instead.
#[test]
fn server_scenarios_2026_07_28_against_codemode_serve_http() {
    server_scenarios(
        LINE_2026,
        &["--suite", "all", "--spec-version", "2026-07-28"],
    );
}

/// The 2026-07-28 line's client scenarios that are not OAuth (request metadata, request
/// state, standard and custom headers, JSON Schema) one at a time, then its `auth` suite at
/// 2026-07-28, against `codemode exec --mcp-config` (tests/conformance/client.sh).
#[test]
fn client_scenarios_2026_07_28_against_codemode_exec_mcp_config() {
    client_scenarios(
        LINE_2026,
        &CLIENT_2026,
        &[&["--suite", "auth", "--spec-version", "2026-07-28"]],
    );
}

/// The 2026-07-28 line's client scenarios outside the `auth` suite.
const CLIENT_2026: [&str; 8] = [
    "tools_call",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
];

/// Every client scenario of the 0.1.16 suite ("all" = these four, then the auth, back-compat,
/// draft and extension suites). The four run one at a time: sse-retry measures the reconnection
/// delay to within 200 ms, which 25 clients starting at once on two cores can miss.
#[test]
fn client_scenarios_against_codemode_exec_mcp_config() {
    client_scenarios(
        LINE_2025,
        &[
            "initialize",
            "tools_call",
            "sse-retry",
            "elicitation-sep1034-client-defaults",
        ],
        &[
            &["--suite", "auth"],
            &["--suite", "backcompat"],
            &["--suite", "draft"],
            &["--suite", "extensions"],
        ],
    );
}

/// The token of one authorization is stored (0600 file in a 0700 directory under
/// `XDG_CONFIG_HOME`) and the next run uses it: the suite's `auth/metadata-default` scenario
/// with the client run twice sees one authorization URL, every check passes (the second run's
/// requests carry the stored bearer token) and the client exits 0 both times.
#[test]
fn oauth_token_is_stored_and_reused_by_the_next_run() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((node, entry)) = suite(LINE_2025) else {
        return;
    };
    let driver = client_driver();
    let config = tempfile::tempdir().unwrap();
    let log = config.path().join("authorization-urls.log");
    let output = Command::new(node)
        .arg(entry)
        .args(["client", "--command"])
        .arg(&driver)
        .args(["--scenario", "auth/metadata-default"])
        .current_dir(config.path())
        .env("NO_COLOR", "1")
        .env("CODEMODE_BIN", env!("CARGO_BIN_EXE_codemode"))
        .env("XDG_CONFIG_HOME", config.path())
        .env("CODEMODE_CONFORMANCE_RUNS", "2")
        .env("CODEMODE_CONFORMANCE_LOG", &log)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stderr.contains("OVERALL: PASSED"),
        "{}\n{stderr}",
        output.status
    );
    let urls = std::fs::read_to_string(&log).unwrap();
    let urls: Vec<&str> = urls.lines().collect();
    assert_eq!(urls.len(), 1, "one authorization for two runs: {urls:?}");
    assert!(
        urls[0].starts_with("http://localhost:")
            && urls[0].contains("/authorize?")
            && urls[0].contains("code_challenge_method=S256")
            && urls[0].contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A"),
        "{}",
        urls[0]
    );
    let dir = config.path().join("codemode/oauth");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&files[0]), 0o600);
    }
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    let url = stored["url"].as_str().unwrap();
    assert!(
        url.starts_with("http://localhost:") && url.ends_with("/mcp"),
        "{url}"
    );
    assert_eq!(
        stored["credentials"]["token_response"]["token_type"],
        "bearer"
    );
    assert!(stored["credentials"]["token_response"]["access_token"]
        .as_str()
        .is_some_and(|t| !t.is_empty()));
}
