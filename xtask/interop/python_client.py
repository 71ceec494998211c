"""`cargo xtask interop`'s Python SDK client: the `mcp` 2.x `Client` (2026-07-28, stateless) against
`codemode serve --http`.

Usage: python_client.py URL [settle]

With `settle`, it only waits (at most 60 s) until `serve` reaches server-everything (an `exec`
of `typeof MCP.everything` answers "object"), then prints `RESULT settle {}`.

Three scenarios, one `RESULT <name> <json>` line each on stdout (xtask/src/interop.rs checks them):

- `task`: a client with the tasks extension (`io.modelcontextprotocol/tasks`, declared through the
  SDK's extension interface, SEP-2133) calls `exec` on a program that parks on a slow tool. The
  `tools/call` answer is a task (`resultType: "task"`), which the extension's claim resolves by
  polling `tasks/get` every `pollIntervalMs` until `completed`; the line carries the statuses
  seen, the number of `tools/call` and `tasks/get` requests, and the final `structuredContent`.
- `tasks_update`: the same client on a program whose tool needs approval: `tasks/get` reports
  `input_required` with one `elicitation/create` per approval; the resolver approves with
  `tasks/update` and polls on to `completed`.
- `mrtr`: a client without the tasks extension but with an elicitation callback: the approval comes
  back as `resultType: "input_required"`, the SDK's driver calls the callback (which approves) and
  retries with `inputResponses` and `requestState`.
"""

import json
import sys
from typing import Any, Literal

import anyio
from mcp import Client, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import Request, Result
from pydantic import ConfigDict, Field, TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"
SLOW = "const r = await MCP.everything.triggerLongRunningOperation({duration: 2, steps: 2});" \
    " console.log('after the slow tool'); return r.content[0].text;"
GATED = "const r = await MCP.everything.getSum({a: 2, b: 40}); return r.content[0].text;"
ANY = TypeAdapter(dict[str, Any])


def report(name, value):
    sys.stdout.write(f"RESULT {name} {json.dumps(value)}\n")
    sys.stdout.flush()


class TaskRequest(Request[dict[str, Any], str]):
    """A `tasks/*` request; its `taskId` goes into the `Mcp-Name` header (SEP-2663)."""

    name_param = "taskId"


class CreatedTask(Result):
    """The `tools/call` answer of a run that parked: a task (the extension's result shape)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class Tasks(ClientExtension):
    """The tasks extension: follows a task to its end like a client host, counting requests."""

    identifier = TASKS

    def __init__(self):
        self.log = {"toolsCall": 0, "tasksGet": 0, "tasksUpdate": 0, "statuses": [], "asked": []}

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.follow)]

    async def send(self, ctx: ClaimContext, method, params):
        return await ctx.session.send_request(TaskRequest(method=method, params=params), ANY)

    async def follow(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        self.log["toolsCall"] += 1
        self.log["statuses"].append(created.status)
        answered = set()
        with anyio.fail_after(60):
            while True:
                got = await self.send(ctx, "tasks/get", {"taskId": created.task_id})
                self.log["tasksGet"] += 1
                status = got["status"]
                if not self.log["statuses"] or self.log["statuses"][-1] != status:
                    self.log["statuses"].append(status)
                if status == "completed":
                    return types.CallToolResult.model_validate(got["result"], by_name=False)
                if status in ("failed", "cancelled"):
                    raise RuntimeError(f"task {status}: {json.dumps(got)}")
                if status == "input_required":
                    # Each input request is answered once: a `tasks/get` right after the
                    # `tasks/update` can still list it until the run has taken the answer.
                    requests = {key: request for key, request in got["inputRequests"].items()
                                if key not in answered}
                    for request in requests.values():
                        self.log["asked"].append(request["params"]["message"].splitlines()[0])
                    if requests:
                        answers = {key: {"action": "accept", "content": {"approve": True}}
                                   for key in requests}
                        await self.send(ctx, "tasks/update",
                                        {"taskId": created.task_id, "inputResponses": answers})
                        answered.update(answers)
                        self.log["tasksUpdate"] += 1
                        continue
                await anyio.sleep(got.get("pollIntervalMs", 1000) / 1000)


async def with_tasks(url, name, code):
    tasks = Tasks()
    async with Client(url, extensions=[tasks]) as client:
        result = await client.call_tool("exec", {"code": code})
        report(name, dict(tasks.log, protocol=client.protocol_version,
                          structuredContent=result.structured_content))


async def with_mrtr(url):
    asked = []

    async def elicit(context, params):
        asked.append(params.message.splitlines()[0])
        return types.ElicitResult(action="accept", content={"approve": True})

    async with Client(url, elicitation_callback=elicit) as client:
        result = await client.call_tool("exec", {"code": GATED})
        report("mrtr", {"asked": asked, "protocol": client.protocol_version,
                        "structuredContent": result.structured_content})


async def settle(url):
    async with Client(url) as client:
        with anyio.fail_after(60):
            while True:
                result = await client.call_tool("exec", {"code": "return typeof MCP.everything"})
                if (result.structured_content or {}).get("value") == "object":
                    report("settle", {})
                    return
                await anyio.sleep(0.2)


async def main(url):
    await with_tasks(url, "task", SLOW)
    await with_tasks(url, "tasks_update", GATED)
    await with_mrtr(url)


anyio.run(settle if sys.argv[2:] == ["settle"] else main, sys.argv[1])
