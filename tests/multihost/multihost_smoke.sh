#!/usr/bin/env bash
# tests/multihost/multihost_smoke.sh BUILD — the cluster on one machine works: testbed/hosts.sh makes two
# namespace hosts (a prefix of this test's own), mpiexec run inside host 1 starts one rank on each
# host through testbed/launcher_hosts.sh, each rank reports its own host's address, and
# MPI_Comm_spawn with the "host" info key starts the child on host 2 (tests/multihost/multihost_probe.c).
# Exits 77 (ctest SKIPPED) with the reason when namespaces cannot be made here. Removes only the
# hosts it made; traffic goes only to their addresses.
set -euo pipefail

build=${1:?usage: $0 BUILD}
here=$(cd "$(dirname "$0")" && pwd)
hosts=$here/../../testbed/hosts.sh
launcher=$here/../../testbed/launcher_hosts.sh
probe=$build/tests/multihost_probe
mpiexec=${MPIEXEC:-mpiexec}
# shellcheck source=../../testbed/launcher_mpi.sh
MPIEXEC=$mpiexec . "$here/../../testbed/launcher_mpi.sh"
[[ -x $probe ]] || {
  echo "multihost_smoke: $probe not built" >&2
  exit 1
}

# A prefix unique to this run, ending with a letter: hosts t<pid>h1, t<pid>h2.
prefix=t$$h
prefix=${prefix:0:11}
out=$(mktemp)
mpid=
cleanup() {
  [[ -z $mpid ]] || kill -TERM "$mpid" 2>/dev/null || true
  "$hosts" down --prefix "$prefix" >/dev/null 2>&1 || true
  rm -f "$out"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

set +e
"$hosts" up 2 --prefix "$prefix" >"$out" 2>&1
rc=$?
set -e
cat "$out"
if ((rc == 77)); then
  exit 77
elif ((rc != 0)); then
  echo "multihost_smoke: hosts.sh up failed ($rc)" >&2
  exit 1
fi

addr() { awk -v h="$1" '$1 == h { sub(/\/.*/, "", $2); print $2 }' "$out"; }
h1=${prefix}1
h2=${prefix}2
a1=$(addr "$h1")
a2=$(addr "$h2")
[[ -n $a1 && -n $a2 && $a1 != "$a2" ]] || {
  echo "multihost_smoke: no addresses for $h1, $h2 in hosts.sh status" >&2
  exit 1
}

# mpiexec runs inside host 1, started by the launcher like any process of a host (with the host's
# name as its hostname); -iface eth0 makes hydra give the proxies host 1's address (Open MPI's
# mpirun: the launcher starts its daemons, which talk over eth0). In the background, so that a
# signal to this script (ctest's timeout) runs the cleanup at once.
if [ "$PCM_MPI_FAMILY" = openmpi ]; then
  launch=(--mca plm_rsh_agent "$launcher" --mca oob_tcp_if_include eth0 --mca btl_tcp_if_include
    eth0 --mca btl tcp,vader,self --host "$h1,$h2" --map-by node)
else
  launch=(-launcher ssh -launcher-exec "$launcher" -iface eth0 -hosts "$h1,$h2")
fi
timeout 120 "$launcher" "$h1" "$mpiexec" "${launch[@]}" -n 2 "$probe" "$h2" "$a2" >"$out" 2>&1 &
mpid=$!
set +e
wait "$mpid"
rc=$?
set -e
mpid=
cat "$out"
fail() {
  echo "multihost_smoke: FAILED: $*" >&2
  exit 1
}
((rc == 0)) || fail "mpiexec exited with $rc"
# The address says where a process really is; the hostname (from the launcher) must agree.
grep -qx "probe: rank 0 host $h1 addr $a1" "$out" || fail "rank 0 not on $h1 ($a1)"
grep -qx "probe: rank 1 host $h2 addr $a2" "$out" || fail "rank 1 not on $h2 ($a2)"
grep -qx "probe: child host $h2 addr $a2" "$out" || fail "the spawned child not on $h2 ($a2)"
grep -qx "probe: spawn on $h2 ok" "$out" || fail "no 'spawn on $h2 ok'"
echo "multihost_smoke: ok: ranks on $h1 ($a1) and $h2 ($a2), spawned child on $h2"
