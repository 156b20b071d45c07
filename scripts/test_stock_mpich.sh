#!/usr/bin/env bash
# The tests of the third MPI, Debian's own MPICH (ch4:ucx), which cannot spawn: sets up its build
# (scripts/setup.sh with PCM_MPI=stock-mpich: Debian's mpich and libmpich-dev,
# <checkout>/build-stock-mpich, scripts/.env.stock-mpich) and runs the ctest label stock-mpich
# there: the tests that spawn nothing (store/load, checkpoints, levels, restarts, recovery) and the
# restart reshapes (split, merge and migration without spawn, PCM_RESHAPE=auto after the spawn
# fails by itself; srun with PMI-2 is the MPICH build's). Extra arguments go to ctest instead of
# the label. --build-only first: set up and build, and run nothing.
# PCM_STOCK_MPICH_BUILD_DIR: its build directory (default <checkout>/build-stock-mpich).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
unset PCM_BUILD_DIR PCM_MPI_FAMILY MPIEXEC
build_only=
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
unit=ON
if [ $# -eq 0 ]; then unit=OFF; fi  # the label runs no GoogleTest program
PCM_MPI=stock-mpich PCM_BUILD_DIR=${PCM_STOCK_MPICH_BUILD_DIR:-$ROOT/build-stock-mpich} \
  PCM_BUILD_UNIT_TESTS=$unit bash "$ROOT/scripts/setup.sh"
if [ -n "$build_only" ]; then exit 0; fi
# shellcheck source=/dev/null
source "$ROOT/scripts/.env.stock-mpich"
cd "$PCM_BUILD_DIR"
if [ $# -eq 0 ]; then set -- -L stock-mpich; fi
ctest --output-on-failure --timeout 900 "$@"
