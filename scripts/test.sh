#!/usr/bin/env bash
# The README's test command: set up (packages, MPI, build) and run the whole test suite, then the
# tests of the second MPI (scripts/test_openmpi.sh: Debian's Open MPI, ctest -L second-mpi), the
# sanitizer build's tests (scripts/sanitize.sh) and 60 s of fuzzing (scripts/fuzz.sh --time 60).
# Extra arguments go to ctest (for example -L unit, or -R heat2d), and then only ctest runs;
# without them the label soak is left out (ctest -L soak in the build directory runs it).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh"
# shellcheck source=/dev/null
source "$ROOT/scripts/.env"
cd "$PCM_BUILD_DIR"
if [ $# -eq 0 ]; then
  # The whole run leaves out the label soak (sequences that repeat other tests' settings).
  ctest --output-on-failure --timeout 900 -LE soak
else
  ctest --output-on-failure --timeout 900 "$@"
fi
if [ $# -eq 0 ]; then
  bash "$ROOT/scripts/test_openmpi.sh"
  bash "$ROOT/scripts/sanitize.sh"
  bash "$ROOT/scripts/fuzz.sh" --time "${PCM_FUZZ_SECONDS:-60}"
fi
