// `cargo xtask interop`'s TypeScript client: `@modelcontextprotocol/client` 2.x (2026-07-28, chosen
// by `versionNegotiation: {mode: "auto"}`: the SDK's default is the legacy era) with
// `@modelcontextprotocol/ext-tasks` against `codemode serve --http`.
//
// Usage: node ts_client.mjs URL
//
// Three scenarios, one `RESULT <name> <json>` line each on stdout (xtask/src/interop.rs checks
// them):
// - `task`: a task session (ext-tasks' `createTaskSessionFromClient` over a connected Client)
//   calls `exec` on a program that parks on a slow tool; the answer is a task, which ext-tasks
//   settles by polling `tasks/get`. The SDK's own wire codec rejects the task result shape
//   (`resultType: "task"`), so ext-tasks asks the host for a raw request path (`rawDispatch`):
//   here a `fetch` POST per request with the 2026-07-28 headers, which also counts the requests.
// - `tasks_update`: the same session on a program whose tool needs approval: the task reports
//   `input_required`, ext-tasks hands the elicitation to `onInputRequest` (which approves) and
//   answers with `tasks/update`.
// - `mrtr`: the plain Client (no tasks extension) with an `elicitation/create` handler: the
//   approval comes back as `input_required`, the SDK's multi-round-trip driver calls the handler
//   and retries with `inputResponses` and `requestState`.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from "@modelcontextprotocol/ext-tasks/client";

const url = process.argv[2];
const VERSION = "2026-07-28";
const TASKS = "io.modelcontextprotocol/tasks";
const SLOW =
  "const r = await MCP.everything.triggerLongRunningOperation({duration: 2, steps: 2});" +
  " console.log('after the slow tool'); return r.content[0].text;";
const GATED = "const r = await MCP.everything.getSum({a: 2, b: 40}); return r.content[0].text;";
const clientInfo = { name: "codemode-interop-ts", version: "1" };
const capabilities = { elicitation: { form: {} }, extensions: { [TASKS]: {} } };

function report(name, value) {
  process.stdout.write(`RESULT ${name} ${JSON.stringify(value)}\n`);
}

// One JSON-RPC request as its own HTTP POST (the 2026-07-28 transport: no session), counted by
// method. `Mcp-Name` carries the tool of a `tools/call` and the task of a `tasks/*` request.
function rawDispatcher(counts) {
  let id = 1000;
  return async (request, options = {}) => {
    const body = { ...request, jsonrpc: "2.0", id: request.id ?? id++ };
    counts[body.method] = (counts[body.method] ?? 0) + 1;
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": VERSION,
      "mcp-method": body.method,
    };
    const name = body.params?.name ?? body.params?.taskId;
    if (typeof name === "string") headers["mcp-name"] = name;
    const response = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: options.signal,
    });
    const text = await response.text();
    let message;
    if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
      message = text
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => JSON.parse(line.slice(5)))
        .find((m) => m.id === body.id);
    } else {
      message = JSON.parse(text);
    }
    if (message === undefined) throw new Error(`no response to ${body.method}: ${text}`);
    return message.error !== undefined
      ? { kind: "error", error: message.error }
      : { kind: "result", result: message.result };
  };
}

async function connect(declareTasks, setup = () => {}) {
  const client = new Client(clientInfo, {
    capabilities: declareTasks ? capabilities : { elicitation: { form: {} } },
    // The SDK speaks the legacy era unless asked: probe with `server/discover`.
    versionNegotiation: { mode: "auto" },
  });
  setup(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function withTasks(name, code) {
  const client = await connect(true);
  const counts = {};
  const asked = [];
  const statuses = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: "codemode-interop",
    rawDispatch: rawDispatcher(counts),
    v2RequestFraming: { protocolVersion: VERSION, clientInfo, clientCapabilities: capabilities },
    onInputRequest: async (request) => {
      asked.push(String(request.params.message).split("\n")[0]);
      return { action: "accept", content: { approve: true } };
    },
  });
  try {
    const execution = await session.callTool("exec", { code });
    const { outcome } = await execution.settle({
      onEvent: (event) => {
        const status = event.type === "task" ? event.task.status : event.outcome.status;
        if (statuses.at(-1) !== status) statuses.push(status);
      },
    });
    const result = resultFromTaskOutcome(outcome);
    report(name, {
      kind: execution.kind,
      protocol: client.getNegotiatedProtocolVersion(),
      counts,
      statuses,
      asked,
      structuredContent: result.structuredContent,
    });
  } finally {
    await session.close();
    await client.close();
  }
}

async function withMrtr() {
  const asked = [];
  const client = await connect(false, (c) =>
    c.setRequestHandler("elicitation/create", async (request) => {
      asked.push(String(request.params.message).split("\n")[0]);
      return { action: "accept", content: { approve: true } };
    }),
  );
  try {
    const result = await client.callTool({ name: "exec", arguments: { code: GATED } });
    report("mrtr", {
      protocol: client.getNegotiatedProtocolVersion(),
      asked,
      structuredContent: result.structuredContent,
    });
  } finally {
    await client.close();
  }
}

await withTasks("task", SLOW);
await withTasks("tasks_update", GATED);
await withMrtr();
