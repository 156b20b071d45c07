#!/usr/bin/env bash
# two_jobs.sh BUILD HEAT2D-ARGS... — run under with_pcmd.sh. One pcmd serves two heat2d jobs at
# once; one of them migrates a process. Both end with the plain run's checksum, each with its own
# number of reconfigurations, as pcmd reports too.
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
# pcmd kept the two jobs apart: both finished, one with a reconfiguration and one without.
"$build/pcmctl" status --json | python3 -c '
import json, sys
jobs = sorted((j["reconfigurations"], j["state"], j["size"]) for j in json.load(sys.stdin)["jobs"])
want = [(0, "finished", 1), (1, "finished", 2)]
sys.exit(0 if jobs == want else f"two_jobs: FAIL: pcmd shows {jobs}, expected {want}")
' || exit 1
echo "two_jobs: ok"
