#!/usr/bin/env bash
# stress.sh [--runs N] [--loops K] CTEST_ARGS... — runs the tests that CTEST_ARGS select (for
# example -L integration) N times (default 5), each time beside K busy loops (default 2: one per
# core of the CI machine), and prints each test's passes out of N, the failures first. A test
# that needs an idle machine shows here. The busy loops are this script's own processes, ended
# by their PIDs; the logs of each run stay in <build>/stress/. Exit status 1 if any run of any
# test failed. Needs the build (scripts/setup.sh); not part of scripts/test.sh (it is long).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=5 loops=2
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --loops) loops=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: stress.sh [--runs N] [--loops K] CTEST_ARGS... (e.g. -L integration)" >&2; exit 2; }
# shellcheck source=/dev/null
source "$ROOT/scripts/.env"
out=$PCM_BUILD_DIR/stress
mkdir -p "$out"
rm -f "$out"/run-*.xml "$out"/run-*.log

busy=()
stop_busy() {
  local p
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${busy[@]}"; do wait "$p" 2>/dev/null || true; done
  busy=()
}
trap stop_busy EXIT
for ((r = 1; r <= runs; r++)); do
  for ((k = 0; k < loops; k++)); do
    bash -c 'while :; do :; done' &
    busy+=($!)
  done
  echo "stress: run $r of $runs beside $loops busy loops: ctest $*"
  (cd "$PCM_BUILD_DIR" && ctest --timeout 900 --output-junit "$out/run-$r.xml" "$@" \
    >"$out/run-$r.log" 2>&1) || true
  stop_busy
  grep -E "tests passed|tests failed" "$out/run-$r.log" | tail -1 | sed 's/^/stress:   /'
done

python3 - "$out" "$runs" <<'PY'
import glob, os, sys
import xml.etree.ElementTree as ET
out, runs = sys.argv[1], int(sys.argv[2])
passes, seen = {}, {}
for f in sorted(glob.glob(os.path.join(out, "run-*.xml"))):
    for case in ET.parse(f).getroot().iter("testcase"):
        name = case.get("name")
        status = case.get("status", "")
        if status == "notrun" or case.find("skipped") is not None:
            continue
        seen[name] = seen.get(name, 0) + 1
        ok = case.find("failure") is None and case.find("error") is None and status != "fail"
        passes[name] = passes.get(name, 0) + (1 if ok else 0)
if not seen:
    sys.exit("stress: no test ran (see " + out + "/run-1.log)")
rows = sorted(seen, key=lambda n: (passes[n] - seen[n], n))
width = max(len(n) for n in rows)
print(f"\n{'test':<{width}}  passed")
for n in rows:
    print(f"{n:<{width}}  {passes[n]}/{seen[n]}")
bad = [n for n in rows if passes[n] < seen[n]]
print(f"\nstress: {len(rows) - len(bad)} of {len(rows)} tests passed every run of {runs}"
      + (f"; {len(bad)} failed at least once" if bad else ""))
sys.exit(1 if bad else 0)
PY
