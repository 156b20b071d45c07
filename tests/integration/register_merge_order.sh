#!/usr/bin/env bash
# register_merge_order.sh BUILD — run under with_pcmd.sh. tests/mpi_register (a block and a cyclic
# array) on 2 processes: split rank 0 into 3, then merge ranks 1 and 2. After the cyclic split the
# two arrays' maps order the merged ranks differently (by first unit); the merge must still move
# both arrays exactly, and the job end with every element right.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
job=merge-order-$$
out=$PCM_TEST_DIR/job.out
fail() { echo "register_merge_order: FAIL: $*" >&2; sed 's/^/  | /' "$out" >&2; exit 1; }
PCM_JOB=$job timeout 300 "$MPIEXEC" -n 2 "$build/tests/mpi_register" 2500 2000 >"$out" 2>&1 </dev/null &
mpi=$!
"$pcmctl" wait "$job" --iteration 20 --timeout 120 || fail "the job did not get going"
"$pcmctl" split "$job" 0 --into 3 || fail "split refused"
"$pcmctl" wait "$job" --reconfigurations 1 --timeout 120 || fail "the split did not complete"
"$pcmctl" merge "$job" 1 2 || fail "merge refused"
"$pcmctl" wait "$job" --reconfigurations 2 --timeout 120 || fail "the merge did not complete"
wait $mpi
rc=$?
[ $rc -eq 0 ] || fail "mpi_register exited with $rc"
grep -q '^register: ok: 2 reconfigurations, 3 processes, 0 wrong' "$out" || fail "no success line"
echo "register_merge_order: ok"
