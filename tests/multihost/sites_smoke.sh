#!/usr/bin/env bash
# tests/multihost/sites_smoke.sh — scripts/sites.sh makes two sites (a prefix of this test's own),
# again idempotently; a site's hosts reach their own site and their front-end (a connection to a
# closed port there is refused: the host answered) and nothing else (a connection to the other
# site or the wide-area bridge fails at once: no route); the front-ends reach one another; `down`,
# twice, leaves no namespace, link or file of the prefix behind. Exits 77 (ctest SKIPPED) with the
# reason without root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
sites=$here/../../scripts/sites.sh
launcher=$here/../../scripts/hosts-launcher.sh
prefix=z$(($$ % 100000))
out=$(mktemp)
cleanup() {
  bash "$sites" down --prefix "$prefix" >/dev/null 2>&1 || true
  rm -f "$out"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
fail() {
  echo "sites_smoke: FAILED: $*" >&2
  exit 1
}

set +e
bash "$sites" up --prefix "$prefix" --sites 2 --hosts 2 >"$out" 2>&1
rc=$?
set -e
cat "$out"
((rc != 77)) || exit 77
((rc == 0)) || fail "sites.sh up exited $rc"
bash "$sites" up --prefix "$prefix" --sites 2 --hosts 2 >/dev/null || fail "a second up failed"
addr() { awk -v h="$1" '$1 == h { sub(/\/.*/, "", $2); print $2 }' "$out"; }
wan() { awk -v h="$1" '$1 == h { sub(/\/.*/, "", $7); print $7 }' "$out"; }

# What a TCP connection from host $1 to $2 (port 9, where nothing listens) says.
try() {
  bash "$launcher" "$1" "timeout 5 python3 -c \"
import socket
try:
    socket.create_connection(('$2', 9), timeout=3)
    print('connected')
except OSError as e:
    print(e.strerror or e)\"" 2>&1
}
expect() {
  local got
  got=$(try "$1" "$2")
  [[ $got == "$3" ]] || fail "$1 -> $2: '$got', expected '$3'"
  echo "sites_smoke: $1 -> $2: $got"
}
p=$prefix
expect "${p}a1" "$(addr "${p}a2")" "Connection refused"
expect "${p}a1" "$(addr "${p}afe")" "Connection refused"
expect "${p}a1" "${p}afe" "Connection refused" # by name, from /etc/netns/*/hosts
expect "${p}a1" "$(addr "${p}b1")" "Network is unreachable"
expect "${p}a1" "$(wan "${p}bfe")" "Network is unreachable"
expect "${p}b2" "$(wan "${p}afe")" "Network is unreachable"
expect "${p}afe" "$(addr "${p}b1")" "Network is unreachable" # front-ends forward nothing
expect "${p}afe" "${p}bfe" "Connection refused"
expect "${p}bfe" "$(wan "${p}afe")" "Connection refused"

bash "$sites" down --prefix "$prefix" >/dev/null
bash "$sites" down --prefix "$prefix" >/dev/null || fail "a second down failed"
left=$( (ip netns list; ip -o link show) | grep -c -- "$prefix" || true)
((left == 0)) || fail "$left namespaces or links of $prefix are left"
[[ ! -e /run/pcm-sites/$prefix ]] || fail "the state file is left"
if compgen -G "/etc/netns/$prefix*" >/dev/null; then fail "files in /etc/netns are left"; fi
echo "sites_smoke: ok: sites isolated by routing, made and removed idempotently"
