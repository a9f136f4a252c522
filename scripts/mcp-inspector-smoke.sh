#!/usr/bin/env bash
# Smoke test of both MCP endpoints with the official MCP Inspector CLI (not our SDK client).
#
#   scripts/mcp-inspector-smoke.sh
#
# Starts `agent-task serve` on a fresh data directory and an ephemeral port, then with
# `npx @modelcontextprotocol/inspector --cli` (pinned; needs node and the npm registry):
#   1. /mcp tools/list as the first admin token lists the queue tools and session_gate, every
#      name matching ^[a-zA-Z0-9_-]{1,64}$;
#   2. /mcp tools/call of agenttask_cancel on a missing task is a tool error carrying NOT_FOUND;
#   3. the workspace endpoint (?repository=&profile=) lists the workflow tools and answers
#      capabilities with the capability name;
#   4. a request with no token is refused.
# Stops the server by its pid. Exits non-zero on the first check that fails.
set -euo pipefail
cd "$(dirname "$0")/.."

INSPECTOR="@modelcontextprotocol/inspector@${INSPECTOR_VERSION:-2.12.0}"
work="$(mktemp -d)"
log="$work/serve.log"
.venv/bin/agent-task serve --data-dir "$work/data" --port 0 2>"$log" &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

url=""
for _ in $(seq 1 150); do
  url="$(grep -o 'serving http://[^ ]*' "$log" | head -n1 | cut -d' ' -f2 || true)"
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.2
done
[ -n "$url" ] || { echo "the service did not start" >&2; exit 1; }
auth="Authorization: Bearer $(cat "$work/data/admin.token")"

inspect() {
  npx --yes "$INSPECTOR" --cli "$@" 2>"$work/inspector.err"
}
check() {  # check NAME PYTHON-EXPRESSION-ON-doc < json
  .venv/bin/python -c "import json,sys; doc=json.load(sys.stdin); assert $2, doc" \
    || { echo "FAIL: $1" >&2; cat "$work/inspector.err" >&2; exit 1; }
  echo "ok: $1"
}

inspect "$url/mcp" --transport http --header "$auth" --method tools/list \
  | check "queue tools listed" \
    "{'agenttask_reorder', 'agenttask_cancel', 'agenttask_claimNext', 'session_gate'} <= {t['name'] for t in doc['tools']} and all(__import__('re').fullmatch(r'[a-zA-Z0-9_-]{1,64}', t['name']) for t in doc['tools'])"

set +e
inspect "$url/mcp" --transport http --header "$auth" --method tools/call \
  --tool-name agenttask_cancel --tool-arg taskId=at_missing >"$work/call.json"
set -e
check "tool error carries the code" \
  "doc['isError'] and json.loads(doc['content'][0]['text'])['code'] == 'NOT_FOUND'" \
  <"$work/call.json"

workspace="$url/v1/hub/workspace/mcp?repository=acme&profile=default"
inspect "$workspace" --transport http --header "$auth" --method tools/list \
  | check "workflow tools listed" \
    "{'next', 'claim', 'heartbeat', 'result', 'status'} <= {t['name'] for t in doc['tools']}"
inspect "$workspace" --transport http --header "$auth" --method tools/call \
  --tool-name capabilities \
  | check "capabilities answered" \
    "doc['structuredContent']['capability'] == 'agentscm.agent-workflow-tasks/v1'"

if MCP_AUTO_OPEN_ENABLED=false inspect "$url/mcp" --transport http --method tools/list \
    </dev/null >/dev/null; then
  echo "FAIL: a request without a token was answered" >&2
  exit 1
fi
echo "ok: no token, no tools"
