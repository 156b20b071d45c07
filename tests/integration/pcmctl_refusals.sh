#!/usr/bin/env bash
# pcmctl_refusals.sh BUILD — run under with_pcmd.sh. pcmctl with a wrong secret, an unknown job,
# an unknown rank, an unknown host or malformed arguments is refused with a message and a non-zero
# exit, nothing is queued, and pcmd keeps serving.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
job=refusals-$$
fail() { echo "pcmctl_refusals: FAIL: $*" >&2; exit 1; }

# A job to talk about: one process, long enough to stay registered while we ask.
PCM_JOB=$job timeout 120 "$MPIEXEC" -n 1 "$build/examples/heat2d/heat2d_pcm" --nx 32 --ny 32 \
  --iters 100000 --throttle-us 1000 >"$PCM_TEST_DIR/job.out" 2>&1 </dev/null &
mpi=$!
trap 'kill $mpi 2>/dev/null; wait $mpi 2>/dev/null' EXIT
"$pcmctl" wait "$job" --timeout 60 || fail "job never registered: $(cat "$PCM_TEST_DIR/job.out")"

refused() {  # refused "WHAT" EXPECTED_MESSAGE_PART pcmctl-args...; EXIT=N checks the exit code
  local what=$1 part=$2
  shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  [ $rc -ne 0 ] || fail "$what: accepted (exit 0)"
  [ -z "${EXIT:-}" ] || [ $rc -eq "$EXIT" ] || fail "$what: exit $rc, expected $EXIT"
  grep -qi -- "$part" <<<"$err" || fail "$what: message '$err' does not mention '$part'"
  echo "refused as expected ($what): $err"
}

python3 - "$PCM_CONFIG" "$PCM_TEST_DIR/wrong.conf" <<'PY'
import json, os, sys
c = json.load(open(sys.argv[1])); c["secret"] = "0" * 64
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT, 0o600); os.write(fd, json.dumps(c).encode())
PY
refused "wrong secret" "secret" "$pcmctl" --config "$PCM_TEST_DIR/wrong.conf" migrate "$job" 0
refused "wrong secret, status" "secret" "$pcmctl" --config "$PCM_TEST_DIR/wrong.conf" status
refused "unknown job" "unknown job" "$pcmctl" migrate no-such-job 0
refused "unknown rank" "no rank 7" "$pcmctl" migrate "$job" 7
refused "negative rank" "rank" "$pcmctl" migrate "$job" -1
refused "unknown host" "inventory" "$pcmctl" migrate "$job" 0 --host no-such-host
EXIT=2 refused "rank not a number" "rank" "$pcmctl" migrate "$job" zero
EXIT=2 refused "missing arguments" "required" "$pcmctl" migrate
EXIT=2 refused "unknown option" "--frobnicate" "$pcmctl" status --frobnicate
EXIT=2 refused "negative size" "--to" "$pcmctl" resize "$job" --to -3
EXIT=2 refused "split into one" "--into" "$pcmctl" split "$job" 0 --into 1
EXIT=2 refused "unknown placement" "--placement" "$pcmctl" resize "$job" --to 2 --placement scatter
EXIT=1 refused "unknown rank, exit code" "no rank 7" "$pcmctl" migrate "$job" 7
refused "no configuration" "configuration" "$pcmctl" --config "$PCM_TEST_DIR/absent.conf" status
refused "bad job name" "unknown job" "$pcmctl" migrate "../../etc" 0
# A mistyped job is not "no versions" (exit 0): it is refused.
EXIT=1 refused "checkpoints of a mistyped job" "mistyped" "$pcmctl" checkpoints "$job-typo"
EXIT=1 refused "verify of a mistyped job" "mistyped" "$pcmctl" verify "$job-typo"
# A running job without versions has none, and that is no error.
"$pcmctl" checkpoints "$job" | grep -q "no versions" || fail "checkpoints of $job: not 'no versions'"

# Nothing was queued, and pcmd still answers.
pending=$("$pcmctl" status "$job" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['pending'])")
[ "$pending" = None ] || fail "a refused command was queued: $pending"
"$pcmctl" ping || fail "pcmd stopped answering"
"$pcmctl" status
echo "pcmctl_refusals: ok"
