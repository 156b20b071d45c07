#!/usr/bin/env bash
# testbed/netns_lib.sh — sourced by hosts.sh and sites.sh: what both do with the network
# namespaces and links they make.

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$1"; }
link_exists() { ip link show dev "$1" >/dev/null 2>&1; }

# ns_remove NAME GRACE: ends the processes left in namespace NAME (by pid: TERM, then KILL after
# GRACE seconds) and deletes it; nothing if it is gone already.
ns_remove() {
  local pids
  ns_exists "$1" || return 0
  pids=$(ip netns pids "$1" 2>/dev/null || true)
  if [[ -n $pids ]]; then
    # shellcheck disable=SC2086  # one pid per word
    kill -TERM $pids 2>/dev/null || true
    sleep "$2"
    pids=$(ip netns pids "$1" 2>/dev/null || true)
    # shellcheck disable=SC2086
    [[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
  fi
  ip netns del "$1" 2>/dev/null || true
}
