#!/usr/bin/env bash
# Fuzz the running service against its own /openapi.json with schemathesis: no 500 anywhere,
# every status documented, every response body and content type matching the document.
#
#   scripts/schemathesis.sh [extra schemathesis args]
#
# Starts `agent-task serve` on a fresh data directory and an ephemeral port, authenticates as
# the first admin token (so every route is reachable), runs, stops the server by its pid.
# Exits with schemathesis's status. Needs the project environment (./dev run ...).
set -euo pipefail
cd "$(dirname "$0")/.."

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
[ -n "$url" ] || { echo "the service did not start" >&2; cat "$log" >&2; exit 1; }
token="$(cat "$work/data/admin.token")"

# The MCP endpoints speak JSON-RPC (tested with the MCP SDK's own client instead). Run from the
# work directory so schemathesis's own state (.schemathesis/) never lands in the checkout.
st="$PWD/.venv/bin/schemathesis"
# Per-operation timeouts (the event stream, a waiting claimNext): scripts/schemathesis.toml.
config="$PWD/scripts/schemathesis.toml"
cd "$work"
"$st" --config-file "$config" run "$url/openapi.json" \
  --header "Authorization: Bearer $token" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --exclude-path-regex '/mcp$' \
  --phases examples,coverage,fuzzing \
  --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-25}" \
  --request-timeout 30 \
  --workers 2 \
  --seed "${SCHEMATHESIS_SEED:-20260101}" \
  --no-color \
  "$@"
