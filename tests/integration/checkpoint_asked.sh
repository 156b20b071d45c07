#!/usr/bin/env bash
# checkpoint_asked.sh BUILD — run under with_pcmd.sh. `pcmctl checkpoint JOB` asks a running
# heat2d_pcm (which never checkpoints by itself here) for a version: PCM_Adapt writes it at the
# next agreement, pcmd clears the request and records it in the events. Asked again after a
# split to 3, the job writes a second version on 3 processes; killed with SIGKILL, it restarts on
# 2 from that one with the plain run's checksum. A job that checkpoints every iteration by itself
# (PCM_Checkpoint(world, it)) and is asked for one too never meets its own version twice.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
heat=$build/examples/heat2d
job=asked-$$
fail() { echo "checkpoint_asked: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1"; }
args=(--nx 64 --ny 48 --iters 1500)

# field JOB EXPR: a Python expression over the job's status (j) and its versions (v).
field() {
  python3 - "$1" "$2" "$("$pcmctl" status "$1" --json)" "$("$pcmctl" checkpoints "$1" --json)" <<'PY'
import json, sys
j = json.loads(sys.argv[3])["jobs"][0]
v = json.loads(sys.argv[4])
print(eval(sys.argv[2]))
PY
}
# written JOB N: wait (60 s at most) until the job has N valid versions and no request open.
written() {
  local i
  for ((i = 0; i < 600; i++)); do
    [ "$(field "$1" "j['checkpoint_wanted'] is None and sum(1 for x in v if x.get('valid')) >= $2")" = True ] &&
      return 0
    [ "$(field "$1" "j['state']")" = running ] || return 1
    sleep 0.1
  done
  return 1
}

plain=$(timeout 300 "$MPIEXEC" -n 2 "$heat/heat2d_plain" "${args[@]}" | awk '/^checksum/ {print $2}')
[ -n "$plain" ] || fail "the plain run printed no checksum"

PCM_JOB=$job setsid "$MPIEXEC" -n 2 "$heat/heat2d_pcm" "${args[@]}" --throttle-us 4000 \
  >"$PCM_TEST_DIR/run.out" 2>&1 </dev/null &
mpi=$!
"$pcmctl" wait "$job" --iteration 50 --timeout 120 >/dev/null ||
  fail "the job did not reach iteration 50: $(show "$PCM_TEST_DIR/run.out")"
[ "$(field "$job" "len(v)")" = 0 ] || fail "the job has versions before it was asked for one"
out=$("$pcmctl" checkpoint "$job" --why "test: the first") || fail "pcmctl checkpoint: $out"
grep -q "^checkpoint [0-9]* asked: test: the first$" <<<"$out" || fail "pcmctl checkpoint said: $out"
written "$job" 1 || fail "no version written after the request: $("$pcmctl" status "$job")
$(show "$PCM_TEST_DIR/run.out")"
"$pcmctl" events "$job" | grep -q "checkpoint [0-9]* written .* after it was asked (test: the first)" ||
  fail "the events do not record the request written: $("$pcmctl" events "$job")"
first=$(field "$job" "max(x['iteration'] for x in v)")
echo "checkpoint_asked: asked at iteration >= 50, version $first written"

"$pcmctl" split "$job" 0 --into 2 >/dev/null || fail "split refused"
"$pcmctl" wait "$job" --reconfigurations 1 --timeout 120 >/dev/null || fail "the split did not complete"
"$pcmctl" checkpoint "$job" --why "test: the second" >/dev/null || fail "the second request refused"
written "$job" 2 || fail "no second version: $("$pcmctl" checkpoints "$job")"
second=$(field "$job" "max(x['iteration'] for x in v)")
procs=$(field "$job" "[x['nprocs'] for x in v if x['iteration'] == $second][0]")
[ "$second" -gt "$first" ] && [ "$procs" = 3 ] ||
  fail "second version $second on $procs processes (expected after $first, on 3)"
"$PCM_KILL_TREE" "$mpi"
wait "$mpi" 2>/dev/null
"$pcmctl" wait "$job" --ended --timeout 30 >/dev/null || fail "pcmd did not notice that the job died"
grep -q '^checksum' "$PCM_TEST_DIR/run.out" && fail "the job finished before it was killed"

out=$PCM_TEST_DIR/restart.out
PCM_RESTART=1 PCM_JOB=$job timeout 300 "$MPIEXEC" -n 2 "$heat/heat2d_pcm" "${args[@]}" \
  >"$out" 2>&1 </dev/null || fail "the restart exited with $?: $(show "$out")"
grep -q "^heat2d: restarted from iteration $second (3 -> 2 processes)$" "$out" ||
  fail "the restart did not resume from version $second: $(show "$out")"
got=$(awk '/^checksum/ {print $2}' "$out")
[ "$got" = "$plain" ] || fail "restart: checksum '$got', the plain run's $plain"
echo "checkpoint_asked: versions $first (2 processes) and $second (3) asked and written; restart on 2 from $second: checksum $got"

# A job that writes its own version every iteration: whichever comes first ends the request, its
# own commit (pcmd takes any version committed after the request) or PCM_Adapt's version of the
# iteration, whose PCM_Checkpoint(world, it) then succeeds without writing it twice. Either way
# the job finishes with the plain run's checksum.
job2=asked-own-$$
args2=(--nx 32 --ny 32 --iters 400)
plain2=$(timeout 300 "$MPIEXEC" -n 2 "$heat/heat2d_plain" "${args2[@]}" | awk '/^checksum/ {print $2}')
PCM_JOB=$job2 timeout 300 "$MPIEXEC" -n 2 "$heat/heat2d_pcm" "${args2[@]}" --commit-every 1 \
  --throttle-us 2000 >"$PCM_TEST_DIR/own.out" 2>&1 </dev/null &
mpi2=$!
"$pcmctl" wait "$job2" --iteration 30 --timeout 120 >/dev/null || fail "job 2 did not start"
"$pcmctl" checkpoint "$job2" >/dev/null || fail "the request to job 2 refused"
wait "$mpi2" || fail "job 2 failed: $(show "$PCM_TEST_DIR/own.out")"
[ "$(awk '/^checksum/ {print $2}' "$PCM_TEST_DIR/own.out")" = "$plain2" ] ||
  fail "job 2: checksum differs from the plain run's $plain2: $(show "$PCM_TEST_DIR/own.out")"
# (Its events are its last few, all commits by now: the request's state tells.)
[ "$(field "$job2" "j['checkpoint_wanted'] is None")" = True ] ||
  fail "job 2's request was never written: $("$pcmctl" status "$job2")"
how=own
grep -q "asked by pcmd: version of iteration" "$PCM_TEST_DIR/own.out" && how="PCM_Adapt's"
echo "checkpoint_asked: job 2 (its own version every iteration): request ended by $how version, checksum $plain2"
echo "checkpoint_asked: ok"
