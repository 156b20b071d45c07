#!/usr/bin/env bash
# Fuzzes pcmd's request path (tests/fuzz/fuzz_request.cpp) with libFuzzer: builds the target with
# Clang, ASan and UBSan in the instrumented build directory (scripts/instrumented.sh), runs it from the seed corpus
# (tests/fuzz/corpus) and prints executions, executions per second and the peak RSS.
#   bash scripts/fuzz.sh                 # soak: FUZZ_RUNS (1000000) executions
#   bash scripts/fuzz.sh --time 60       # bounded by time (what CI runs)
#   bash scripts/fuzz.sh --build-only    # build the target, run nothing
# Inputs the fuzzer finds interesting stay in the build directory's corpus/ (not committed); an
# input that crashes pcmd lands in its crashes/ and fails the run: copy it into
# tests/fuzz/regressions/ to make it a test (ctest fuzz.replay), then fix pcmd.
# Environment: PCM_FUZZ_BUILD_DIR (default: the instrumented build of scripts/sanitize.sh,
# <checkout>/build-asan), FUZZ_RUNS.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=
if [ "${1:-}" = --time ]; then seconds=${2:?--time SECONDS}; fi
bash "$ROOT/scripts/setup.sh" --no-build >/dev/null
# shellcheck source=/dev/null
source "$ROOT/scripts/.env"
B=${PCM_FUZZ_BUILD_DIR:-${PCM_ASAN_BUILD_DIR:-$ROOT/build-asan}}
# shellcheck source=scripts/instrumented.sh
source "$ROOT/scripts/instrumented.sh"
instrumented_configure "$B"
cmake --build "$B" --target pcmd_fuzz -j"$(nproc)"
if [ "${1:-}" = --build-only ]; then exit 0; fi
mkdir -p "$B/corpus" "$B/crashes"
args=(-max_len=16384 -timeout=20 -rss_limit_mb=2048 -print_final_stats=1
  -artifact_prefix="$B/crashes/")
if [ -n "$seconds" ]; then
  args+=(-max_total_time="$seconds")
else
  args+=(-runs="${FUZZ_RUNS:-1000000}")
fi
fuzzer=$B/tests/fuzz/pcmd_fuzz
echo "fuzz: $fuzzer ${args[*]}"
start=$(date +%s.%N)
rc=0
"$fuzzer" "${args[@]}" "$B/corpus" "$ROOT/tests/fuzz/corpus" >"$B/fuzz.log" 2>&1 || rc=$?
end=$(date +%s.%N)
grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::|==[0-9]+==ERROR|SUMMARY|.*Test unit written)' "$B/fuzz.log" || true
python3 - "$B/fuzz.log" "$start" "$end" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
stat = dict(re.findall(r"stat::(\w+):\s+(\d+)", text))
runs, rss = int(stat.get("number_of_executed_units", 0)), int(stat.get("peak_rss_mb", 0))
wall = float(sys.argv[3]) - float(sys.argv[2])
print(f"fuzz: {runs} executions in {wall:.0f} s ({runs / wall:.0f}/s over the whole run, "
      f"libFuzzer's average {stat.get('average_exec_per_sec', '?')}/s); peak RSS {rss} MB")
PY
if [ $rc -ne 0 ]; then
  echo "fuzz: FAILED (exit $rc); the input is in $B/crashes/, the log in $B/fuzz.log" >&2
  tail -60 "$B/fuzz.log" >&2
  exit $rc
fi
