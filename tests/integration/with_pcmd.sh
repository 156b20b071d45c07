#!/usr/bin/env bash
# with_pcmd.sh PCMD CMD... — runs CMD with a private pcmd (free loopback port, temporary config
# and data directory); stops that pcmd by its PID afterwards and on interruption.
# CMD sees PCM_CONFIG, PCM_TEST_DIR (scratch space), PCMD_PID and PCM_KILL_TREE (kill_tree.sh:
# kills a job's launcher and every process below it at once).
set -uo pipefail
pcmd=$1
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pcm-test.XXXXXX")
PCM_KILL_TREE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kill_tree.sh
export PCM_CONFIG=$tmp/pcmd.conf PCM_TEST_DIR=$tmp PCM_KILL_TREE

stop_pcmd() {
  [ -f "$tmp/pcmd.pid" ] || return 0
  local pid
  pid=$(cat "$tmp/pcmd.pid")
  kill "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
  kill -9 "$pid" 2>/dev/null
}
# Whatever the test left running (a job it did not end because it failed first) is killed: every
# process it started carries PCM_TEST_DIR=$tmp in its environment.
cleanup() {
  stop_pcmd
  "$PCM_KILL_TREE" --tagged "PCM_TEST_DIR=$tmp"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! "$pcmd" --detach --pidfile "$tmp/pcmd.pid" --data-dir "$tmp/data" --config "$PCM_CONFIG" \
    2>"$tmp/pcmd.log"; then
  echo "with_pcmd: pcmd did not start:" >&2
  cat "$tmp/pcmd.log" >&2
  exit 1
fi
PCMD_PID=$(cat "$tmp/pcmd.pid")
export PCMD_PID
# Should this script be killed without running its traps (ctest's time-out sends SIGKILL), a
# watchdog outside its process tree stops the pcmd named in the pidfile (tests restart pcmd under
# the same file), kills what the test left running and removes the directory once this script
# is gone (without the tag itself).
(env -u PCM_TEST_DIR setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done
  if [ -f "$2/pcmd.pid" ]; then kill "$(cat "$2/pcmd.pid")" 2>/dev/null; sleep 1; fi
  "$3" --tagged "PCM_TEST_DIR=$2"
  rm -rf "$2"' watchdog $$ "$tmp" "$PCM_KILL_TREE" </dev/null >/dev/null 2>&1 &)
"$@"
rc=$?
if [ $rc -ne 0 ]; then
  echo "with_pcmd: command failed with $rc; pcmd's log:" >&2
  cat "$tmp/pcmd.log" >&2
fi
exit $rc
