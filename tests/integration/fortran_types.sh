#!/usr/bin/env bash
# fortran_types.sh BUILD — run under with_pcmd.sh. tests/fortran/types.f90 on 2 processes (arrays of
# real(c_double), real(c_float), integer(c_int) and integer(c_int64_t), scalars of each) is split
# 2 -> 3 (rank 0 into 2) and merged 3 -> 2 (ranks 1 and 2) through pcmctl; every process checks
# every element after each reshape, and rank 0 gathers each array in global order at the end.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
prog=$build/tests/fortran_types
fail() { echo "fortran_types: FAIL: $*" >&2; exit 1; }
show() { tail -n 30 "$1" | sed 's/^/  | /'; }

job=ftypes-$$
out=$PCM_TEST_DIR/job.out
slow=$PCM_TEST_DIR/slow
touch "$slow"
# shellcheck source=tests/integration/reconfig_step.sh
source "$(dirname "${BASH_SOURCE[0]}")/reconfig_step.sh"
start_job "$MPIEXEC" -n 2 "$prog" 3000 "$slow"
step 1 split split "$job" 0 --into 2
step 2 merge merge "$job" 1 2
rm -f "$slow"
wait "$mpi" || fail "the job exited with $?: $(show "$out")"
trap - EXIT
# (How many reshapes the last rank 0 saw depends on the MPI: under Open MPI the split retires the
# whole started world, and rank 0 is then a spawned process that saw the merge only.)
grep -q '^types: ok: 2 processes at the end, [12] reshapes seen by this rank 0' "$out" ||
  fail "no success line: $(show "$out")"
grep '^types: ok' "$out"
