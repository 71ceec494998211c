#!/usr/bin/env bash
# The client under test of the MCP conformance suite's client scenarios
# (crates/codemode-cli/tests/integration/conformance.rs): the suite runs `client.sh URL` with
# MCP_CONFORMANCE_SCENARIO set, and this runs `codemode exec --mcp-config` with one HTTP server
# named "conformance" at URL and a program that does what the scenario expects of a client.
# CODEMODE_BIN is the codemode binary. For OAuth, codemode prints the authorization URL on
# stderr and waits for the browser's redirect on its loopback callback; here curl plays the
# browser (it follows the authorization server's redirect to that callback), as a person would
# open the URL.
set -uo pipefail
url="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
printf '{"mcpServers": {"conformance": {"url": "%s"}}}\n' "$url" >"$dir/servers.json"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
# The initialize scenario's server has no tools, so it has no MCP namespace either.
initialize) program='return typeof MCP;' ;;
tools_call) program='return await MCP.conformance.addNumbers({a: 2, b: 3});' ;;
sse-retry) program='return await MCP.conformance.testReconnection({});' ;;
elicitation-*) program='return await MCP.conformance.testClientElicitationDefaults({});' ;;
auth/*) program='return await MCP.conformance.testTool({});' ;;
# The 2026-07-28 line (@modelcontextprotocol/conformance 0.2.0-alpha).
# Connecting (server/discover, then tools/list) is what request-metadata checks.
request-metadata | json-schema-ref-no-deref) program='return typeof MCP.conformance;' ;;
sep-2322-client-request-state)
	program='const s = MCP.conformance;
return [await s.testMrtrEchoState({}), await s.testMrtrNoState({}),
        await s.testMrtrUnrelated({}), await s.testMrtrNoResultType({})];'
	;;
http-standard-headers)
	program='const s = MCP.conformance;
await s.testHeaders({}); await s.myHyphenatedTool({});
const listed = await s.resources.list();
await s.resources.read({uri: listed.resources[0].uri});
await s.prompts.list();
return await s.prompts.get({name: "test_prompt"});'
	;;
# The scenario names the calls to make in MCP_CONFORMANCE_CONTEXT ({toolCalls: [{name, arguments}]}).
http-custom-headers)
	program="const context = ${MCP_CONFORMANCE_CONTEXT:-{\}};
const camel = (name) => name.split(/[^A-Za-z0-9]+/).filter(Boolean)
  .map((w, i) => (i ? w[0].toUpperCase() : w[0].toLowerCase()) + w.slice(1)).join('');
const out = [];
for (const call of context.toolCalls) out.push(await MCP.conformance[camel(call.name)](call.arguments));
return out;"
	;;
# Calls every tool codemode kept: the scenario checks that the invalid ones were not kept.
http-invalid-tool-headers)
	program='const s = MCP.conformance; const called = [];
for (const name of Object.keys(s)) {
  if (typeof s[name] !== "function" || name.startsWith("$")) continue;
  await s[name]({region: "us-west1"}); called.push(name);
}
return called;'
	;;
# Sends the focal tool's inputSchema, as codemode holds it, back through the echo tool.
json-schema-2020-12-preservation)
	program='const s = MCP.conformance;
const api = await s.$api(undefined, {schema: true});
const focal = api.tools.find((t) => t.mcpTool === "json_schema_2020_12_tool");
const echo = api.tools.find((t) => t.mcpTool !== "json_schema_2020_12_tool");
return await s[echo.method]({schema: api.schemas[focal.method]});'
	;;
*)
	echo "client.sh: no program for scenario '${MCP_CONFORMANCE_SCENARIO:-}'" >&2
	exit 2
	;;
esac
marker='open this URL in a browser: '
# CODEMODE_CONFORMANCE_RUNS=N runs the client N times in a row (a second run must reuse the
# stored token); CODEMODE_CONFORMANCE_LOG, when set, gets one line per authorization URL seen.
status=0
for _ in $(seq "${CODEMODE_CONFORMANCE_RUNS:-1}"); do
	"$CODEMODE_BIN" exec --mcp-config "$dir/servers.json" --mcp-timeout-ms 20000 -e "$program" \
		2> >(while IFS= read -r line; do
			printf '%s\n' "$line" >&2
			case "$line" in
			*"$marker"*)
				if [ -n "${CODEMODE_CONFORMANCE_LOG:-}" ]; then
					printf '%s\n' "${line#*"$marker"}" >>"$CODEMODE_CONFORMANCE_LOG"
				fi
				curl -sS -L -o /dev/null "${line#*"$marker"}" >&2
				;;
			esac
		done)
	status=$?
	wait
	[ "$status" -eq 0 ] || break
done
exit "$status"
