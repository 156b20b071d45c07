#!/usr/bin/env bash
# small_heat2d.sh — sourced (`source small_heat2d.sh "$@"`) by the tests that take the arguments
# MPIEXEC PCMCTL HEAT2D_PCM HEAT2D_PLAIN and run the small heat2d case (checkpoint_levels.sh,
# epoch_fence.sh): sets mpiexec, pcmctl, heat, plain, args (64 x 48, 90 iterations, a version
# every 10), fail and show (naming the test after its script), and want, the plain run's
# checksum on 2 processes; and the helpers newest JOB (the newest valid version's iteration, -1:
# none) and rank_pid JOB RANK (the pid of the job's heat2d_pcm process of that MPI rank).
# shellcheck disable=SC2034  # the variables are the sourcing script's
mpiexec=$1 pcmctl=$2 heat=$3 plain=$4
test_name=$(basename "$0" .sh)
fail() { echo "$test_name: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1" | tail -40; }
args=(--nx 64 --ny 48 --iters 90 --commit-every 10)
want=$("$mpiexec" -n 2 "$plain" "${args[@]}" | sed -n 's/^checksum //p')
[ -n "$want" ] || fail "the plain run printed no checksum"
newest() {
  "$pcmctl" checkpoints "$1" --json | python3 -c '
import json, sys
print(max([v["iteration"] for v in json.load(sys.stdin) if v["valid"]], default=-1))'
}
# From the process's environment: hydra's PMI_RANK, Open MPI's OMPI_COMM_WORLD_RANK.
rank_pid() {
  local job=$1 rank=$2 f p
  for f in $(grep -lzxF "PCM_JOB=$job" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}
    p=${p%/environ}
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = heat2d_pcm ] || continue
    grep -qzxE "(PMI_RANK|OMPI_COMM_WORLD_RANK)=$rank" "$f" 2>/dev/null && echo "$p"
  done
}
