#!/usr/bin/env bash
# pcmd_restart.sh BUILD PORTS SEED — run under with_pcmd.sh. heat2d_pcm runs on 2 processes and
# commits a checkpoint every 150 iterations while pcmd is stopped at seeded random moments (kill
# -9 or SIGTERM) and started again on the same configuration file and data directory: on the same
# port (PORTS=fixed) or on whatever free port it gets (PORTS=any). After each restart pcmctl must
# reach the job with a command (split, migrate, resize); once pcmd is also killed between a
# command and its completion, and once between a checkpoint asked (pcmctl checkpoint) and its
# writing. The job must end with the plain run's checksum, pcmd must show it finished with every
# reconfiguration, and a version committed after the last restart must exist.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1 ports=$2 seed=$3
pcmctl=$build/pcmctl
heat=$build/examples/heat2d
job=pcmd-restart-$ports-$seed
out=$PCM_TEST_DIR/job.out
RANDOM=$seed
fail() {
  echo "pcmd_restart: FAIL ($ports ports, seed $seed): $*" >&2
  [ -f "$out" ] && sed 's/^/  | /' "$out" | tail -40 >&2
  exit 1
}
args=(--nx 96 --ny 64 --iters 30000)

plain=$(timeout 300 "$MPIEXEC" -n 2 "$heat/heat2d_plain" "${args[@]}" | awk '/^checksum/ {print $2}')
[ -n "$plain" ] || fail "the plain run printed no checksum"

pidfile=$PCM_TEST_DIR/pcmd.pid
port=0
if [ "$ports" = fixed ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
stop_pcmd() {  # stop_pcmd SIGNAL: stops pcmd by its PID and waits until it is gone
  local pid
  pid=$(cat "$pidfile")
  kill "-$1" "$pid" || fail "pcmd (pid $pid) was not running"
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
  fail "pcmd (pid $pid) did not stop on SIG$1"
}
start_pcmd() {
  "$build/pcmd" --detach --pidfile "$pidfile" --data-dir "$PCM_TEST_DIR/data" \
    --config "$PCM_CONFIG" --port "$port" 2>>"$PCM_TEST_DIR/pcmd.log" || fail "pcmd did not start"
}
pause() { python3 -c "import time; time.sleep($1 / 1000)"; }
# The pcmd with_pcmd.sh started listens on a free port: start ours the way the test wants.
stop_pcmd TERM
start_pcmd

# On a failure the job is killed (kill_tree.sh) with the test.
PCM_JOB=$job PCM_RECONNECT_MS=60000 setsid "$MPIEXEC" -n 2 "$heat/heat2d_pcm" "${args[@]}" \
  --commit-every 150 --throttle-us 300 >"$out" 2>&1 </dev/null &
mpi=$!
trap '"$PCM_KILL_TREE" $mpi 2>/dev/null' EXIT
"$pcmctl" wait "$job" --iteration 200 --timeout 120 >/dev/null || fail "the job did not get going"

restart() {  # restart: stops pcmd with a seeded signal after a seeded delay, starts it again
  local sig=KILL
  [ $((RANDOM % 2)) -eq 0 ] && sig=TERM
  pause $((RANDOM % 400))
  stop_pcmd $sig
  pause $((RANDOM % 500))  # pcmd is down: the job's requests wait for it
  start_pcmd
  echo "pcmd stopped with SIG$sig and started again (pid $(cat "$pidfile"), $(python3 -c "import json; print(json.load(open('$PCM_CONFIG'))['endpoint'])"))"
}
n=0
for cmd in "split $job 0 --into 2" "migrate $job 1" "resize $job --to 2"; do
  restart
  # shellcheck disable=SC2086
  "$pcmctl" $cmd >/dev/null || fail "after a restart, 'pcmctl $cmd' was refused"
  n=$((n + 1))
  "$pcmctl" wait "$job" --reconfigurations $n --timeout 120 >/dev/null ||
    fail "'$cmd' did not complete after a pcmd restart"
  echo "$cmd: done"
done
# pcmd dies between a command and its completion: the job's report reaches the next pcmd.
"$pcmctl" migrate "$job" 0 >/dev/null || fail "pcmctl migrate 0 was refused"
restart
n=$((n + 1))
"$pcmctl" wait "$job" --reconfigurations $n --timeout 120 >/dev/null ||
  fail "a migration under way while pcmd restarted did not complete"
echo "migrate $job 0 with pcmd restarted meanwhile: done"
# A checkpoint asked just before pcmd stops is written (the request is in the job table).
asked=$("$pcmctl" checkpoint "$job" --why "test: across a pcmd restart") || fail "pcmctl checkpoint: $asked"
id=$(echo "$asked" | sed -n 's/^checkpoint \([0-9]*\) asked: .*/\1/p')
[ -n "$id" ] || fail "pcmctl checkpoint said: $asked"
restart
for ((i = 0; i < 600; i++)); do
  "$pcmctl" events "$job" | grep -q "checkpoint $id written .* after it was asked" && break
  kill -0 "$mpi" 2>/dev/null || fail "the job ended before checkpoint $id was written"
  sleep 0.1
done
"$pcmctl" events "$job" | grep -q "checkpoint $id written" ||
  fail "checkpoint $id, asked before pcmd restarted, was not written: $("$pcmctl" events "$job")"
echo "checkpoint $id asked before a pcmd restart: written"
after=$("$pcmctl" status "$job" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['iteration'])")

wait "$mpi"
rc=$?
trap - EXIT
[ $rc -eq 0 ] || fail "heat2d_pcm exited with $rc"
got=$(awk '/^checksum/ {print $2}' "$out")
[ "$got" = "$plain" ] || fail "checksum $got differs from the plain run's $plain"
status=$("$pcmctl" status "$job" --json) || fail "pcmctl status failed"
echo "$status" | python3 -c "
import json, sys
j = json.load(sys.stdin)['jobs'][0]
assert j['state'] == 'finished', j
assert j['reconfigurations'] == $n, j
" || fail "pcmd's status of the job: $status"
newest=$("$pcmctl" checkpoints "$job" --json | python3 -c "import json,sys; v=[x['iteration'] for x in json.load(sys.stdin) if x['valid']]; print(max(v) if v else -1)")
[ "$newest" -gt "$after" ] ||
  fail "no version committed after the last restart (newest $newest, restart at iteration $after)"
echo "pcmd_restart: ok ($ports ports, seed $seed): $n reconfigurations across 5 pcmd restarts, checksum $got, newest version $newest"
