#!/usr/bin/env bash
# private_data.sh BUILD — run under with_pcmd.sh (which starts pcmd with the caller's umask).
# Under a permissive umask, a job stores and checkpoints; then nothing under pcmd's data
# directory may be readable, writable or searchable by group or others.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
umask 022
PCM_JOB=private-$$ timeout 120 "$MPIEXEC" -n 2 "$build/examples/vecsum/vecsum" 101 60 block 0 20 \
  >"$PCM_TEST_DIR/job.out" 2>&1 </dev/null ||
  { echo "private_data: FAIL: the job failed"; cat "$PCM_TEST_DIR/job.out"; exit 1; }
n=$(find "$PCM_TEST_DIR/data" | wc -l)
[ "$n" -gt 3 ] || { echo "private_data: FAIL: the job left nothing in the data directory"; exit 1; }
open=$(find "$PCM_TEST_DIR/data" -perm /077)
[ -z "$open" ] || { echo "private_data: FAIL: open to others:"; ls -ld $open; exit 1; }
echo "private_data: ok: $n paths under the data directory, none open to group or others"
