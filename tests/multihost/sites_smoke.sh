#!/usr/bin/env bash
# tests/multihost/sites_smoke.sh — testbed/sites.sh makes three sites (a prefix of this test's
# own), again idempotently; a site's hosts reach their own site and their front-end (a connection to a
# closed port there is refused: the host answered) and nothing else (a connection to another
# site or the wide-area bridge fails at once: no route); with nftables, ports 50000-50099 are open
# between sites a and b (--open a:b:50000-50099): a host of a reaches one of b on a port of the
# range (refused: it answered), not outside it (dropped: timed out), and site c not at all (no
# route); the front-ends reach one another on the one wide-area port 4701 (the relays' --mux and
# --demux) and not on another, 4702 included (dropped). Without nft, the firewall's checks are
# skipped (said so) and the rest runs. `down`, twice, leaves no namespace, link or file of the
# prefix behind. Exits 77 (ctest SKIPPED) with the reason without root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
sites=$here/../../testbed/sites.sh
launcher=$here/../../testbed/launcher_hosts.sh
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

fw=(--open a:b:50000-50099)
if ! command -v nft >/dev/null; then
  echo "sites_smoke: SKIPPED (part): nftables (nft) is not installed: no firewall, no open range"
  fw=()
fi
set +e
bash "$sites" up --prefix "$prefix" --sites 3 --hosts 2 "${fw[@]}" >"$out" 2>&1
rc=$?
set -e
cat "$out"
((rc != 77)) || exit 77
((rc == 0)) || fail "sites.sh up exited $rc"
bash "$sites" up --prefix "$prefix" --sites 3 --hosts 2 "${fw[@]}" >/dev/null ||
  fail "a second up failed"
if ((${#fw[@]})) && bash "$sites" up --prefix "$prefix" --sites 3 --hosts 2 >/dev/null 2>&1; then
  fail "up without the --open of the sites that are up succeeded"
fi
addr() { awk -v h="$1" '$1 == h { sub(/\/.*/, "", $2); print $2 }' "$out"; }
wan() { awk -v h="$1" '$1 == h { sub(/\/.*/, "", $7); print $7 }' "$out"; }

# What a TCP connection from host $1 to $2, port ${3:-9} (where nothing listens) says within 2 s.
try() {
  bash "$launcher" "$1" "timeout 5 python3 -c \"
import socket
try:
    socket.create_connection(('$2', ${3:-9}), timeout=2)
    print('connected')
except OSError as e:
    print(e.strerror or e)\"" 2>&1
}
expect() {
  local got
  got=$(try "$1" "$2" "${4:-9}")
  [[ $got == "$3" ]] || fail "$1 -> $2:${4:-9}: '$got', expected '$3'"
  echo "sites_smoke: $1 -> $2:${4:-9}: $got"
}
p=$prefix
expect "${p}a1" "$(addr "${p}a2")" "Connection refused"
expect "${p}a1" "$(addr "${p}afe")" "Connection refused"
expect "${p}a1" "${p}afe" "Connection refused" # by name, from /etc/netns/*/hosts
expect "${p}a1" "$(addr "${p}c1")" "Network is unreachable"
expect "${p}a1" "$(wan "${p}bfe")" "Network is unreachable"
expect "${p}b2" "$(wan "${p}afe")" "Network is unreachable"
expect "${p}c1" "$(addr "${p}a1")" "Network is unreachable"
expect "${p}afe" "$(addr "${p}c1")" "Network is unreachable" # front-ends forward nothing to c
if ((${#fw[@]})); then
  grep -qx "firewall nftables: front-ends reach one another on TCP 4701 only" "$out" ||
    fail "sites.sh status does not report the firewall"
  expect "${p}afe" "${p}bfe" "Connection refused" 4701 # the wide-area port: reached
  expect "${p}bfe" "$(wan "${p}afe")" "Connection refused" 4701
  expect "${p}bfe" "$(wan "${p}afe")" "timed out" 4702 # one port only: the second is dropped
  expect "${p}afe" "${p}bfe" "timed out" 9 # any other port between front-ends: dropped
  expect "${p}cfe" "$(wan "${p}afe")" "timed out" 5000
  expect "${p}a1" "${p}b1" "Connection refused" 50050 # the open range: reached, by name
  expect "${p}b2" "$(addr "${p}a1")" "Connection refused" 50099
  expect "${p}a1" "$(addr "${p}b1")" "timed out" 49999 # outside it: dropped
  expect "${p}b1" "$(addr "${p}a2")" "timed out" 50100
  expect "${p}afe" "$(addr "${p}b1")" "timed out" 50050 # the range is the sites' hosts' only
  expect "${p}a1" "$(wan "${p}bfe")" "Network is unreachable" 4701
else
  expect "${p}afe" "${p}bfe" "Connection refused"
  expect "${p}afe" "$(addr "${p}b1")" "Network is unreachable"
fi

bash "$sites" down --prefix "$prefix" >/dev/null
bash "$sites" down --prefix "$prefix" >/dev/null || fail "a second down failed"
left=$( (ip netns list; ip -o link show) | grep -c -- "$prefix" || true)
((left == 0)) || fail "$left namespaces or links of $prefix are left"
[[ ! -e /run/pcm-sites/$prefix ]] || fail "the state file is left"
if compgen -G "/etc/netns/$prefix*" >/dev/null; then fail "files in /etc/netns are left"; fi
echo "sites_smoke: ok: sites isolated by routing${fw:+ and nftables, a range open between a" \
  "and b}, made and removed idempotently"
