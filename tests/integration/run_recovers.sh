#!/usr/bin/env bash
# run_recovers.sh BUILD — run under with_pcmd.sh. `pcmctl run` supervises heat2d_pcm (a version
# every 100 iterations): one of its ranks is killed with SIGKILL mid-run; pcmctl run sees the run
# fail, relaunches the job from the newest version, and exits 0 with the plain run's checksum
# printed; the job's events record the recovery with its timings. With --max-restarts 0 the same
# loss ends the run with a non-zero exit code and an event that says so.
set -uo pipefail
build=$1
pcmctl=$build/pcmctl
heat=$build/examples/heat2d
fail() { echo "run_recovers: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1"; }
args=(--nx 64 --ny 48 --iters 2000)

plain=$(timeout 300 "${MPIEXEC:-mpiexec}" -n 2 "$heat/heat2d_plain" "${args[@]}" | awk '/^checksum/ {print $2}')
[ -n "$plain" ] || fail "the plain run printed no checksum"

# victim JOB: the pid of one process of JOB (its PCM_JOB in /proc/PID/environ).
victim() {
  python3 - "$1" <<'PY'
import os, sys
want = b"PCM_JOB=" + sys.argv[1].encode() + b"\0"
for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int, reverse=True):
    try:
        env = open(f"/proc/{pid}/environ", "rb").read() + b"\0"
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        continue
    if exe == "heat2d_pcm" and (b"\0" + want) in (b"\0" + env):
        print(pid)
        break
PY
}

# kill_one JOB ITERATION: once JOB has reached ITERATION, kill -9 one of its processes.
kill_one() {
  "$pcmctl" wait "$1" --iteration "$2" --timeout 120 >/dev/null || return 1
  local pid
  pid=$(victim "$1")
  [ -n "$pid" ] || return 1
  kill -9 "$pid"
  echo "run_recovers: killed process $pid of $1 (kill -9) past iteration $2"
}

job=recover-$$
out=$PCM_TEST_DIR/run.out
timeout 300 "$pcmctl" run -n 2 --job "$job" --max-restarts 2 -- "$heat/heat2d_pcm" "${args[@]}" \
  --commit-every 100 --throttle-us 3000 >"$out" 2>&1 </dev/null &
run=$!
kill_one "$job" 350 || fail "could not kill a process of the job: $(show "$out")"
wait "$run"
rc=$?
[ $rc -eq 0 ] || fail "pcmctl run exited with $rc: $(show "$out")"
grep -Eq '^heat2d: restarted from iteration [0-9]+ \(2 -> 2 processes\)$' "$out" ||
  fail "the relaunch did not restart from a version: $(show "$out")"
k=$(sed -n 's/^heat2d: restarted from iteration \([0-9]*\) .*/\1/p' "$out")
[ "$k" -ge 300 ] || fail "restarted from iteration $k, expected >= 300"
got=$(awk '/^checksum/ {print $2}' "$out" | tail -1)
[ "$got" = "$plain" ] || fail "checksum '$got' differs from the plain run's $plain: $(show "$out")"
ev=$("$pcmctl" events "$job")
grep -q "recovery 1 of 2: the run was lost (.*); relaunching on 2 processes from the newest valid version" <<<"$ev" ||
  fail "no recovery event: $ev"
grep -q "recovery 1 of 2: iterating again [0-9.]* s after the loss was seen" <<<"$ev" ||
  fail "no event says the job iterates again: $ev"
echo "run_recovers: recovered from iteration $k, checksum $got; $(echo "$ev" | grep 'iterating again' | sed 's/^.*recovery/recovery/')"

job=norestart-$$
out=$PCM_TEST_DIR/none.out
timeout 300 "$pcmctl" run -n 2 --job "$job" --max-restarts 0 -- "$heat/heat2d_pcm" "${args[@]}" \
  --throttle-us 3000 >"$out" 2>&1 </dev/null &
run=$!
kill_one "$job" 100 || fail "could not kill a process of job 2: $(show "$out")"
wait "$run"
rc=$?
[ $rc -ne 0 ] || fail "pcmctl run --max-restarts 0 exited 0 after a loss"
"$pcmctl" events "$job" | grep -q "run failed (.*) after 0 recoveries: no more (--max-restarts 0)" ||
  fail "no event says the run failed for good: $("$pcmctl" events "$job")"
echo "run_recovers: with --max-restarts 0 the loss ends the run (exit $rc)"
echo "run_recovers: ok"
