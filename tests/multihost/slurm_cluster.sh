#!/usr/bin/env bash
# tests/multihost/slurm_cluster.sh — testbed/slurm.sh makes a real Slurm cluster on two namespace hosts (a
# prefix of this test's own) and removes all of it again:
#   - sinfo shows 2 idle nodes;
#   - srun -N 2 hostname prints exactly the two host names; a job on host 1 resolves host 2;
#   - an sbatch job completes and its output file holds a host name of the cluster;
#   - salloc --no-shell grants an allocation J, srun --jobid=J --overlap runs a step inside it,
#     scancel J ends it;
#   - after slurm.sh down: none of the daemons of the pid files alive, /run/pcm-slurm/P and
#     /run/pcm-hosts/P gone, no namespace of the prefix left; a second down is a no-op.
# Exits 77 (ctest SKIPPED) with the reason without root or without Slurm/munge. Waits are polls
# with bounds. Traffic goes only to the hosts' addresses and loopback.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
slurm=$here/../../testbed/slurm.sh
PATH=$PATH:/usr/sbin:/sbin

# A prefix unique to this run, ending with a letter: hosts s<pid>c1, s<pid>c2.
prefix=s$$c
prefix=${prefix:0:11}
h1=${prefix}1
h2=${prefix}2
dir=/run/pcm-slurm/$prefix
work=$(mktemp -d)
out=$work/up.out
is_up=

cleanup() {
  [[ -z $is_up ]] || "$slurm" down --prefix "$prefix" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

fail() {
  echo "slurm_cluster: FAIL: $*" >&2
  for f in "$dir"/log/*.log "$dir"/munge/munged.log; do
    [[ -f $f ]] || continue
    echo "--- $f" >&2
    tail -n 20 "$f" >&2
  done
  exit 1
}

# poll SECONDS CMD...: runs CMD every 0.2 s until it succeeds; fails after SECONDS.
poll() {
  local limit=$1 t0=$SECONDS
  shift
  until "$@"; do
    ((SECONDS - t0 < limit)) || return 1
    sleep 0.2
  done
}

# --- up
t0=$(date +%s.%N)
is_up=1
set +e
"$slurm" up 2 --prefix "$prefix" >"$out" 2>&1
rc=$?
set -e
cat "$out"
if ((rc == 77)); then
  is_up=
  exit 77
fi
((rc == 0)) || fail "slurm.sh up failed ($rc)"
echo "slurm_cluster: up took $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s"
env_line=$(grep '^export SLURM_CONF=' "$out" || true)
[[ -n $env_line ]] || fail "slurm.sh up printed no 'export SLURM_CONF=' line"
[[ $(cat "$dir/env") == "$env_line" ]] || fail "$dir/env differs from the printed line"
eval "$env_line"
[[ $SLURM_CONF == "$dir/slurm.conf" && -f $SLURM_CONF ]] || fail "SLURM_CONF=$SLURM_CONF"

# The pids of the daemons, read now: down removes the files.
pids=()
for f in "$dir"/munge/munged.pid "$dir"/run/*.pid; do
  pids+=("$(cat "$f")")
done
((${#pids[@]} == 4)) || fail "expected 4 pid files (munged, slurmctld, 2 slurmd), got ${#pids[@]}"

# --- sinfo: 2 idle nodes, named after the hosts
states=$(sinfo -h -o '%T %D')
[[ $states == "idle 2" ]] || fail "sinfo -o '%T %D' says '$states', want 'idle 2'"
nodes=$(sinfo -h -N -o '%N' | sort | tr '\n' ' ')
[[ $nodes == "$h1 $h2 " ]] || fail "sinfo nodes '$nodes', want '$h1 $h2'"

# --- srun across both hosts: each task runs in its host's namespace, with its name
cd "$work"
got=$(timeout 60 srun -N 2 hostname | sort | tr '\n' ' ')
[[ $got == "$h1 $h2 " ]] || fail "srun -N 2 hostname printed '$got', want '$h1 $h2'"
echo "slurm_cluster: srun -N 2 hostname: $got"
# ... and sees the cluster's names (the host's /etc/hosts, as under ip netns exec)
a2=$(ip -n "$h2" -4 -o addr show dev eth0 | awk '{sub(/\/.*/, "", $4); print $4}')
got=$(timeout 60 srun -N 1 -w "$h1" getent hosts "$h2" | awk '{print $1}')
[[ -n $a2 && $got == "$a2" ]] || fail "on $h1, $h2 resolves to '$got', want its address '$a2'"

