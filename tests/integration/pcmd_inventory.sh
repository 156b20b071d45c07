#!/usr/bin/env bash
# pcmd_inventory.sh BUILD — pcmd's inventory from the command line, end to end: --hostfile and
# --slurm (with a Slurm allocation's variables), `pcmctl host add/list/remove` and their exit
# codes (0 done, 1 refused, 2 a mistake on the command line), and a clear start-up error for
# --slurm outside an allocation. Each pcmd runs on loopback and is stopped by its PID.
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

# A hostfile, and a Slurm allocation's variables: node[01-02] with 2 tasks each, gpu1 with 3.
printf '# test hosts\nnode-a:4\nnode-b\n\nnode-a:2\n' >"$dir/hosts.txt"
SLURM_JOB_NODELIST='node[01-02],gpu1' SLURM_TASKS_PER_NODE='2(x2),3' \
  start --hosts head:1 --hostfile "$dir/hosts.txt" --slurm --placement spread
expect "hostfile slots (listed twice)" "$(row node-a slots)" 6
expect "hostfile slots (no count)" "$(row node-b slots)" 1
expect "Slurm node01" "$(row node01 slots)" 2
expect "Slurm node02" "$(row node02 slots)" 2
expect "Slurm gpu1" "$(row gpu1 slots)" 3
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

# --slurm outside an allocation: a start-up error that says what is missing.
unset SLURM_JOB_NODELIST SLURM_TASKS_PER_NODE
if "$pcmd" --detach --pidfile "$dir/pcmd.pid" --data-dir "$dir/data" --slurm 2>"$dir/err.log"; then
  pid=$(cat "$dir/pcmd.pid")
  fail "pcmd --slurm started outside an allocation"
fi
grep -q SLURM_JOB_NODELIST "$dir/err.log" || fail "the --slurm error does not name the variables: $(cat "$dir/err.log")"
echo "pcmd_inventory: ok"
