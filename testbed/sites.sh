#!/usr/bin/env bash
# testbed/sites.sh — test "sites" (administrative domains, issue 26) of namespace hosts on one
# machine: each site has its own hosts on its own bridge and a front-end, the only host of the
# site with a second interface, on a shared "wide-area" bridge.
#
#   sites.sh up [--prefix P] [--sites S] [--hosts N] [--base X]   make sites a, b, ... of N hosts
#               [--wan-ports P[,Q...]] [--open A:B:LOW-HIGH]...
#   sites.sh down [--prefix P]                                    remove exactly what `up` made
#   sites.sh status [--prefix P]                                  list hosts, sites, addresses
#
# Site s (a, b, c or d) is the bridge "Psbr" with hosts Ps1..PsN (network namespaces, "eth0" at
# 10.78.(X+k).j/24, k the site's number from 1) and the front-end "Psfe" (eth0 at 10.78.(X+k).254
# in the site, eth1 at 10.78.X.k/24 on the wide-area bridge "Pwan"). The bridges have no address:
# the machine itself is on none of these networks and routes nothing between them. Isolation is
# plain routing: a namespace has routes only to the subnets it has an address in, and forwarding
# is off in every namespace (the front-ends too), so a site's hosts reach their own site and
# their front-end, and nothing else (a connection elsewhere fails at once: "Network is
# unreachable"); front-ends reach their site and one another. Anything between sites goes
# through a program on the front-ends (pcm-relay; docs/ops/sites.md). With nftables
# (nft) installed, front-ends reach one another only on the TCP ports --wan-ports (default 4701:
# the one port of the relays' --mux/--demux, which carries pcmd's request and watch ports),
# everything else between them dropped; without
# it, on every port (a note says so). --open A:B:LOW-HIGH (repeatable; needs nft) opens TCP ports
# LOW-HIGH between the hosts of sites A and B, routed through both front-ends, nothing else
# (testbed/sites_fw.sh: the rules and routes).
#
# /etc/netns/NAME/hosts names, in each namespace, the hosts it can reach: a site's hosts and its
# front-end (by its site address) inside a site; on a front-end also the other front-ends (by
# their wide-area address). X is 1 + 5 x (checksum of the prefix mod 50) unless --base is given;
# hosts.sh uses 10.77.*, so the two never meet. `up` refuses subnets this machine already uses.
#
# What `up` makes is recorded in /run/pcm-sites/P before it is made; `down` removes that (and
# tolerates parts already gone), ending by pid what still runs in the namespaces. Both are
# idempotent. Start processes on any host or front-end with testbed/launcher_hosts.sh NAME CMD.
# Needs root: without it prints "SKIPPED: reason" and exits 77.
set -euo pipefail

STATE_DIR=/run/pcm-sites
SKIP=77
LETTERS=(a b c d)

usage() {
  echo "usage: $0 up [--prefix P] [--sites S] [--hosts N] [--base X] [--wan-ports P[,Q...]]" \
    "[--open A:B:LOW-HIGH]... | down [--prefix P] | status [--prefix P]" >&2
  exit 2
}
die() {
  echo "sites.sh: $*" >&2
  exit 1
}
skip() {
  echo "SKIPPED: sites.sh: $*"
  exit "$SKIP"
}

cmd=${1:-}
[[ -n $cmd ]] || usage
shift
prefix=pcms
nsites=2
nhosts=2
base=
wan_ports=4701
opens=()
while (($#)); do
  (($# >= 2)) || usage
  case $1 in
    --prefix) prefix=$2 ;;
    --sites) nsites=$2 ;;
    --hosts) nhosts=$2 ;;
    --base) base=$2 ;;
    --wan-ports) wan_ports=$2 ;;
    --open) opens+=("$2") ;;
    *) usage ;;
  esac
  shift 2
