#!/usr/bin/env bash
# testbed/hosts.sh — a cluster of N "hosts" on one machine, for tests and demos of several hosts.
#
#   hosts.sh up N [--prefix P] [--net A.B.C]   create hosts P1..PN (default prefix pcmh)
#   hosts.sh down [--prefix P]                 remove exactly what `up` made for that prefix
#   hosts.sh status [--prefix P]               list the hosts and their addresses
#
# Each host is a Linux network namespace named Pk with one veth: "eth0" inside the namespace
# (address A.B.C.k/24) and "Pkv" in the root namespace, a port of the bridge "Pbr" (address
# A.B.C.254/24). There is no default route in the namespaces: traffic goes only to these
# addresses. /etc/netns/Pk/hosts names localhost and every host of the cluster (`ip netns exec`
# bind-mounts it over /etc/hosts), so the names resolve inside every namespace. The subnet is
# 10.77.0.0/24 for the default prefix and 10.77.X.0/24 (X from a checksum of the prefix) for
# others, so that clusters with different prefixes can coexist; `up` refuses a subnet that an
# address or route of this machine already uses.
#
# What `up` made is recorded in /run/pcm-hosts/P before it is made, so `down` removes exactly
# that (and tolerates any part of it being gone already). Both are idempotent. Processes left
# inside a host's namespace are ended (by pid) when the host is removed.
#
# Start processes on the hosts with testbed/launcher_hosts.sh (the ssh-like launcher for
# MPICH's hydra), which also gives each host its own CPU when the machine has enough of them.
#
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): without it, or where `ip netns add` fails,
# prints "SKIPPED: reason" and exits 77 (ctest's SKIP_RETURN_CODE in tests/CMakeLists.txt).
set -euo pipefail

STATE_DIR=/run/pcm-hosts
SKIP=77

usage() {
  echo "usage: $0 up N [--prefix P] [--net A.B.C] | down [--prefix P] | status [--prefix P]" >&2
  exit 2
}

die() {
  echo "hosts.sh: $*" >&2
  exit 1
}

skip() {
  echo "SKIPPED: hosts.sh: $*"
  exit "$SKIP"
}

cmd=${1:-}
[[ -n $cmd ]] || usage
shift
n=
if [[ $cmd == up ]]; then
  n=${1:-}
  [[ $n =~ ^[1-9][0-9]*$ ]] || usage
  shift
