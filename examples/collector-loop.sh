#!/usr/bin/env bash
# The whole collector story against a real `agent-task serve` and a real git repository with a
# small pytest suite, in a temporary directory. Exits 0 only if every check holds:
#
#   1. qualification is false before collection;
#   2. it is true after a passing collection;
#   3. task-stop passes;
#   4. task-stop blocks with next checkpoint after an uncommitted edit;
#   5. after a commit that breaks a test, a new checkpoint and collection give qualified false
#      with a typed failure, and task-stop blocks;
#   6. after the collector key is revoked, the old receipt no longer qualifies;
#   7. a run under a broken collector profile says why (the end of its output), and after the
#      operator fixes the profile the same revision is collected again with the printed
#      'checkpoint --retry' and qualifies;
#   8. a collector on another machine, with only a clone, a token and its own key (the
#      authority key pinned once), qualifies a Change without the service's data dir.
#   L. landing: the pre-receive hook refuses an unqualified push, lets the qualified one land
#      and refuses the same revision after a revocation (see the landing section at the end).
#
# Usage: examples/collector-loop.sh   (from anywhere; uses the project's .venv)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
AT="$ROOT/.venv/bin/agent-task"
PY="$ROOT/.venv/bin/python"
WORK="$(mktemp -d)"
SERVE_PID=""
cleanup() {
  if [ -n "$SERVE_PID" ]; then kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

export HOME="$WORK/home" XDG_DATA_HOME="$WORK/home/.local/share"
mkdir -p "$HOME"
export AGENT_TASK_STOP_DIR="$WORK/stop"
DATA="$WORK/data" STATE="$WORK/collector" REPO="$WORK/repo"
FAILED=0

step() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; FAILED=1; }
field() { "$PY" -c "import json,sys; d=json.load(sys.stdin); print(json.dumps(eval(sys.argv[1], {}, {'d': d})))" "$1"; }

step "a git repository with a small pytest suite"
mkdir -p "$REPO/tests" && cd "$REPO"
git init -q -b main && git config user.email dev@example.com && git config user.name dev
printf 'def add(a, b):\n    return a + b\n' > calc.py
printf 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n' > tests/test_calc.py
printf '[pytest]\npythonpath = .\n' > pytest.ini
git add -A && git commit -qm "calc with a test"

step "operator: repository, TEST requirement, task-only profile, collector key, enrollment, profile"
"$AT" operator register-repository --workspace demo --repository calc "$REPO" --data-dir "$DATA" --json
REQ=$("$AT" operator install-requirement --repository calc --test-step tests --data-dir "$DATA" --json | field 'd["requirement_digest"]' | tr -d '"')
"$AT" operator register-profile --repository calc --profile default --target main --requirement "$REQ" --data-dir "$DATA" --json
PUB=$("$AT" collector keygen --state-dir "$STATE" 2>/dev/null)
"$AT" operator enroll --repository calc --step tests --registration ci --executor this-host --public-key "$PUB" --data-dir "$DATA" --json
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
# The sandbox shows only the system, the snapshot and a private /tmp: --expose-interpreter shows
# the virtualenv and the interpreter it was made from, read-only. Require bubblewrap where it is
# installed. The install starts "$PY" in that sandbox first: a profile that cannot start is refused.
MINIMUM=none; command -v bwrap >/dev/null 2>&1 && MINIMUM=bwrap
"$AT" operator install-collector-profile --profile-id pytest-1 --repository calc --profile default --step tests \
  --registration ci --arg "$PY" --arg -m --arg pytest --arg -q --arg -p --arg no:cacheprovider \
  --allow-env PYTEST_DISABLE_PLUGIN_AUTOLOAD --timeout-ms 120000 --output-limit 65536 \
  --sandbox-minimum "$MINIMUM" --process-limit 512 --expose-interpreter \
  --data-dir "$DATA" --json

step "agent-task serve"
"$AT" serve --data-dir "$DATA" --port 0 > "$WORK/serve.log" 2>&1 &
SERVE_PID=$!
URL=""
for _ in $(seq 100); do
  URL=$(grep -o 'http://127.0.0.1:[0-9]*' "$WORK/serve.log" | head -1 || true)
  [ -n "$URL" ] && break
  sleep 0.1
