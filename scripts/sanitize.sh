#!/usr/bin/env bash
# The unit tests, the fuzz corpus replay and the daemon tests that need no MPI job, built with
# AddressSanitizer and UndefinedBehaviorSanitizer (-fno-sanitize-recover: the first report fails
# the test) in the instrumented build directory (shared with scripts/fuzz.sh), and run by
# ctest. scripts/test.sh runs it after the main suite. Extra arguments go to ctest; --build-only
# alone builds the targets and runs nothing.
# Environment: PCM_ASAN_BUILD_DIR (default <checkout>/build-asan).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh" --no-build >/dev/null
# shellcheck source=/dev/null
source "$ROOT/scripts/.env"
B=${PCM_ASAN_BUILD_DIR:-$ROOT/build-asan}
# One instrumented build (Clang, ASan + UBSan, libFuzzer's coverage) serves these tests and
# scripts/fuzz.sh: CI compiles PCM's code once for both.
# shellcheck source=scripts/instrumented.sh
source "$ROOT/scripts/instrumented.sh"
instrumented_configure "$B"
cmake --build "$B" -j"$(nproc)" --target pcm_unit_tests pcm_runtime_tests pcmd_fuzz_replay pcmd \
  pcmctl
# --build-only: build and stop (scripts/test.sh builds while the main suite runs).
if [ "${1:-}" = --build-only ]; then exit 0; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$B"
# unit: the gtest suites and fuzz.replay; daemon.inventory: pcmd and pcmctl end to end. Left out:
# what runs an MPI job (its programs are not instrumented; integration.pcmd_kill is one), what
# tests no code of PCM's (format, README sync, installation), and the kill trials, whose delays
# are set for uninstrumented speed (instrumented, the writer is rarely far enough along to test
# anything before the kill), and the cluster simulator's (sim.*: bench/sim/, not built here).
ctest --output-on-failure --timeout 600 -L 'unit|daemon' -LE 'mpi|install|integration' \
  -E 'pcmctl_refusals|format\.check|readme_in_sync|KilledWriter|^sim\.' "$@"
