"""A 2026-07-28 MCP client on the Python `mcp` SDK that listens for tool-list changes.

Usage: listen_client.py URL

Lists the tools (`TOOLS <json>`: the protocol, the `exec` description, `ttlMs`, `cacheScope`),
opens `subscriptions/listen` with `toolsListChanged` and reports the acknowledged filter
(`ACK <json>`), then waits for one event (`EVENT <name>`), lists the tools again (`TOOLS …`)
and closes the stream. Each line is flushed at once; the test drives the change in between.
"""

import json
import sys

import anyio
from mcp import Client


def line(tag, value):
    sys.stdout.write(f"{tag} {json.dumps(value)}\n")
    sys.stdout.flush()


async def tools(client):
    result = await client.session.list_tools()
    exec_tool = next(t for t in result.tools if t.name == "exec")
    line("TOOLS", {
        "protocol": str(getattr(client.session, "protocol_version", None)),
        "names": [t.name for t in result.tools],
        "exec": exec_tool.description,
        "ttlMs": getattr(result, "ttl_ms", None),
        "cacheScope": getattr(result, "cache_scope", None),
    })


async def main(url):
    async with Client(url) as client:
        await tools(client)
        async with client.listen(tools_list_changed=True) as sub:
            line("ACK", sub.honored.model_dump(by_alias=True, exclude_none=True))
            with anyio.fail_after(30):
                async for event in sub:
                    line("EVENT", type(event).__name__)
                    break
        await tools(client)


anyio.run(main, sys.argv[1])
