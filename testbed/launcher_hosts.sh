#!/usr/bin/env bash
# testbed/launcher_hosts.sh — the ssh-like launcher that MPICH's hydra uses to start processes on
# the namespace hosts made by testbed/hosts.sh (a cluster on one machine):
#
#   mpiexec -launcher ssh -launcher-exec testbed/launcher_hosts.sh -iface eth0 -hosts pcmh1,pcmh2 ...
#
# run inside one of the hosts (ip netns exec pcmh1 mpiexec ...). Hydra calls it as ssh would be
# called: `LAUNCHER [ssh options, e.g. -x] HOST WORD...` (the proxy path comes quoted, one word per
# argument); like ssh, it joins the words with spaces and runs them with a shell on HOST:
# `ip netns exec HOST bash -c "WORDS"`. It can also be used by hand: launcher_hosts.sh pcmh2 cmd.
#
# Per-host CPUs: when the machine has at least as many CPUs as the cluster has hosts, host k runs
# on the k-th of them (taskset -c), so that a load on one host slows only that host. With fewer
# CPUs than hosts no pinning is done (hosts would have to share CPUs unevenly; they all share the
# machine instead). PCM_HOSTS_PIN=0 turns pinning off.
#
# Host names: each command runs in a UTS namespace of its own whose hostname is HOST, so that
# gethostname() and MPI_Get_processor_name() inside a host say which host it is, as on a real
# cluster (network namespaces alone leave the machine's name everywhere).
#
# Private local storage: when PCM_HOSTS_LOCAL_ROOT=BASE and PCM_HOSTS_LOCAL_MOUNT=DIR are set (both
# absolute), the command also runs in a mount namespace of its own (unshare -m, propagation
# private) in which BASE/HOST (made if missing) is bind-mounted over DIR (made if missing): every
# host sees only its own directory at the same path, as a node-local disk or tmpfs of a real
# node, and every process of one host launched through here sees the same one. Unset: no mount
# namespace, as before.
set -euo pipefail

STATE_DIR=/run/pcm-hosts

# shellcheck source=ssh_args.sh
source "$(dirname "${BASH_SOURCE[0]}")/ssh_args.sh"
ssh_args "$@"

ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$host" || {
  echo "launcher_hosts.sh: no such host (network namespace) '$host'; see testbed/hosts.sh" >&2
  exit 255
}

# The machine's CPUs: those PID 1 may use (this script itself may run pinned already, by a parent
# on another host: its own affinity, or nproc's, says nothing about the machine).
machine_cpus() {
  local list part a b
  list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/1/status 2>/dev/null || true)
  [[ -n $list ]] || list=0-$(($(getconf _NPROCESSORS_ONLN) - 1))
  for part in ${list//,/ }; do
    a=${part%-*} b=${part#*-}
    for ((; a <= b; a++)); do echo "$a"; done
  done
}

pin=()
if [[ ${PCM_HOSTS_PIN:-1} != 0 && $host =~ ^([a-z][a-z0-9]*[a-z])([0-9]+)$ ]]; then
  prefix=${BASH_REMATCH[1]}
  k=$((10#${BASH_REMATCH[2]}))
  n=$(sed -n 's/^n=//p' "$STATE_DIR/$prefix" 2>/dev/null || true)
  mapfile -t cpus < <(machine_cpus)
  if [[ -n $n ]] && ((n <= ${#cpus[@]})) && command -v taskset >/dev/null; then
    pin=(taskset -c "${cpus[$(((k - 1) % ${#cpus[@]}))]}")
  fi
fi

mount_ns=() local_src= local_dst=
if [[ -n ${PCM_HOSTS_LOCAL_ROOT:-} || -n ${PCM_HOSTS_LOCAL_MOUNT:-} ]]; then
  local_src=${PCM_HOSTS_LOCAL_ROOT:-} local_dst=${PCM_HOSTS_LOCAL_MOUNT:-}
  if [[ $local_src != /* || $local_dst != /* ]]; then
    echo "launcher_hosts.sh: PCM_HOSTS_LOCAL_ROOT and PCM_HOSTS_LOCAL_MOUNT must both be absolute" \
      "paths (got '$local_src' and '$local_dst')" >&2
    exit 255
  fi
  local_src=$local_src/$host
  mkdir -p -m 0700 -- "$local_src" "$local_dst"
  mount_ns=(--mount --propagation private)
fi

# unshare --uts gives the command its own hostname; written through /proc so that no hostname
# tool is needed. exec all the way down: the pid of this script is the pid of the command.
exec ip netns exec "$host" unshare --uts "${mount_ns[@]}" "${pin[@]}" bash -c \
  'printf %s "$1" >/proc/sys/kernel/hostname &&
   { [[ -z $3 ]] || mount --bind -- "$3" "$4"; } && exec bash -c "$2"' \
  hosts-launcher "$host" "$command_line" "$local_src" "$local_dst"
