#!/usr/bin/env bash
# heat2d_fortran.sh MODE BUILD [NP] — the Fortran heat2d (examples/heat2d/*.f90) against the C one.
#   plain NP  heat2d_plain_f and heat2d_plain (C) on NP processes print the same checksum.
#   reshape   (under with_pcmd.sh) heat2d_pcm_f on 2 processes (cyclic layout: several segments
#             per rank, PCM's halo plan) is split 2 -> 3 (rank 0 into 2),
#             merged 3 -> 2 (ranks 1 and 2) and has rank 1 migrated, through pcmctl; it ends with
#             the C plain run's checksum and reports 3 reconfigurations, each with its kind and
#             size before (pcm_reconfig_last) and who asked (pcm_reconfig_reason).
#   restart   (under with_pcmd.sh) heat2d_pcm_f on 2 processes (block-cyclic of 3 columns)
#             commits every 100 iterations and is
#             killed with SIGKILL mid-run; restarted with PCM_RESTART=1 on 3 and then 1 process,
#             it resumes from the newest version and ends with the C plain run's checksum.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
mode=$1 build=$2 np=${3:-2}
heat=$build/examples/heat2d
pcmctl=$build/pcmctl
if [ -n "${PCM_TEST_DIR:-}" ]; then
  tmp=$PCM_TEST_DIR
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi
fail() { echo "heat2d_fortran $mode: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1"; }
# shellcheck source=tests/integration/reconfig_step.sh
source "$(dirname "${BASH_SOURCE[0]}")/reconfig_step.sh"
checksum() { awk '/^checksum/ {print $2}' "$1"; }
args=(--nx 61 --ny 40 --iters 1200)

timeout 120 "$MPIEXEC" -n "$np" "$heat/heat2d_plain" "${args[@]}" >"$tmp/c.out" 2>&1 ||
  fail "the C plain run exited with $?: $(show "$tmp/c.out")"
plain=$(checksum "$tmp/c.out")
[ -n "$plain" ] || fail "the C plain run printed no checksum"

case $mode in
plain)
  timeout 120 "$MPIEXEC" -n "$np" "$heat/heat2d_plain_f" "${args[@]}" >"$tmp/f.out" 2>&1 ||
    fail "heat2d_plain_f exited with $?: $(show "$tmp/f.out")"
  got=$(checksum "$tmp/f.out")
  [ "$got" = "$plain" ] || fail "Fortran checksum '$got', C $plain"
  echo "heat2d_fortran plain: ok: $np processes, checksum $got (C and Fortran)"
  ;;
reshape)
  job=heat2d-f-$$
  out=$tmp/pcm.out
  touch "$tmp/slow"
  start_job "$MPIEXEC" -n 2 "$heat/heat2d_pcm_f" "${args[@]}" --layout cyclic --throttle-us 2000 \
    --throttle-while "$tmp/slow"
  step 1 split split "$job" 0 --into 2
  step 2 merge merge "$job" 1 2
  step 3 migration migrate "$job" 1
  rm -f "$tmp/slow"
  wait $mpi
  rc=$?
  [ $rc -eq 0 ] || fail "heat2d_pcm_f exited with $rc: $(show "$out")"
  got=$(checksum "$out")
  [ "$got" = "$plain" ] || fail "checksum '$got' differs from the C plain run's $plain: $(show "$out")"
  n=$(awk '/^reconfigurations/ {print $2}' "$out")
  [ "$n" = 3 ] || fail "heat2d_pcm_f reports '$n' reconfigurations, expected 3: $(show "$out")"
  grep -E '^heat2d: (reconfiguration|retired)' "$out"
  # pcm_reconfig_last's kind and size before, pcm_reconfig_reason's text, for each.
  kinds=$(sed -n 's/^heat2d: reconfiguration [0-9]* at iter [0-9]*: \([a-z]*\) (procs \([0-9]*\) -> \([0-9]*\)), asked by "operator command"$/\1:\2:\3/p' "$out" | tr '\n' ' ')
  [ "$kinds" = "split:2:3 merge:3:2 migration:2:2 " ] ||
    fail "reconfigurations (kind:procs before:after) '$kinds', expected 'split:2:3 merge:3:2 migration:2:2 ': $(show "$out")"
  echo "heat2d_fortran reshape: ok: split, merge and migration, checksum $got (the C plain run's)"
  ;;
restart)
  job=heat2d-f-restart-$$
  kill_job_at 350 "$MPIEXEC" -n 2 "$heat/heat2d_pcm_f" "${args[@]}" --layout block-cyclic \
    --block 3 --commit-every 100 --throttle-us 3000
  grep -q '^checksum' "$tmp/run.out" && fail "the job finished before it was killed"
  for n in 3 1; do
    out=$tmp/r$n.out
    PCM_RESTART=1 PCM_JOB=$job timeout 120 "$MPIEXEC" -n $n "$heat/heat2d_pcm_f" "${args[@]}" \
      --layout block-cyclic --block 3 \
      >"$out" 2>&1 </dev/null || fail "restart on $n exited with $?: $(show "$out")"
    k=$(sed -n 's/^heat2d: restarted from iteration \([0-9]*\) (2 -> '"$n"' processes)$/\1/p' "$out")
    [ -n "$k" ] && [ "$k" -ge 300 ] || fail "restart on $n: no 'restarted from iteration K>=300': $(show "$out")"
    got=$(checksum "$out")
    [ "$got" = "$plain" ] || fail "restart on $n: checksum '$got', C plain $plain: $(show "$out")"
    echo "heat2d_fortran restart: on $n processes from iteration $k: checksum $got: ok"
  done
  ;;
*) fail "mode plain, reshape or restart expected" ;;
esac