done
# Names: P + site letter + host number or "fe", + "v"/"w" for the machine's side of a veth: at
# most 15 characters with a prefix of 9.
[[ $prefix =~ ^[a-z][a-z0-9]{0,8}$ ]] || die "prefix '$prefix' must be 1-9 lowercase letters/digits"
[[ $nsites =~ ^[1-4]$ ]] || die "--sites takes 1 to 4"
[[ $nhosts =~ ^[1-9]$ ]] || die "--hosts takes 1 to 9"
[[ $wan_ports =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--wan-ports takes TCP ports: P[,Q...]"
nft=$(command -v nft || true)
state=$STATE_DIR/$prefix
wan=${prefix}wan

need_root() {
  [[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces (uid $(id -u))"
  command -v ip >/dev/null || skip "the ip command (iproute2) is not installed"
}
# shellcheck source=netns_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/netns_lib.sh"
# shellcheck source=sites_fw.sh
source "$(dirname "${BASH_SOURCE[0]}")/sites_fw.sh"

default_base() {
  local sum
  sum=$(printf '%s' "$prefix" | cksum | cut -d' ' -f1)
  echo $((1 + 5 * (sum % 50)))
}

# Fails if an address or route of this machine is inside 10.78.N.0/24.
check_net_free() {
  local cidr=10.78.$1.0/24 line
  line=$({
    ip -4 route show root "$cidr"
    ip -4 route show match "$cidr" table all 2>/dev/null | grep -v -e '^local ' -e '^broadcast ' -e '^default'
  } | head -1 || true)
  [[ -z $line ]] || die "subnet $cidr is already in use here (route: $line); choose --base"
  if ip -4 -o addr show | grep -q " inet 10\.78\.$1\."; then
    die "subnet $cidr is already in use here (an address); choose --base"
  fi
}

# A namespace NAME with a veth: IFACE inside at ADDR/24, OUTER on the machine's side in BRIDGE.
attach() {
  local name=$1 iface=$2 outer=$3 bridge=$4 addr=$5
  ns_exists "$name" || ip netns add "$name"
  if ! link_exists "$outer"; then
    ip -n "$name" link del "$iface" 2>/dev/null || true
    ip link add "$outer" type veth peer name "$iface" netns "$name"
  fi
  ip link set dev "$outer" master "$bridge"
  ip link set dev "$outer" up
  ip -n "$name" addr replace "$addr/24" dev "$iface"
  ip -n "$name" link set dev "$iface" up
  ip -n "$name" link set dev lo up
  ip netns exec "$name" sysctl -qw net.ipv4.ip_forward=0
}

bridge_up() {
  link_exists "$1" || ip link add name "$1" type bridge
  ip link set dev "$1" up
}

hosts_file() {
  local name=$1
  shift
  mkdir -p "/etc/netns/$name"
  {
    echo "# written by pcm testbed/sites.sh for $name (sites $prefix)"
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
    printf '%s\n' "$@"
  } >"/etc/netns/$name/hosts.tmp"
  mv "/etc/netns/$name/hosts.tmp" "/etc/netns/$name/hosts"
}

# Every namespace of the recorded sites (hosts and front-ends).
recorded_names() {
  [[ -f $state ]] || return 0
  local s k rs rh
  rs=$(sed -n 's/^sites=//p' "$state")
  rh=$(sed -n 's/^hosts=//p' "$state")
  for ((s = 0; s < rs; s++)); do
    for ((k = 1; k <= rh; k++)); do echo "$prefix${LETTERS[s]}$k"; done
    echo "$prefix${LETTERS[s]}fe"
  done
}

do_up() {
  need_root
  if [[ -f $state ]]; then
    local os oh ob
    os=$(sed -n 's/^sites=//p' "$state")
    oh=$(sed -n 's/^hosts=//p' "$state")
    ob=$(sed -n 's/^base=//p' "$state")
    [[ $os == "$nsites" && $oh == "$nhosts" ]] ||
      die "sites '$prefix' are up with $os sites of $oh hosts; run: $0 down --prefix $prefix"
    [[ -z $base || $base == "$ob" ]] || die "sites '$prefix' are up with --base $ob"
    [[ $(sed -n 's/^open=//p' "$state") == "${opens[*]}" &&
      $(sed -n 's/^wanports=//p' "$state") == "$wan_ports" ]] ||
      die "sites '$prefix' are up with other --open or --wan-ports; run: $0 down --prefix $prefix"
    base=$ob
  fi
  local spec
  for spec in "${opens[@]}"; do check_open "$spec"; done
  if ((${#opens[@]})) && [[ -z $nft ]]; then
    skip "--open needs nftables (the nft command), which is not installed" \
      "(scripts/setup.sh installs it)"
  fi
  [[ -n $base ]] || base=$(default_base)
  if ! [[ $base =~ ^[0-9]+$ ]] || ((base < 1 || base + nsites > 254)); then
    die "bad --base '$base' (1 to $((254 - nsites)))"
  fi
  if [[ ! -f $state ]]; then
    local k
    for ((k = 0; k <= nsites; k++)); do check_net_free $((base + k)); done
    local probe=${prefix}probe err
    if ! err=$(ip netns add "$probe" 2>&1); then
      skip "cannot create network namespaces here (ip netns add: ${err:-failed})"
    fi
    ip netns del "$probe"
  fi
  mkdir -p "$STATE_DIR"
  printf 'sites=%s\nhosts=%s\nbase=%s\nopen=%s\nwanports=%s\nfirewall=%s\n' "$nsites" "$nhosts" \
    "$base" "${opens[*]}" "$wan_ports" "${nft:+nftables}" >"$state"

  bridge_up "$wan"
  local s k letter net fe others=() o
  declare -A site_names
  for ((s = 0; s < nsites; s++)); do
    others+=("10.78.$base.$((s + 1)) $prefix${LETTERS[s]}fe")
    for ((k = 1; k <= nhosts; k++)); do
      site_names[${LETTERS[s]}]+="10.78.$((base + s + 1)).$k $prefix${LETTERS[s]}$k"$'\n'
    done
  done
  for ((s = 0; s < nsites; s++)); do
    letter=${LETTERS[s]}
    net=10.78.$((base + s + 1))
    fe=$prefix${letter}fe
    bridge_up "$prefix${letter}br"
    local names=() far=()
    for ((k = 1; k <= nhosts; k++)); do
      attach "$prefix$letter$k" eth0 "$prefix$letter${k}v" "$prefix${letter}br" "$net.$k"
      names+=("$net.$k $prefix$letter$k")
    done
    for o in $(opened_to "$letter"); do
      mapfile -t -O "${#far[@]}" far < <(printf %s "${site_names[$o]}")
    done
    attach "$fe" eth0 "${fe}v" "$prefix${letter}br" "$net.254"
    attach "$fe" eth1 "${fe}w" "$wan" "10.78.$base.$((s + 1))"
    for ((k = 1; k <= nhosts; k++)); do
      hosts_file "$prefix$letter$k" "${names[@]}" "$net.254 $fe" "${far[@]}"
    done
    local mine=()
    for line in "${others[@]}"; do [[ $line == *" $fe" ]] || mine+=("$line"); done
    hosts_file "$fe" "${names[@]}" "$net.254 $fe" "${mine[@]}"
  done
  fw_up
  [[ -n $nft ]] || echo "sites.sh: note: nftables (nft) is not installed: the front-ends reach" \
    "one another on every port" >&2
  do_status
}

do_down() {
  need_root
  local name s rs
  for name in $(recorded_names); do
    ns_remove "$name" 0.3
    for v in "${name}v" "${name}w"; do ! link_exists "$v" || ip link del "$v" 2>/dev/null || true; done
    rm -f "/etc/netns/$name/hosts" "/etc/netns/$name/hosts.tmp"
    rmdir "/etc/netns/$name" 2>/dev/null || true
  done
  if [[ -f $state ]]; then
    rs=$(sed -n 's/^sites=//p' "$state")
    for ((s = 0; s < rs; s++)); do
      ! link_exists "$prefix${LETTERS[s]}br" || ip link del "$prefix${LETTERS[s]}br"
    done
    ! link_exists "$wan" || ip link del "$wan"
  fi
  rm -f "$state"
  echo "sites.sh: sites '$prefix' are down"
}

do_status() {
  if [[ ! -f $state ]]; then
    echo "sites.sh: sites '$prefix' are not up"
    return 0
  fi
  local rs rh s k letter name a w
  rs=$(sed -n 's/^sites=//p' "$state")
  rh=$(sed -n 's/^hosts=//p' "$state")
  addr_of() { ip -n "$1" -4 -o addr show dev "$2" 2>/dev/null | awk '{print $4}' || true; }
  for ((s = 0; s < rs; s++)); do
    letter=${LETTERS[s]}
    for ((k = 1; k <= rh; k++)); do
      name=$prefix$letter$k
      a=$(addr_of "$name" eth0)
      echo "$name ${a:-(missing)} site $letter"
    done
    name=$prefix${letter}fe
    a=$(addr_of "$name" eth0)
    w=$(addr_of "$name" eth1)
    echo "$name ${a:-(missing)} site $letter front-end wan ${w:-(missing)}"
  done
  local fw op
  fw=$(sed -n 's/^firewall=//p' "$state")
  op=$(sed -n 's/^open=//p' "$state")
  if [[ -n $fw ]]; then
    echo "firewall nftables: front-ends reach one another on TCP" \
      "$(sed -n 's/^wanports=//p' "$state") only"
  else
    echo "firewall none: front-ends reach one another on every port"
  fi
  for spec in $op; do echo "open $spec"; done
}

case $cmd in
  up) do_up ;;
  down) do_down ;;
  status) do_status ;;
  *) usage ;;
esac
