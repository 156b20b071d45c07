#!/usr/bin/env bash
# paper_vector.sh MODE BUILD PROGRAM... — (under with_pcmd.sh) a vector made malleable with the
# paper's explicit calls, in Python (tests/python/paper_vector.py: PROGRAM is PYTHON and the
# script) or Fortran (tests/fortran/paper_vector.f90: PROGRAM is paper_vector_f): pcm.status /
# pcm_status, store/load, reconfigure, split, merge, commit; the program checks every element
# after each reconfiguration and its ghosts after every exchange.
#   reshape  2 processes, split 2 -> 3 (rank 0 into 2), merge 3 -> 2 (ranks 1 and 2), rank 1
#            migrated and resized 2 -> 3 (M->N), through pcmctl; the job reports each
#            (PCM_Reconfig_last's kind and size before) and ends "paper: ok: 4 reconfigurations,
#            3 processes, 0 wrong".
#   restart  2 processes committing every 100 iterations (store, commit), killed with SIGKILL
#            after iteration 350, restarted with PCM_RESTART=1 on 3 processes (load_dist,
#            load_redistribute): it resumes from iteration 300 or later with every element right
#            and ends verified.
# PYTHONPATH must hold the pcm package for the Python program (ctest sets it).
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
mode=$1 build=$2
shift 2
prog=("$@")
pcmctl=$build/pcmctl
tmp=${PCM_TEST_DIR:-$(mktemp -d)}
fail() { echo "paper_vector $mode: FAIL: $*" >&2; exit 1; }
show() { tail -n 30 "$1" | sed 's/^/  | /'; }
# shellcheck source=tests/integration/reconfig_step.sh
source "$(dirname "${BASH_SOURCE[0]}")/reconfig_step.sh"

case $mode in
reshape)
  job=paper-$$
  out=$tmp/job.out
  touch "$tmp/slow"
  start_job "$MPIEXEC" -n 2 "${prog[@]}" --iters 1500 --throttle-us 2000 --throttle-while "$tmp/slow"
  step 1 split split "$job" 0 --into 2
  step 2 merge merge "$job" 1 2
  step 3 migration migrate "$job" 1
  step 4 resize resize "$job" --to 3
  rm -f "$tmp/slow"
  wait $mpi || fail "the program exited with $?: $(show "$out")"
  trap - EXIT
  grep -q '^paper: ok: 4 reconfigurations, 3 processes, 0 wrong$' "$out" ||
    fail "no 'paper: ok: 4 reconfigurations, 3 processes, 0 wrong': $(show "$out")"
  # PCM_Reconfig_last's kinds, in order: PCM_SPLIT (3), PCM_MERGE (4), PCM_MIGRATE (1), and
  # PCM_SPLIT again for the growing resize (M->N).
  kinds=$(sed -n 's/^paper: reconfiguration [0-9]* at iteration [0-9]*: kind \([0-9]*\), \([0-9]*\) -> \([0-9]*\) processes.*/\1:\2:\3/p' "$out" | tr '\n' ' ')
  [ "$kinds" = "3:2:3 4:3:2 1:2:2 3:2:3 " ] ||
    fail "reconfigurations (kind:before:after) '$kinds', expected '3:2:3 4:3:2 1:2:2 3:2:3 ': $(show "$out")"
  echo "paper_vector reshape: ok: split 2->3, merge 3->2, migration, resize 2->3; every element checked after each"
  ;;
restart)
  job=paper-restart-$$
  kill_job_at 350 "$MPIEXEC" -n 2 "${prog[@]}" --iters 1000 --commit-every 100 --throttle-us 3000
  grep -q '^paper: ok' "$tmp/run.out" && fail "the job finished before it was killed"
  out=$tmp/r3.out
  PCM_RESTART=1 PCM_JOB=$job timeout 120 "$MPIEXEC" -n 3 "${prog[@]}" --iters 1000 \
    --commit-every 100 >"$out" 2>&1 </dev/null || fail "the restart exited with $?: $(show "$out")"
  k=$(sed -n 's/^paper: restarted from iteration \([0-9]*\) (2 -> 3 processes)$/\1/p' "$out")
  [ -n "$k" ] && [ "$k" -ge 300 ] ||
    fail "no 'restarted from iteration K>=300 (2 -> 3 processes)': $(show "$out")"
  grep -q '^paper: ok: 0 reconfigurations, 3 processes, 0 wrong$' "$out" ||
    fail "the restart did not end verified: $(show "$out")"
  echo "paper_vector restart: ok: killed, restarted on 3 processes from iteration $k, every element right"
  ;;
*) fail "mode reshape or restart expected" ;;
esac
