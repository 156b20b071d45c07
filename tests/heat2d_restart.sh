#!/usr/bin/env bash
# heat2d_restart.sh BUILD — run under with_pcmd.sh. heat2d_pcm commits a version every 100 iterations
# and is killed with SIGKILL (its whole process group) mid-run; restarted with PCM_RESTART=1 on 1,
# 2 and 3 processes, it resumes from the newest version and ends with the plain run's checksum.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
heat=$build/examples/heat2d
job=heat2d-restart-$$
fail() { echo "heat2d_restart: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1"; }
args=(--nx 97 --ny 64 --iters 1200)
pcm_args=("${args[@]}" --layout block-cyclic --block 3)

plain=$(timeout 300 "$MPIEXEC" -n 2 "$heat/heat2d_plain" "${args[@]}" | awk '/^checksum/ {print $2}')
[ -n "$plain" ] || fail "the plain run printed no checksum"

# setsid: the job gets its own process group, so one kill reaches mpiexec, its proxies and ranks.
PCM_JOB=$job setsid "$MPIEXEC" -n 2 "$heat/heat2d_pcm" "${pcm_args[@]}" --commit-every 100 \
  --throttle-us 1500 >"$PCM_TEST_DIR/run.out" 2>&1 </dev/null &
mpi=$!
"$pcmctl" wait "$job" --iteration 450 --timeout 120 ||
  fail "the job did not reach iteration 450: $(show "$PCM_TEST_DIR/run.out")"
kill -9 -- -"$mpi"
wait "$mpi" 2>/dev/null
"$pcmctl" wait "$job" --ended --timeout 30 || fail "pcmd did not notice that the job died"
grep -q '^checksum' "$PCM_TEST_DIR/run.out" && fail "the job finished before it was killed"
"$pcmctl" checkpoints "$job" || fail "cannot list the job's versions"

first=
for np in 1 2 3; do
  out=$PCM_TEST_DIR/r$np.out
  # The last restart commits again as it runs (and must not trip over the version it came from).
  more=()
  [ $np -eq 3 ] && more=(--commit-every 100)
  PCM_RESTART=1 PCM_JOB=$job timeout 300 "$MPIEXEC" -n $np "$heat/heat2d_pcm" "${pcm_args[@]}" \
    "${more[@]}" --throttle-us 0 >"$out" 2>&1 </dev/null || fail "restart on $np exited with $?:
$(show "$out")"
  k=$(sed -n 's/^heat2d: restarted from iteration \([0-9]*\) (2 -> '"$np"' processes)$/\1/p' "$out")
  [ -n "$k" ] || fail "restart on $np printed no 'restarted from iteration K (2 -> $np processes)':
$(show "$out")"
  [ "$k" -ge 400 ] || fail "restart on $np resumed from iteration $k, expected >= 400"
  [ -z "$first" ] || [ "$k" = "$first" ] ||
    fail "restart on $np resumed from iteration $k, the first one from $first"
  first=$k
  got=$(awk '/^checksum/ {print $2}' "$out")
  [ "$got" = "$plain" ] || fail "restart on $np: checksum '$got' differs from the plain run's $plain:
$(show "$out")"
  echo "heat2d_restart: restart on $np processes from iteration $k: checksum $got: ok"
done
"$pcmctl" checkpoints "$job" | grep -qE '(^|[^0-9])1100([^0-9]|$)' ||
  fail "the restart with --commit-every left no version of iteration 1100: $("$pcmctl" checkpoints "$job")"
echo "heat2d_restart: ok: resumed from iteration $first on 1, 2 and 3 processes, checksum $plain"