fi
prefix=pcmh
net=
while (($#)); do
  case $1 in
    --prefix)
      (($# >= 2)) || usage
      prefix=$2
      shift 2
      ;;
    --net)
      (($# >= 2)) || usage
      net=$2
      shift 2
      ;;
    *) usage ;;
  esac
done

# Interface names are at most 15 characters ("P" + "br", "P" + k + "v"); the prefix ends with a
# letter so that a host name Pk gives back its prefix and number unambiguously.
[[ $prefix =~ ^[a-z][a-z0-9]{0,9}[a-z]$|^[a-z]$ ]] ||
  die "prefix '$prefix' must be 1-11 lowercase letters/digits, start and end with a letter"
bridge=${prefix}br
state=$STATE_DIR/$prefix

default_net() {
  if [[ $prefix == pcmh ]]; then
    echo 10.77.0
  else
    local sum
    sum=$(printf '%s' "$prefix" | cksum | cut -d' ' -f1)
    echo "10.77.$((1 + sum % 250))"
  fi
}

need_root() {
  [[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces (uid $(id -u))"
  command -v ip >/dev/null || skip "the ip command (iproute2) is not installed"
}

# shellcheck source=netns_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/netns_lib.sh"

# Hosts recorded in the state file, or else the namespaces named P<digits> (an interrupted `up`
# writes the state first, so this fallback only matters if the state file itself was lost).
recorded_hosts() {
  local k rn
  if [[ -f $state ]]; then
    rn=$(sed -n 's/^n=//p' "$state")
    for ((k = 1; k <= rn; k++)); do echo "$prefix$k"; done
  else
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${prefix}[0-9]+\$" || true
  fi
}

# Fails (with a message) if any address or route of the root namespace overlaps A.B.C.0/24,
# other than our own bridge's.
check_net_free() {
  local cidr=$1.0/24 line
  while read -r line; do
    [[ -z $line || $line == default* || $line == *" dev $bridge "* ]] && continue
    die "subnet $cidr is already in use on this machine (route: $line); choose another with --net"
  done < <(ip -4 route show root "$cidr"; ip -4 route show match "$cidr" table all 2>/dev/null |
    grep -v -e '^local ' -e '^broadcast ' || true)
  while read -r line; do
    [[ -z $line || $line == *" $bridge "* ]] && continue
    case $line in
      *" inet $1."*) die "subnet $cidr is already in use on this machine (address: $line)" ;;
    esac
  done < <(ip -4 -o addr show)
}

write_hosts_files() {
  local k h
  for ((k = 1; k <= n; k++)); do
    h=$prefix$k
    mkdir -p "/etc/netns/$h"
    {
      echo "# written by pcm testbed/hosts.sh for host $h of cluster $prefix"
      echo "127.0.0.1 localhost"
      echo "::1 localhost ip6-localhost ip6-loopback"
      for ((j = 1; j <= n; j++)); do echo "$net.$j $prefix$j"; done
    } >"/etc/netns/$h/hosts.tmp"
    mv "/etc/netns/$h/hosts.tmp" "/etc/netns/$h/hosts"
  done
}

do_up() {
  need_root
  ((n <= 253)) || die "at most 253 hosts in a /24"
  ((${#prefix} + ${#n} + 1 <= 15)) || die "prefix '$prefix' too long for $n hosts (15-char names)"
  if [[ -f $state ]]; then
    local old_n old_net
    old_n=$(sed -n 's/^n=//p' "$state")
    old_net=$(sed -n 's/^net=//p' "$state")
    [[ $old_n == "$n" ]] || die "cluster '$prefix' is up with $old_n hosts; run: $0 down --prefix $prefix"
    [[ -z $net || $net == "$old_net" ]] || die "cluster '$prefix' is up on $old_net.0/24"
    net=$old_net
  fi
  [[ -n $net ]] || net=$(default_net)
  [[ $net =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "--net wants the first three octets, e.g. 10.77.5"
  check_net_free "$net"

  # Can namespaces be made here at all? Probe before recording anything.
  if ! ns_exists "${prefix}1"; then
    local err
    if ! err=$(ip netns add "${prefix}1" 2>&1); then
      skip "cannot create network namespaces here (ip netns add: ${err:-failed})"
    fi
  fi
  mkdir -p "$STATE_DIR"
  printf 'n=%s\nnet=%s\nbridge=%s\n' "$n" "$net" "$bridge" >"$state"

  if ! link_exists "$bridge"; then
    ip link add name "$bridge" type bridge
  fi
  ip addr replace "$net.254/24" dev "$bridge"
  ip link set dev "$bridge" up

  local k h v
  for ((k = 1; k <= n; k++)); do
    h=$prefix$k
    v=${h}v
    ns_exists "$h" || ip netns add "$h"
    if ! link_exists "$v"; then
      # A half-made pair may have left "eth0" inside the namespace: start that host afresh.
      ip -n "$h" link del eth0 2>/dev/null || true
      ip link add "$v" type veth peer name eth0 netns "$h"
    fi
    ip link set dev "$v" master "$bridge"
    ip link set dev "$v" up
    ip -n "$h" addr replace "$net.$k/24" dev eth0
    ip -n "$h" link set dev eth0 up
    ip -n "$h" link set dev lo up
  done
  write_hosts_files
  do_status
}

do_down() {
  need_root
  local h
  for h in $(recorded_hosts); do
    ns_remove "$h" 0.5
    ! link_exists "${h}v" || ip link del "${h}v" 2>/dev/null || true
    rm -f "/etc/netns/$h/hosts" "/etc/netns/$h/hosts.tmp"
    rmdir "/etc/netns/$h" 2>/dev/null || true
  done
  ! link_exists "$bridge" || ip link del "$bridge"
  rm -f "$state"
  # /etc/netns and /run/pcm-hosts stay (empty): another cluster may be being made right now.
  echo "hosts.sh: cluster '$prefix' is down"
}

do_status() {
  if [[ ! -f $state ]]; then
    echo "hosts.sh: cluster '$prefix' is not up"
    return 0
  fi
  local k h addr sn
  sn=$(sed -n 's/^n=//p' "$state")
  echo "cluster $prefix: bridge $bridge $(ip -4 -o addr show dev "$bridge" 2>/dev/null | awk '{print $4}')"
  for ((k = 1; k <= sn; k++)); do
    h=$prefix$k
    addr=$(ip -n "$h" -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}' || true)
    echo "$h ${addr:-(missing)} iface eth0"
  done
}

case $cmd in
  up) do_up ;;
  down) do_down ;;
  status) do_status ;;
  *) usage ;;
esac
