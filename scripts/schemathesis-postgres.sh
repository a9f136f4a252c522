#!/usr/bin/env bash
# scripts/schemathesis.sh against a service whose journal is PostgreSQL: a fresh database on
# the test server ($AGENT_TASK_TEST_POSTGRES, default the machine's at 127.0.0.1:5432), made
# here and dropped after. Same checks, same arguments. Needs .ci/postgres to have run.
set -euo pipefail
cd "$(dirname "$0")/.."

server="${AGENT_TASK_TEST_POSTGRES:-postgresql://postgres@127.0.0.1:5432/postgres}"
name="agent_task_schemathesis_$$"
database="${server%/*}/${name}"
py=.venv/bin/python
admin() {
  "$py" -c 'import psycopg, sys
with psycopg.connect(sys.argv[1], autocommit=True, connect_timeout=10) as c:
    c.execute(sys.argv[2])' "$server" "$1"
}
admin "CREATE DATABASE \"${name}\" TEMPLATE template0 ENCODING 'UTF8'"
trap 'admin "DROP DATABASE IF EXISTS \"${name}\" WITH (FORCE)"' EXIT
AGENT_TASK_DATABASE="$database" scripts/schemathesis.sh "$@"
