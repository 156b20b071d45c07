#!/usr/bin/env bash
# The tests of the second MPI: sets up the Open MPI build (scripts/setup.sh with PCM_MPI=openmpi:
# Debian's Open MPI, <checkout>/build-openmpi, scripts/.env.openmpi) and runs the ctest label
# second-mpi there (store/load, migration, split, merge, resize, restart, heat2d bit for bit).
# Extra arguments go to ctest instead of the label (for example nothing but -j1, or -R heat2d;
# `scripts/test_openmpi.sh -L .` runs the whole suite on Open MPI). --build-only first: set up and
# build for those arguments, and run nothing.
# PCM_OPENMPI_BUILD_DIR: its build directory (default <checkout>/build-openmpi). What the MPICH
# environment exported (scripts/.env, sourced by scripts/test.sh before it calls this) must not
# leak in: with its PCM_BUILD_DIR the Open MPI set-up would reuse MPICH's build directory.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
unset PCM_BUILD_DIR PCM_MPI_FAMILY MPIEXEC
# The label second-mpi runs no GoogleTest program: without arguments they are not built (minutes
# of a 2-core CI run); with arguments (-L ., -R ...) they are.
unit=ON
build_only=
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
if [ $# -eq 0 ]; then unit=OFF; fi
PCM_MPI=openmpi PCM_BUILD_DIR=${PCM_OPENMPI_BUILD_DIR:-$ROOT/build-openmpi} \
  PCM_BUILD_UNIT_TESTS=$unit bash "$ROOT/scripts/setup.sh"
# --build-only: set up and build, run nothing (scripts/test.sh builds while the main suite runs).
if [ -n "$build_only" ]; then exit 0; fi
# shellcheck source=/dev/null
source "$ROOT/scripts/.env.openmpi"
cd "$PCM_BUILD_DIR"
if [ $# -eq 0 ]; then set -- -L second-mpi; fi
ctest --output-on-failure --timeout 900 "$@"
