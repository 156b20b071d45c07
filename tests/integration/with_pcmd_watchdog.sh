#!/usr/bin/env bash
# with_pcmd_watchdog.sh WITH_PCMD PCMD — a test that ctest kills at its time limit (SIGKILL: no
# trap runs) leaves no pcmd behind: with_pcmd.sh's watchdog stops it and removes its directory.
# (issue 13: the README's soak command timed out and left a pcmd running.)
set -uo pipefail
with_pcmd=$1 pcmd=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/pcm-watchdog.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "with_pcmd_watchdog: FAIL: $*" >&2; exit 1; }
# The test: writes pcmd's pid and its directory, then outlives its time limit (the sleep, orphaned
# by the kill, ends by itself 3 s later).
TMPDIR=$dir timeout -s KILL 5 "$with_pcmd" "$pcmd" \
  sh -c 'echo "$PCMD_PID $PCM_TEST_DIR" >"$0/pcmd"; exec sleep 8' "$dir" >/dev/null 2>&1
rc=$?
[ $rc -eq 137 ] || fail "the script was not killed (exit $rc)"
read -r pid testdir <"$dir/pcmd" || fail "the test did not run"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  kill "$pid"
  fail "pcmd $pid still runs 10 s after its script was killed"
fi
for _ in $(seq 50); do [ -d "$testdir" ] || break; sleep 0.1; done
[ -d "$testdir" ] && fail "$testdir was not removed"
echo "with_pcmd_watchdog: ok: pcmd $pid stopped and $testdir removed after the script was killed"
