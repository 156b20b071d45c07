#!/usr/bin/env bash
# readme_run.sh SOURCE_DIR BINARY_DIR — runs README.md's "A job under pcmd" block verbatim (its
# ~ is a scratch HOME) and checks that the job was resized to 3 and ended with a checksum.
# Only where the README's paths hold (BINARY_DIR is SOURCE_DIR/build); elsewhere SKIPPED.
set -uo pipefail
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
if [ "$bin" != "$src/build" ] || [ ! -f "$src/scripts/.env" ]; then
  echo "SKIPPED: the README's block names build/ and scripts/.env; this build is $bin"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pcm-readme.XXXXXX")
block=$tmp/block.sh
awk '/^A job under pcmd/{f=1} f&&/^```sh/{g=1;next} g&&/^```/{exit} g' "$src/README.md" >"$block"
if ! grep -q 'pcmctl resize' "$block"; then
  echo "FAIL: README.md has no \"A job under pcmd\" block with a resize"
  exit 1
fi
group=
cleanup() {
  [ -f "$tmp/.pcm/pcmd.pid" ] && kill "$(cat "$tmp/.pcm/pcmd.pid")" 2>/dev/null
  [ -n "$group" ] && kill -- "-$group" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$src"
HOME=$tmp PCM_CONFIG= setsid bash -e "$block" >"$tmp/out" 2>&1 </dev/null &
group=$!
wait "$group"
rc=$?
group=
cat "$tmp/out"
[ "$rc" -eq 0 ] || { echo "FAIL: the block exited $rc"; exit 1; }
grep -q '^heat2d: done .* procs 3 ' "$tmp/out" || { echo "FAIL: heat2d did not end on 3 processes"; exit 1; }
grep -q '^checksum [0-9a-f]\{16\}$' "$tmp/out" || { echo "FAIL: no checksum"; exit 1; }
grep -q '^reconfigurations 1$' "$tmp/out" || { echo "FAIL: not one reconfiguration"; exit 1; }
# pcmd removes its pidfile as it stops: one left behind is a pcmd the block's kill did not stop.
for _ in $(seq 100); do [ -f "$tmp/.pcm/pcmd.pid" ] || break; sleep 0.05; done
if [ -f "$tmp/.pcm/pcmd.pid" ]; then echo "FAIL: pcmd still runs after the block's kill"; exit 1; fi
echo "README block ran: resized to 3, checksum printed, pcmd stopped"
