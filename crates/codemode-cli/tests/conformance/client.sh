#!/usr/bin/env bash
# The client under test of the MCP conformance suite's client scenarios
# (crates/codemode-cli/tests/conformance.rs): the suite runs `client.sh URL` with
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
