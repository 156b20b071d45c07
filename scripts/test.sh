#!/usr/bin/env bash
# The README's test command: set up (packages, MPI, build) and run the whole test suite.
# Extra arguments go to ctest (for example -L unit, or -R heat2d).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh"
# shellcheck source=/dev/null
source "$ROOT/scripts/.env"
cd "$PCM_BUILD_DIR"
ctest --output-on-failure --timeout 900 "$@"
