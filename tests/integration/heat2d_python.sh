#!/usr/bin/env bash
# heat2d_python.sh MODE BUILD PYTHON — examples/heat2d/heat2d.py (NumPy, the pcm package) against
# the C heat2d, bit for bit: the same checksum and the same --dump bytes as heat2d_plain (C).
#   plain    heat2d.py on 2 processes, no reconfiguration.
#   reshape  (under with_pcmd.sh) heat2d.py on 2 processes, cyclic layout (several segments per
#            rank: PCM's halo plan), split 2 -> 3 (rank 0 into 2), merged 3 -> 2 (ranks 1 and 2)
#            and with rank 1 migrated, through pcmctl; 3 reconfigurations.
#   restart  (under with_pcmd.sh) heat2d.py on 2 processes, block-cyclic of 3 columns,
#            checkpointing every 100 iterations,
#            killed with SIGKILL after iteration 350, restarted with PCM_RESTART=1 on 3 and then
#            1 process: each resumes from iteration 300 or later.
# PYTHONPATH must hold the pcm package (ctest sets it).
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
mode=$1 build=$2 python=$3
heat=$build/examples/heat2d
py=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../examples/heat2d" && pwd)/heat2d.py
pcmctl=$build/pcmctl
tmp=${PCM_TEST_DIR:-$(mktemp -d)}
fail() { echo "heat2d_python $mode: FAIL: $*" >&2; exit 1; }
show() { tail -n 30 "$1" | sed 's/^/  | /'; }
# shellcheck source=tests/integration/reconfig_step.sh
source "$(dirname "${BASH_SOURCE[0]}")/reconfig_step.sh"
checksum() { awk '/^checksum/ {print $2}' "$1"; }
args=(--nx 61 --ny 40 --iters 1200)

timeout 120 "$MPIEXEC" -n 2 "$heat/heat2d_plain" "${args[@]}" --dump "$tmp/c.grid" >"$tmp/c.out" 2>&1 ||
  fail "the C plain run exited with $?: $(show "$tmp/c.out")"
plain=$(checksum "$tmp/c.out")
[ -n "$plain" ] || fail "the C plain run printed no checksum"
same() {  # same OUT GRID WHAT: OUT's checksum and GRID's bytes are the C plain run's
  local got
  got=$(checksum "$1")
  [ "$got" = "$plain" ] || fail "$3: checksum '$got', C plain $plain: $(show "$1")"
  cmp -s "$2" "$tmp/c.grid" || fail "$3: the dumped grid differs from the C plain run's"
}

case $mode in
plain)
  timeout 120 "$MPIEXEC" -n 2 "$python" "$py" "${args[@]}" --dump "$tmp/py.grid" >"$tmp/py.out" 2>&1 ||
    fail "heat2d.py exited with $?: $(show "$tmp/py.out")"
  same "$tmp/py.out" "$tmp/py.grid" "heat2d.py"
  echo "heat2d_python plain: ok: checksum $plain and the grid's bytes, as the C heat2d"
  ;;
reshape)
  job=heat2d-py-$$
  out=$tmp/pcm.out
  touch "$tmp/slow"
  start_job "$MPIEXEC" -n 2 "$python" "$py" "${args[@]}" --dump "$tmp/py.grid" --layout cyclic \
    --throttle-us 2000 --throttle-while "$tmp/slow"
  step 1 split split "$job" 0 --into 2
  step 2 merge merge "$job" 1 2
  step 3 migration migrate "$job" 1
  rm -f "$tmp/slow"
  wait $mpi || fail "heat2d.py exited with $?: $(show "$out")"
  trap - EXIT
  same "$out" "$tmp/py.grid" "after the reconfigurations"
  n=$(awk '/^reconfigurations/ {print $2}' "$out")
  [ "$n" = 3 ] || fail "heat2d.py reports '$n' reconfigurations, expected 3: $(show "$out")"
  echo "heat2d_python reshape: ok: split, merge and migration, checksum $plain and the grid's bytes"
  ;;
restart)
  job=heat2d-py-restart-$$
  kill_job_at 350 "$MPIEXEC" -n 2 "$python" "$py" "${args[@]}" --commit-every 100 \
    --layout block-cyclic --block 3 --throttle-us 3000
  grep -q '^checksum' "$tmp/run.out" && fail "the job finished before it was killed"
  for n in 3 1; do
    out=$tmp/r$n.out
    PCM_RESTART=1 PCM_JOB=$job timeout 120 "$MPIEXEC" -n $n "$python" "$py" "${args[@]}" \
      --layout block-cyclic --block 3 --dump "$tmp/r$n.grid" >"$out" 2>&1 </dev/null || fail "restart on $n exited with $?: $(show "$out")"
    k=$(sed -n 's/^heat2d: restarted from iteration \([0-9]*\) on '"$n"' processes$/\1/p' "$out")
    [ -n "$k" ] && [ "$k" -ge 300 ] || fail "restart on $n: no 'restarted from iteration K>=300': $(show "$out")"
    same "$out" "$tmp/r$n.grid" "the restart on $n"
    echo "heat2d_python restart: on $n processes from iteration $k: checksum $plain and the grid's bytes"
  done
  ;;
*) fail "mode plain, reshape or restart expected" ;;
esac
