#!/usr/bin/env bash
# two_jobs.sh BUILD HEAT2D-ARGS... — run under with_pcmd.sh. One pcmd serves two heat2d jobs at
# once; one of them migrates a process. Both end with the plain run's checksum, each with its own
# number of reconfigurations, and each job's data is stored in an HDF5 file readable by h5ls.
set -uo pipefail
build=$1
shift
here=$(dirname "${BASH_SOURCE[0]}")
"$here/heat2d_migrate.sh" "$build" 2 "1" "$@" >"$PCM_TEST_DIR/a.log" 2>&1 &
a=$!
"$here/heat2d_migrate.sh" "$build" 1 "" "$@" >"$PCM_TEST_DIR/b.log" 2>&1
rb=$?
wait $a
ra=$?
sed 's/^/[job a] /' "$PCM_TEST_DIR/a.log"
sed 's/^/[job b] /' "$PCM_TEST_DIR/b.log"
[ $ra -eq 0 ] && [ $rb -eq 0 ] || { echo "two_jobs: FAIL (a: $ra, b: $rb)"; exit 1; }
"$build/pcmctl" status
# The migrated job's mover stored its state; the store is plain HDF5.
files=$(ls "$PCM_TEST_DIR"/data/jobs/*/store.h5 | wc -l)
[ "$files" -eq 1 ] || { echo "two_jobs: FAIL: expected 1 store file, found $files"; exit 1; }
h5ls -r "$PCM_TEST_DIR"/data/jobs/*/store.h5 | tee "$PCM_TEST_DIR/h5ls.txt"
grep -q '^/rank_1/grid .*Dataset' "$PCM_TEST_DIR/h5ls.txt" || { echo "two_jobs: FAIL: no /rank_1/grid"; exit 1; }
h5dump -a /rank_1/grid/pcm_type "$PCM_TEST_DIR"/data/jobs/*/store.h5 | grep -q '"double"' ||
  { echo "two_jobs: FAIL: pcm_type attribute"; exit 1; }
echo "two_jobs: ok"
