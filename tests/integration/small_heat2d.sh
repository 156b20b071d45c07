#!/usr/bin/env bash
# small_heat2d.sh — sourced (`source small_heat2d.sh "$@"`) by the tests that take the arguments
# MPIEXEC PCMCTL HEAT2D_PCM HEAT2D_PLAIN and run the small heat2d case (checkpoint_levels.sh,
# epoch_fence.sh): sets mpiexec, pcmctl, heat, plain, args (64 x 48, 90 iterations, a version
# every 10), fail and show (naming the test after its script), and want, the plain run's
# checksum on 2 processes.
# shellcheck disable=SC2034  # the variables are the sourcing script's
mpiexec=$1 pcmctl=$2 heat=$3 plain=$4
test_name=$(basename "$0" .sh)
fail() { echo "$test_name: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1" | tail -40; }
args=(--nx 64 --ny 48 --iters 90 --commit-every 10)
want=$("$mpiexec" -n 2 "$plain" "${args[@]}" | sed -n 's/^checksum //p')
[ -n "$want" ] || fail "the plain run printed no checksum"
