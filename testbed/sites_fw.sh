#!/usr/bin/env bash
# testbed/sites_fw.sh — sourced by sites.sh: the test sites' firewall (nftables) and the routes of
# the port ranges opened between sites (issue 26 items 1 and 3).
#
# Every front-end gets a table "pcmsites" (its own network namespace's: it goes with the
# namespace, so `sites.sh down` removes it with the namespace):
#   input:   on the wide-area interface (eth1) only replies (established, related) and TCP to the
#            wide-area ports (--wan-ports, the relays' ports) are accepted; the rest is dropped
#            and counted;
#   forward: policy drop; replies accepted; for each --open A:B:LOW-HIGH touching its site, new
#            TCP connections from site A's subnet to site B's (and back) to ports LOW-HIGH are
#            accepted and counted; the rest is dropped and counted.
# An --open also gives both sites' hosts a route to the other's subnet through their front-end,
# the two front-ends a route to the other site through the other front-end's wide-area address
# and forwarding on, and the hosts' /etc/netns/*/hosts the other site's hosts. Without a link a
# site's hosts still have no route out of their site.
#
# shellcheck disable=SC2154  # base, nsites, nhosts, prefix, opens, wan_ports, nft: sites.sh's

# The subnet prefix (10.78.N) of site letter $1.
site_net() {
  local s
  for ((s = 0; s < ${#LETTERS[@]}; s++)); do
    [[ ${LETTERS[s]} != "$1" ]] || {
      echo "10.78.$((base + s + 1))"
      return
    }
  done
}

# Checks an --open spec A:B:LOW-HIGH against the sites being made; dies with the reason.
check_open() {
  local spec=$1 a b low high
  [[ $spec =~ ^([a-d]):([a-d]):([0-9]+)-([0-9]+)$ ]] || die "--open '$spec': write A:B:LOW-HIGH"
  a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]} low=${BASH_REMATCH[3]} high=${BASH_REMATCH[4]}
  [[ $a != "$b" ]] || die "--open '$spec': a site always reaches itself"
  local s found=0
  for ((s = 0; s < nsites; s++)); do
    [[ ${LETTERS[s]} != "$a" && ${LETTERS[s]} != "$b" ]] || ((++found))
  done
  ((found == 2)) || die "--open '$spec': sites $a and $b are not both among the $nsites made"
  ((low >= 1 && low <= high && high <= 65535)) || die "--open '$spec': bad port range"
}

# The nftables rules of front-end letter $1 (on stdout).
fw_rules() {
  local me=$1 spec a b low high na nb
  echo "table inet pcmsites {"
  echo "  chain input {"
  echo "    type filter hook input priority 0; policy accept;"
  echo "    iifname \"eth1\" ct state established,related accept"
  echo "    iifname \"eth1\" tcp dport { $wan_ports } counter accept"
  echo "    iifname \"eth1\" counter drop"
  echo "  }"
  echo "  chain forward {"
  echo "    type filter hook forward priority 0; policy drop;"
  echo "    ct state established,related accept"
  for spec in "${opens[@]}"; do
    IFS=':-' read -r a b low high <<<"$spec"
    [[ $me == "$a" || $me == "$b" ]] || continue
    na=$(site_net "$a") nb=$(site_net "$b")
    echo "    ip saddr $na.0/24 ip daddr $nb.0/24 tcp dport $low-$high ct state new counter accept"
    echo "    ip saddr $nb.0/24 ip daddr $na.0/24 tcp dport $low-$high ct state new counter accept"
  done
  echo "    counter drop"
  echo "  }"
  echo "}"
}

# After the sites' namespaces exist: routes, forwarding and rules. Without nft: nothing (front-
# ends then reach one another on every port), and --open was refused before anything was made.
fw_up() {
  local s letter fe spec a b other k net
  [[ -n $nft ]] || return 0
  for ((s = 0; s < nsites; s++)); do
    letter=${LETTERS[s]}
    fe=$prefix${letter}fe
    ip netns exec "$fe" nft delete table inet pcmsites 2>/dev/null || true
    fw_rules "$letter" | ip netns exec "$fe" nft -f - || die "nft rules for $fe were refused"
  done
  for spec in "${opens[@]}"; do
    IFS=':-' read -r a b _ _ <<<"$spec"
    for letter in "$a" "$b"; do
      other=$a
      [[ $letter != "$a" ]] || other=$b
      fe=$prefix${letter}fe
      ip netns exec "$fe" sysctl -qw net.ipv4.ip_forward=1
      net=$(site_net "$other").0/24
      ip -n "$fe" route replace "$net" via "10.78.$base.$(($(letter_index "$other") + 1))"
      for ((k = 1; k <= nhosts; k++)); do
        ip -n "$prefix$letter$k" route replace "$net" via "$(site_net "$letter").254"
      done
    done
  done
}

letter_index() {
  local s
  for ((s = 0; s < ${#LETTERS[@]}; s++)); do [[ ${LETTERS[s]} != "$1" ]] || echo "$s"; done
}

# The sites open to site letter $1 (one letter a line).
opened_to() {
  local spec a b
  for spec in "${opens[@]}"; do
    IFS=':-' read -r a b _ _ <<<"$spec"
    [[ $a != "$1" ]] || echo "$b"
    [[ $b != "$1" ]] || echo "$a"
  done
}