# --- sbatch: the job completes; its output holds a host name of the cluster
job=$(sbatch --parsable -N1 -o "$work/batch-%j.out" --wrap 'hostname')
[[ $job =~ ^[0-9]+$ ]] || fail "sbatch --parsable printed '$job'"
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
ended='^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE)$'
finished() { [[ $(job_state "$job") =~ $ended ]]; }
poll 60 finished || fail "batch job $job not finished after 60 s (state $(job_state "$job"))"
[[ $(job_state "$job") == COMPLETED ]] || fail "batch job $job ended $(job_state "$job")"
has_output() { [[ -s $work/batch-$job.out ]]; }
poll 10 has_output || fail "batch job $job wrote no $work/batch-$job.out"
bout=$(cat "$work/batch-$job.out")
[[ $bout == "$h1" || $bout == "$h2" ]] || fail "batch job $job printed '$bout', want $h1 or $h2"
echo "slurm_cluster: sbatch job $job ran on $bout"

# --- salloc --no-shell: an allocation J; a step inside it; scancel J
aout=$(timeout 60 salloc --no-shell -N1 2>&1) || fail "salloc --no-shell failed: $aout"
alloc=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' <<<"$aout")
[[ -n $alloc ]] || fail "salloc printed no 'Granted job allocation': $aout"
[[ $(job_state "$alloc") == RUNNING ]] || fail "allocation $alloc is $(job_state "$alloc")"
anode=$(squeue -h -j "$alloc" -o '%N')
[[ $anode == "$h1" || $anode == "$h2" ]] || fail "allocation $alloc on '$anode'"
sout=$(timeout 60 srun --jobid="$alloc" --overlap -N1 -n1 hostname)
[[ $sout == "$anode" ]] || fail "step of allocation $alloc printed '$sout', want $anode"
echo "slurm_cluster: salloc allocation $alloc on $anode; srun --overlap inside it: $sout"
scancel "$alloc"
cancelled() { [[ $(job_state "$alloc") == CANCELLED ]]; }
poll 30 cancelled || fail "allocation $alloc is $(job_state "$alloc") after scancel"
idle_again() { [[ $(sinfo -h -o '%T %D') == "idle 2" ]]; }
poll 30 idle_again || fail "nodes not idle after scancel: $(sinfo -h -o '%T %D' | tr '\n' ' ')"

# --- down: nothing left
cd /
t0=$(date +%s.%N)
"$slurm" down --prefix "$prefix" || fail "slurm.sh down failed"
is_up=
echo "slurm_cluster: down took $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s"
alive() { # PID: a process (not a zombie) with that pid exists
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1 || true)
  [[ -n $st && $st != Z ]]
}
for p in "${pids[@]}"; do
  ! alive "$p" || fail "daemon pid $p ($(cat "/proc/$p/comm" 2>/dev/null)) still alive after down"
done
[[ ! -e $dir ]] || fail "$dir still exists after down"
[[ ! -e /run/pcm-hosts/$prefix ]] || fail "/run/pcm-hosts/$prefix still exists after down"
left=$(ip netns list | awk '{print $1}' | grep -E "^${prefix}[0-9]+\$" || true)
[[ -z $left ]] || fail "namespaces left after down: $left"
! ip link show dev "${prefix}br" >/dev/null 2>&1 || fail "bridge ${prefix}br left after down"
"$slurm" down --prefix "$prefix" >/dev/null || fail "a second down failed"
echo "slurm_cluster: OK"
