#!/usr/bin/env bash
# fortran.sh [NP] [CALLS] [REPS] — the cost per call of pcm_adapt from Fortran (module pcm)
# against PCM_Adapt from C, in one run of bench/adapt_cost_f under a private pcmd (default 2
# processes, 200000 calls, 5 reps); then the line counts of heat2d_pcm.f90 and heat2d_plain.f90
# (all lines, and without blank and comment lines). Needs a build with the Fortran module (both
# builds: source scripts/.env, or scripts/.env.openmpi, first, which sets PCM_BUILD_DIR).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${PCM_BUILD_DIR:-$ROOT/build}
np=${1:-2} calls=${2:-200000} reps=${3:-5}
[ -x "$B/bench/adapt_cost_f" ] || { echo "no $B/bench/adapt_cost_f: build with Fortran" >&2; exit 1; }
PCM_JOB=adapt-cost-f "$ROOT/tests/integration/with_pcmd.sh" "$B/pcmd" \
  mpiexec -n "$np" "$B/bench/adapt_cost_f" "$calls" "$reps"
for f in heat2d_plain.f90 heat2d_pcm.f90 heat2d_plain.c heat2d_pcm.c; do
  p=$ROOT/examples/heat2d/$f
  code=$(grep -cvE '^\s*(!|/?\*|//|$)' "$p")
  echo "lines: $f $(wc -l <"$p") ($code without blank and comment lines)"
done
