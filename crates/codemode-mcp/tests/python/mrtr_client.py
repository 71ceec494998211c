"""A 2026-07-28 MCP client on the Python `mcp` SDK that answers approvals by MRTR.

Usage: mrtr_client.py URL

`mcp.Client(URL, elicitation_callback=…)` speaks the stateless era: the server cannot send it
`elicitation/create`, so an approval comes back as `resultType: "input_required"` and the SDK's
driver calls the elicitation callback for each `inputRequests` entry, then retries the call with
`inputResponses` and the `requestState`. The program asks for `write` and `deploy` at once; the
callback approves `openclaw:core:write` and declines everything else. On stdout: one
`ELICIT <json message>` line per elicitation, then `RESULT <json structuredContent>`.
"""

import json
import sys

import anyio
from mcp import Client, types

CODE = (
    "const settled = await Promise.allSettled(['write', 'deploy'].map("
    "  (t) => tools[t]({tool: t, token: 's3cret'})));"
    " return settled.map((s) => s.status === 'fulfilled' ? s.value : s.reason.message);"
)


def report(tag, value):
    sys.stdout.write(f"{tag} {json.dumps(value)}\n")
    sys.stdout.flush()


async def elicit(context, params):
    report("ELICIT", params.message)
    if '"openclaw:core:write"' in params.message:
        return types.ElicitResult(action="accept", content={"approve": True})
    return types.ElicitResult(action="decline")


async def main(url):
    async with Client(url, elicitation_callback=elicit) as client:
        result = await client.call_tool("exec", {"code": CODE})
        report("RESULT", result.structured_content)


anyio.run(main, sys.argv[1])
