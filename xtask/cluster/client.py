"""The `cargo xtask cluster` client: the Python `mcp` SDK's `Client` in its default mode
(2026-07-28, stateless: every POST stands alone), with a bearer token.

Usage:
  client.py call URL TOKEN TOOL JSON_ARGUMENTS
      one tools/call; prints the result's structuredContent as one JSON line
  client.py many URL TOKEN COUNT WORKERS
      COUNT programs `text('run i'); await yield_control(); return i`, WORKERS at a time: each
      `exec` parks, then one `wait` resumes it; prints one JSON line
      {"completed": [i...], "failed": [...], "seconds": s}
"""

import json
import sys
import time

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def client(url, token):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120.0)
    return Client(streamable_http_client(url, http_client=http))


async def call(url, token, tool, arguments):
    async with client(url, token) as c:
        result = await c.call_tool(tool, arguments)
        print(json.dumps(result.structured_content), flush=True)


async def many(url, token, count, workers):
    completed, failed = [], []
    todo = list(range(count))
    started = time.monotonic()

    async def worker():
        async with client(url, token) as c:
            while todo:
                i = todo.pop()
                code = f"text('run {i}'); await yield_control(); return {i}"
                parked = (await c.call_tool("exec", {"code": code})).structured_content or {}
                if parked.get("status") != "waiting":
                    failed.append({"i": i, "exec": parked})
                    continue
                done = (await c.call_tool("wait", {"runId": parked["runId"]})).structured_content or {}
                if done.get("status") == "completed" and done.get("value") == i:
                    completed.append(i)
                else:
                    failed.append({"i": i, "wait": done})

    async with anyio.create_task_group() as group:
        for _ in range(workers):
            group.start_soon(worker)
    print(json.dumps({"completed": completed, "failed": failed[:5], "failedCount": len(failed),
                      "seconds": time.monotonic() - started}), flush=True)


def main():
    command = sys.argv[1]
    if command == "call":
        anyio.run(call, sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5]))
    elif command == "many":
        anyio.run(many, sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(f"unknown command {command}")


main()
