"""An MCP client on the Python `mcp` SDK for tests/integration/elicitation.rs.

It speaks MCP over its own stdin/stdout (the Rust test serves code mode on the other end),
declares elicitation by giving an elicitation callback, runs one `exec` whose program calls
`tools.write` and `tools.deploy`, approves `openclaw:core:write` and declines everything else.
It reports on stderr: one `ELICIT <json message>` line per elicitation and one
`RESULT <json structuredContent>` line, then exits (closing its end of the session).
"""

import json
import os
import sys

import anyio
from mcp import ClientSession, types
from mcp.server.stdio import stdio_server

CODE = (
    "const out = [];"
    " for (const t of ['write', 'deploy']) {"
    "  try { out.push(await tools[t]({tool: t, token: 's3cret'})); }"
    "  catch (e) { out.push(e.message); } }"
    " return out;"
)


def report(tag, value):
    sys.stderr.write(f"{tag} {json.dumps(value)}\n")
    sys.stderr.flush()


async def elicit(context, params):
    report("ELICIT", {"message": params.message,
                      "schema": params.requested_schema if isinstance(params.requested_schema, dict)
                      else params.requested_schema.model_dump(by_alias=True, exclude_none=True)})
    if '"openclaw:core:write"' in params.message:
        return types.ElicitResult(action="accept", content={"approve": True})
    return types.ElicitResult(action="decline")


async def main():
    async with stdio_server() as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            await session.initialize()
            result = await session.call_tool("exec", {"code": CODE})
            report("RESULT", result.structured_content)
            # The stdio streams wait for stdin to close, which the server never does first:
            # leave at once, so the server sees the end of the session.
            os._exit(0)


anyio.run(main)