done
[ -n "$URL" ] || { cat "$WORK/serve.log"; echo "the service did not start"; exit 1; }
echo "service at $URL"
"$AT" admin token create --workspace demo --tier agent --name agent --data-dir "$DATA" > "$WORK/agent.token"
export AGENT_TASK_URL="$URL" AGENT_TASK_TOKEN_FILE="$WORK/agent.token"
export AGENT_TASK_REPOSITORY=calc AGENT_TASK_PROFILE=default
"$AT" init-repo --path "$REPO" >/dev/null && git add -A && git commit -qm "agent instructions"

hook() {  # run task-stop for a Change; prints the hook's stdout
  echo '{"session_id":"demo-session","hook_event_name":"Stop","stop_hook_active":false}' |
    "$AT" task-stop "$1" --endpoint "$URL" --repository calc --profile default \
      --token-file "$WORK/agent.token" --workspace "$REPO" --data-dir "$DATA"
}
hook_next() { "$PY" -c '
import json, sys
out = sys.stdin.read().strip()
if not out:
    print("PASS"); sys.exit(0)
text = json.loads(out)["hookSpecificOutput"]["additionalContext"]
print(json.dumps(json.loads(text.rsplit("\n", 1)[1])["next"]))'; }

step "1. qualification is false before collection"
"$AT" checkpoint main-work --workspace "$REPO"
"$AT" checkpoint stable --workspace "$REPO" >/dev/null
Q=$("$AT" qualification main-work --json)
[ "$(echo "$Q" | field 'd["qualified"]')" = "false" ] && ok "qualified: false, next $(echo "$Q" | field 'd["next"]["operation"]')" || fail "qualified before collection"

step "2. a passing collection qualifies the subject"
"$AT" collect main-work --data-dir "$DATA" --state-dir "$STATE"
"$AT" collect stable --data-dir "$DATA" --state-dir "$STATE" --quiet >/dev/null
Q=$("$AT" qualification main-work --json)
[ "$(echo "$Q" | field 'd["qualified"]')" = "true" ] && ok "qualified: true, receipt $(echo "$Q" | field 'd["receipt_digest"]')" || fail "not qualified after a passing collection: $Q"

step "3. task-stop passes"
R=$(hook main-work | hook_next)
[ "$R" = "PASS" ] && ok "task-stop passed" || fail "task-stop blocked: $R"

step "4. task-stop blocks with next checkpoint after an uncommitted edit"
printf '# an edit\n' >> calc.py
R=$(hook main-work | hook_next)
[ "$R" = '{"operation": "checkpoint"}' ] && ok "blocked, next $R" || fail "expected next checkpoint, got $R"
if "$AT" checkpoint main-work --workspace "$REPO" 2>"$WORK/err"; then fail "a dirty tree was checkpointed"; else ok "checkpoint refused the dirty tree: $(cat "$WORK/err")"; fi

step "5. a commit that breaks a test: new checkpoint and collection are not qualified"
git checkout -q -- calc.py
printf 'def add(a, b):\n    return a - b\n' > calc.py
git commit -qam "break add"
"$AT" checkpoint main-work --workspace "$REPO"
"$AT" collect main-work --data-dir "$DATA" --state-dir "$STATE" && ok "collect exited 0 for a failed run" || fail "collect of a failed run did not exit 0"
Q=$("$AT" qualification main-work --json)
CODE=$(echo "$Q" | field '[f["code"] for f in d["failures"]]')
[ "$(echo "$Q" | field 'd["qualified"]')" = "false" ] && echo "$CODE" | grep -q collector_not_passed \
  && ok "qualified: false with failures $CODE" || fail "expected a typed failure: $Q"
R=$(hook main-work | hook_next)
[ "$R" != "PASS" ] && ok "task-stop blocked, next $R" || fail "task-stop passed a broken subject"

step "6. after the key is revoked, the old receipt no longer qualifies"
Q=$("$AT" qualification stable --json)
[ "$(echo "$Q" | field 'd["qualified"]')" = "true" ] && ok "the untouched Change 'stable' holds a receipt" || fail "stable is not qualified: $Q"
"$AT" operator revoke --registration ci --reason "key rotated" --data-dir "$DATA" --json
Q=$("$AT" qualification stable --json)
[ "$(echo "$Q" | field 'd["qualified"]')" = "false" ] && echo "$Q" | grep -q executor_revoked \
  && ok "revoked: qualified false, $(echo "$Q" | field 'd["failures"]')" || fail "the old receipt still qualifies: $Q"

step "7. a failed run says why; the operator fixes the profile; the same revision is collected again"
"$AT" operator enroll --repository calc --step tests --registration ci --executor this-host --public-key "$PUB" --data-dir "$DATA" --json >/dev/null
RECIPE=(--arg "$PY" --arg -m --arg pytest --arg -q --arg -p --arg no:cacheprovider)
LIMITS=(--allow-env PYTEST_DISABLE_PLUGIN_AUTOLOAD --timeout-ms 120000 --output-limit 65536
  --sandbox-minimum "$MINIMUM" --process-limit 512 --expose-interpreter)
# The operator pins the interpreter without its site-packages (-S): no pytest there.
P=$("$AT" operator install-collector-profile --profile-id pytest-nosite --repository calc --profile default --step tests \
  --registration ci --arg "$PY" --arg -S "${RECIPE[@]:2}" "${LIMITS[@]}" --data-dir "$DATA")
echo "$P" | grep "resolves here to"   # the readable answer says what argv[0] resolves to here
printf 'def add(a, b):\n    return a + b\n' > calc.py
git commit -qam "fix add"
"$AT" checkpoint main-work --workspace "$REPO"
OUT=$("$AT" collect main-work --data-dir "$DATA" --state-dir "$STATE")
echo "$OUT"
echo "$OUT" | grep -q "No module named pytest" && ok "collect shows why the run failed" || fail "no failure tail in: $OUT"
"$AT" operator install-collector-profile --profile-id pytest-2 --repository calc --profile default --step tests \
  --registration ci "${RECIPE[@]}" "${LIMITS[@]}" --data-dir "$DATA" --json >/dev/null
"$AT" checkpoint main-work --workspace "$REPO" | sed -n 1p   # sed reads all: head could end the pipe early (SIGPIPE)
RUN=$("$AT" qualification main-work | sed -n 's/^run: //p' || true)   # exit 1: not qualified yet
case "$RUN" in
  "agent-task checkpoint main-work --retry"*) ok "qualification prints: $RUN" ;;
  *) fail "expected a checkpoint --retry command, got: $RUN" ;;
