#!/usr/bin/env bash
# pcmd_inventory.sh BUILD — pcmd's inventory from the command line, end to end: --hostfile and
# --slurm (the alias of --resources slurm, inside a made-up allocation: a stand-in scontrol and
# srun on PATH), `pcmctl host add/list/remove` and their exit codes (0 done, 1 refused, 2 a
# mistake on the command line), clear start-up errors for --resources slurm outside an
# allocation or without scontrol, and the MPI port range of the site links (`pcmctl site-env`,
# and what `pcmctl run` gives its launcher). Each pcmd runs on loopback and is stopped by its PID.
set -uo pipefail
build=$1
pcmd=$build/pcmd
pcmctl=$build/pcmctl
dir=$(mktemp -d "${TMPDIR:-/tmp}/pcm-inventory.XXXXXX")
pid=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done; fi; pid=; }
trap 'stop; rm -rf "$dir"' EXIT
fail() { echo "pcmd_inventory: FAIL: $*" >&2; [ -f "$dir/pcmd.log" ] && sed 's/^/  | /' "$dir/pcmd.log" >&2; exit 1; }
export PCM_CONFIG=$dir/pcmd.conf

start() {  # start PCMD-ARGS...: a pcmd on loopback with this inventory
  # --probe-port 0: these made-up names are never looked up (a lookup could leave the machine).
  "$pcmd" --detach --pidfile "$dir/pcmd.pid" --data-dir "$dir/data" --probe-port 0 "$@" \
    2>"$dir/pcmd.log" ||
    fail "pcmd $* did not start"
  pid=$(cat "$dir/pcmd.pid")
}
hosts_json() { "$pcmctl" host list --json; }
row() {  # row HOST FIELD
  hosts_json | python3 -c "import json,sys; r=[h for h in json.load(sys.stdin) if h['host']=='$1']; print(r[0]['$2'] if r else 'absent')"
}
expect() {  # expect WHAT GOT WANT
  [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
}
code() { "$@" >/dev/null 2>&1; echo $?; }

# A hostfile, and Slurm job 7's allocation as scontrol shows it: node[01-02] with 2 CPUs each,
# gpu1 with 3 (a stand-in scontrol and srun, which pcmd runs, first on PATH).
printf '# test hosts\nnode-a:4\nnode-b\n\nnode-a:2\n' >"$dir/hosts.txt"
mkdir "$dir/bin"
printf '#!/bin/sh\necho "JobId=7 JobState=RUNNING NodeList=node[01-02],gpu1 NumNodes=3 NumCPUs=7 Nodes=node[01-02] CPU_IDs=0-1 Mem=0 Nodes=gpu1 CPU_IDs=0-2 Mem=0"\n' >"$dir/bin/scontrol"
printf '#!/bin/sh\necho "slurm 22.05.8"\n' >"$dir/bin/srun"
chmod +x "$dir/bin/scontrol" "$dir/bin/srun"
PATH=$dir/bin:$PATH SLURM_JOB_ID=7 \
  start --hosts head:1 --hostfile "$dir/hosts.txt" --slurm --placement spread
expect "hostfile slots (listed twice)" "$(row node-a slots)" 6
expect "hostfile slots (no count)" "$(row node-b slots)" 1
expect "Slurm node01" "$(row node01 slots)" 2
expect "Slurm node02" "$(row node02 slots)" 2
expect "Slurm gpu1" "$(row gpu1 slots)" 3
expect "Slurm job of node02" "$(row node02 slurm_job)" 7
expect "Slurm job of head" "$(row head slurm_job)" None
expect "--hosts" "$(row head slots)" 1
expect "hosts in all" "$(hosts_json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 6

# add, update, list, remove; refusals exit 1, command-line mistakes 2.
expect "add" "$(code "$pcmctl" host add extra --slots 3 --site west --latency 1.5)" 0
expect "site" "$(row extra site)" west
expect "latency" "$(row extra latency)" 1.5
expect "state" "$(row extra state)" up
expect "update" "$(code "$pcmctl" host add extra --slots 5)" 0
expect "updated slots" "$(row extra slots)" 5
expect "add without --slots" "$(code "$pcmctl" host add other)" 2
expect "add with a bad latency" "$(code "$pcmctl" host add other --slots 1 --latency -3)" 2
expect "add a bad name" "$(code "$pcmctl" host add 'bad/name' --slots 1)" 1
expect "remove an unknown host" "$(code "$pcmctl" host remove nowhere)" 1
expect "drain an unknown host" "$(code "$pcmctl" host drain nowhere)" 1
expect "remove" "$(code "$pcmctl" host remove extra)" 0
expect "removed" "$(row extra slots)" absent
"$pcmctl" host list | grep -q '^HOST ' || fail "host list prints no table header"
stop

# --resources slurm outside an allocation, and without scontrol: start-up errors that say what
# is missing.
unset SLURM_JOB_ID
if "$pcmd" --detach --pidfile "$dir/pcmd.pid" --data-dir "$dir/data" --resources slurm \
  2>"$dir/err.log"; then
  pid=$(cat "$dir/pcmd.pid")
  fail "pcmd --resources slurm started outside an allocation"
fi
grep -q 'SLURM_JOB_ID is not set' "$dir/err.log" ||
  fail "the --resources slurm error does not name SLURM_JOB_ID: $(cat "$dir/err.log")"
if PATH=$dir/none SLURM_JOB_ID=7 "$pcmd" --detach --pidfile "$dir/pcmd.pid" --data-dir "$dir/data" \
  --slurm 2>"$dir/err.log"; then
  pid=$(cat "$dir/pcmd.pid")
  fail "pcmd --slurm started without scontrol"
fi
grep -q 'scontrol is not on PATH' "$dir/err.log" ||
  fail "the --slurm error does not say scontrol is missing: $(cat "$dir/err.log")"

# Site links: the range common to the links (or to a site's), printed by site-env and set by
# pcmctl run in its launcher's environment unless already set; none without --closed-sites; links
# with no port in common refused with the reason.
start --closed-sites --site-link a:b:50000-50099 --site-link b:c:50050-50200
got=$("$pcmctl" site-env | tr '\n' ' ')
expect "site-env" "$got" "export MPIR_CVAR_CH3_PORT_RANGE=50050:50099 export \
OMPI_MCA_btl_tcp_port_min_v4=50050 export OMPI_MCA_btl_tcp_port_range_v4=50 export \
OMPI_MCA_oob_tcp_dynamic_ipv4_ports=50050-50099 "
got=$("$pcmctl" site-env --site a | head -1)
expect "site-env --site a" "$got" "export MPIR_CVAR_CH3_PORT_RANGE=50000:50099"
printf '#!/bin/sh\necho "$MPIR_CVAR_CH3_PORT_RANGE $OMPI_MCA_btl_tcp_port_range_v4"\n' >"$dir/bin/mx"
chmod +x "$dir/bin/mx"
got=$("$pcmctl" run -n 1 --mpiexec "$dir/bin/mx" -- true 2>/dev/null)
expect "pcmctl run's range" "$got" "50050:50099 50"
got=$(MPIR_CVAR_CH3_PORT_RANGE=7:9 "$pcmctl" run -n 1 --mpiexec "$dir/bin/mx" -- true 2>/dev/null)
expect "pcmctl run keeps the user's range" "$got" "7:9 50"
stop
start --closed-sites --site-link a:b:50000-50010 --site-link b:c:50020-50030
"$pcmctl" site-env >/dev/null 2>"$dir/err.log"
expect "site-env with disjoint links" "$?" 1
grep -q 'no port in common' "$dir/err.log" || fail "site-env's refusal: $(cat "$dir/err.log")"
stop
start --site-link a:b:50000-50010
got=$("$pcmctl" site-env 2>/dev/null)
expect "site-env without --closed-sites" "$got" ""
stop
echo "pcmd_inventory: ok"
