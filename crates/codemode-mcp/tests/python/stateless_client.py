"""A stateless (2026-07-28) MCP client on the Python `mcp` SDK for the serve tests.

Usage: stateless_client.py URL CODE [PAUSE_SECONDS]

`mcp.Client(URL)` in its default mode probes `server/discover` and speaks the stateless era:
every POST stands alone, with no session. It runs one `exec` with CODE, then `wait`s on the
`runId` while the result is `waiting` (at most 20 times, each after PAUSE_SECONDS, default 0),
and reports on stdout one
`RESULT <json>` line per call: `{"tool", "protocol", "isError", "text", "structured", "meta"}`.
"""

import json
import sys

import anyio
from mcp import Client


def report(tool, protocol, result):
    meta = result.meta if hasattr(result, "meta") else None
    text = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    sys.stdout.write("RESULT " + json.dumps({
        "tool": tool,
        "protocol": protocol,
        "isError": result.is_error,
        "text": text,
        "structured": result.structured_content,
        "meta": meta,
    }) + "\n")
    sys.stdout.flush()


async def main(url, code, pause):
    async with Client(url) as client:
        protocol = str(client.session.protocol_version) if hasattr(client.session, "protocol_version") else None
        result = await client.call_tool("exec", {"code": code})
        report("exec", protocol, result)
        for _ in range(20):
            structured = result.structured_content or {}
            if structured.get("status") != "waiting":
                break
            await anyio.sleep(pause)
            result = await client.call_tool("wait", {"runId": structured["runId"]})
            report("wait", protocol, result)


anyio.run(main, sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 0.0)