esac
"$AT" ${RUN#agent-task } --workspace "$REPO"
"$AT" collect main-work --data-dir "$DATA" --state-dir "$STATE" --quiet >/dev/null
Q=$("$AT" qualification main-work --json)
[ "$(echo "$Q" | field 'd["qualified"]')" = "true" ] && ok "the same revision qualified after the fix" || fail "not qualified after the retry: $Q"

step "8. a collector on another machine: a clone, a token and its own key; no data dir"
LAPTOP="$WORK/laptop"
mkdir -p "$LAPTOP" && git clone -q "$REPO" "$LAPTOP/calc"
export AGENT_TASK_COLLECTOR_DIR="$LAPTOP/collector"
LPUB=$("$AT" collector keygen 2>/dev/null)
ENR=$("$AT" operator enroll --repository calc --step tests --registration laptop --executor laptop-1 --public-key "$LPUB" --data-dir "$DATA")
PROBE=$("$AT" collector runtime-probe "${RECIPE[@]}" "${LIMITS[@]}" --json | field 'd["runtime_identity_sha256"]' | tr -d '"')
"$AT" operator install-collector-profile --profile-id pytest-laptop --repository calc --profile default --step tests \
  --registration laptop "${RECIPE[@]}" "${LIMITS[@]}" --runtime-identity "$PROBE" --data-dir "$DATA" --json >/dev/null
PIN=$(echo "$ENR" | sed -n 's/^on a remote collector: //p')
"$AT" ${PIN#agent-task }
printf 'from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n' > tests/test_zero.py
git add -A && git commit -qm "one more test"
"$AT" checkpoint remote-work --workspace "$REPO"
git -C "$LAPTOP/calc" pull -q --ff-only
"$AT" collect remote-work --clone "$LAPTOP/calc"
Q=$("$AT" qualification remote-work --json)
[ "$(echo "$Q" | field 'd["qualified"]')" = "true" ] && [ ! -e "$XDG_DATA_HOME/agent-task/journal.sqlite" ] \
  && ok "the remote collector qualified remote-work without the data dir" || fail "remote collection: $Q"
unset AGENT_TASK_COLLECTOR_DIR

# ==== landing (issue 15): the authority's word gates where code lands ========================
# A bare repository stands for the team's git host; its pre-receive hook asks the authority
# (workflow.landing_check) before refs/heads/main moves:
#
#   L1. an unqualified (checkpointed, not yet collected) push is refused, with qualification's
#       reason and next step;
#   L2. once it is collected, the qualified revision lands;
#   L3. after the collector key is revoked, the next push of that same revision is refused.

step "L0. re-enroll the collector key (a new epoch) and install a profile for it"
"$AT" operator enroll --repository calc --step tests --registration ci --executor this-host --public-key "$PUB" --data-dir "$DATA" --json >/dev/null
"$AT" operator install-collector-profile --profile-id pytest-3 --repository calc --profile default --step tests \
  --registration ci "${RECIPE[@]}" "${LIMITS[@]}" --data-dir "$DATA" --json >/dev/null

step "L0. a bare repository with the landing hook"
ORIGIN="$WORK/origin.git"
git clone -q --bare "$REPO" "$ORIGIN"
git -C "$ORIGIN" update-ref refs/heads/main "$(git rev-list --max-parents=0 HEAD)"   # main at the first commit
"$AT" admin token create --workspace demo --tier agent --name landing-hook --data-dir "$DATA" > "$WORK/hook.token"
"$AT" landing install --git-dir "$ORIGIN" --repository calc --profile default --protect refs/heads/main \
  --url "$URL" --token-file "$WORK/hook.token" --timeout 30 --json

step "L1. an unqualified push is refused"
printf 'from calc import add\n\n\ndef test_two():\n    assert add(1, 1) == 2\n' > tests/test_two.py
git add -A && git commit -qm "another test, not yet collected"
"$AT" checkpoint main-work --workspace "$REPO" >/dev/null
if git push -q "$ORIGIN" HEAD:refs/heads/main 2>"$WORK/push.err"; then
  fail "the uncollected commit was pushed to main"
else
  grep -q "REFUSED: not_qualified" "$WORK/push.err" && ok "refused: $(grep -o 'failures: .*' "$WORK/push.err" | head -1)" \
    || fail "unexpected refusal: $(cat "$WORK/push.err")"
fi

step "L2. the commit is collected; the qualified revision lands"
"$AT" collect main-work --data-dir "$DATA" --state-dir "$STATE" --quiet >/dev/null
if git push -q "$ORIGIN" HEAD:refs/heads/main 2>"$WORK/push.err"; then
  [ "$(git -C "$ORIGIN" rev-parse refs/heads/main)" = "$(git rev-parse HEAD)" ] \
    && ok "landed: $(grep -o 'refs/heads/main -> .*' "$WORK/push.err" | head -1)" || fail "main did not move"
else
  fail "the qualified push was refused: $(cat "$WORK/push.err")"
fi

step "L3. after a revocation, the next push of the same revision is refused"
"$AT" operator revoke --registration ci --reason "key rotated again" --data-dir "$DATA" --json >/dev/null
git commit -q --amend -m "another test (same content, another commit)"   # same tree: same revision
if git push -q --force "$ORIGIN" HEAD:refs/heads/main 2>"$WORK/push.err"; then
  fail "a revoked receipt still landed"
else
  grep -q "executor_revoked" "$WORK/push.err" && ok "refused: $(grep -o 'failures: .*' "$WORK/push.err" | head -1)" \
    || fail "unexpected refusal: $(cat "$WORK/push.err")"
fi
# ==== end of landing ===========================================================================

echo
if [ "$FAILED" -ne 0 ]; then echo "collector loop: FAILED"; exit 1; fi
echo "collector loop: all checks passed"
