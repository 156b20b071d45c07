#!/usr/bin/env bash
# testbed/slurm.sh — a real Slurm cluster on the namespace hosts of testbed/hosts.sh, for tests
# and demos of PCM under a resource manager.
#
#   slurm.sh up N [--prefix P] [--cpus C] [--preempt]
#                                           hosts P1..PN with one slurmd each (default prefix pcms);
#                                           --preempt: a partition "high" that preempts "main"
#                                           (requeued) and "cancel" (cancelled)
#   slurm.sh down [--prefix P]              stop exactly what `up` started, remove the hosts
#   slurm.sh status [--prefix P]            sinfo and squeue of the cluster, or "not up"
#
# `up` makes the hosts with `hosts.sh up N --prefix P`, then, all under /run/pcm-slurm/P:
#   munge/     a generated key and a munged of its own (own socket, pid, log and seed files; the
#              machine's /etc/munge and any system munged are neither used nor touched)
#   slurm.conf the controller "Pctl" on the bridge address (hosts.sh's A.B.C.254), one node per
#              host (NodeName=Pk NodeAddr=A.B.C.k CPUs=C), partition "main"; AuthInfo points at
#              the munged above; proctrack/linuxproc, task/none, SlurmdParameters=config_overrides
#   ctld/ spool/ log/ run/   slurmctld's state, slurmd spools, the logs, the daemons' pid files
#   env        "export SLURM_CONF=..." (also printed), for sinfo/srun/sbatch/salloc/scancel
# slurmctld runs in a UTS namespace of its own with the controller's host name (it refuses to run
# where the host name is not SlurmctldHost); slurmd k runs in host Pk's network namespace with
# its own UTS namespace and host name, and its own mount namespace where /etc/hosts is the
# host's file from hosts.sh, so that jobs resolve the cluster's names (`nsenter --net` and a bind
# mount rather than `ip netns exec`, which also remounts /sys and hides the cgroup mounts slurmd
# needs). slurmctld listens on a port derived from the hosts' subnet, so that clusters with
# different prefixes coexist. `up` returns once `sinfo` shows N idle nodes (bounded wait; else it
# prints the logs' tails and fails).
#
# The directory is made before any daemon starts, and each daemon writes its pid file there, so
# `down` stops exactly those processes by pid (TERM, then KILL after a bounded wait) and tolerates
# any part being gone already; job steps left inside a host end with the host (hosts.sh down).
# Both are idempotent: `up` on a running cluster starts only what is missing.
#
# Traffic goes only to the hosts' addresses (the bridge and the namespaces) and loopback.
#
# Needs root and Debian's slurm-wlm and munge (slurmctld, slurmd, munged, sinfo...): without them
# prints "SKIPPED: reason" and exits 77 (ctest's SKIP_RETURN_CODE), as hosts.sh does.
set -euo pipefail

STATE_DIR=/run/pcm-slurm
SKIP=77
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hosts=$here/hosts.sh

usage() {
  echo "usage: $0 up N [--prefix P] [--cpus C] [--preempt] | down [--prefix P] | status [--prefix P]" >&2
  exit 2
}

die() {
  echo "slurm.sh: $*" >&2
  exit 1
}

skip() {
  echo "SKIPPED: slurm.sh: $*"
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
prefix=pcms
cpus=1
preempt=0
while (($#)); do
  case $1 in
    --preempt)
      preempt=1
      shift
      ;;
    --prefix)
      (($# >= 2)) || usage
      prefix=$2
      shift 2
      ;;
    --cpus)
      (($# >= 2)) || usage
      cpus=$2
      shift 2
      ;;
    *) usage ;;
  esac
done
[[ $cpus =~ ^[1-9][0-9]*$ ]] || die "--cpus wants a positive number"
# The same rule as hosts.sh (which checks it again): host names Pk, interface names <= 15 chars.
[[ $prefix =~ ^[a-z][a-z0-9]{0,9}[a-z]$|^[a-z]$ ]] ||
  die "prefix '$prefix' must be 1-11 lowercase letters/digits, start and end with a letter"

dir=$STATE_DIR/$prefix
state=$dir/state
conf=$dir/slurm.conf
ctl=${prefix}ctl
munge_dir=$dir/munge
munge_sock=$munge_dir/munge.sock
munge_pid=$munge_dir/munged.pid
ctld_pid=$dir/run/slurmctld.pid
export SLURM_CONF=$conf

need_root() {
  [[ $(id -u) -eq 0 ]] ||
    skip "needs root to create network namespaces and run slurmd (uid $(id -u))"
  PATH=$PATH:/usr/sbin:/sbin
}

need_tools() {
  need_root
  local t
  for t in slurmctld slurmd munged mungekey sinfo squeue nsenter unshare; do
    command -v "$t" >/dev/null 2>&1 ||
      skip "$t is not installed (Debian: apt-get install slurm-wlm munge)"
  done
}

field() { sed -n "s/^$1=//p" "$state" 2>/dev/null || true; }

# pid_of FILE COMM: the pid in FILE if that process is alive (not a zombie: where pid 1 does not
# reap, an ended daemon stays one) and its command is COMM (a pid file left by a dead daemon may
# name an unrelated process by now), else nothing.
pid_of() {
  local p c st
  [[ -f $1 ]] || return 0
  p=$({ tr -dc 0-9 <"$1"; } 2>/dev/null || true)
  [[ -n $p ]] || return 0
  c=$(cat "/proc/$p/comm" 2>/dev/null || true)
  st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1 || true)
  [[ $c == "$2" && -n $st && $st != Z ]] && echo "$p"
  return 0
}

# wait_file FILE SECONDS: until FILE exists and is not empty (polled every 0.1 s).
wait_file() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [[ -s $1 ]] && return 0
    sleep 0.1
  done
  return 1
}

logs_tail() {
  local f
  for f in "$munge_dir/munged.log" "$dir"/log/*.log; do
    [[ -f $f ]] || continue
    echo "--- $f (last 15 lines)" >&2
    tail -n 15 "$f" >&2
  done
}

fail() {
  echo "slurm.sh: $*" >&2
  logs_tail
  exit 1
}

write_conf() {
  local net=$1 port=$2 k
  {
    echo "# written by pcm testbed/slurm.sh for cluster $prefix ($n hosts on $net.0/24)"
    echo "ClusterName=$prefix"
    echo "SlurmctldHost=$ctl($net.254)"
    echo "SlurmctldPort=$port"
    echo "SlurmdPort=6818"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    # --preempt: a requeued job waits cred_expire (default 120 s) before it may start again.
    if ((preempt)); then
      echo "AuthInfo=socket=$munge_sock,cred_expire=10"
    else
      echo "AuthInfo=socket=$munge_sock"
    fi
    echo "StateSaveLocation=$dir/ctld"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    # Each slurmd's mount namespace has a directory of its own here (start_slurmd): Slurm's PMIx
    # plugin names its client directories by job and step only, so nodes sharing /tmp would
    # collide (srun --mpi=pmix: "Cannot create client cli tmpdir ... File exists").
    echo "TmpFS=$dir/nodetmp"
    echo "SlurmctldPidFile=$ctld_pid"
    echo "SlurmdPidFile=$dir/run/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "SwitchType=switch/none"
    echo "MpiDefault=none"
    echo "SchedulerType=sched/backfill"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    # Without config_overrides a node whose CPUs= differs from the hardware's is drained.
    echo "SlurmdParameters=config_overrides"
    echo "ReturnToService=2"
    echo "MailProg=/bin/true"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    echo "MinJobAge=300"
    echo "SlurmdTimeout=60"
    echo "SlurmctldTimeout=60"
    for ((k = 1; k <= n; k++)); do
      echo "NodeName=$prefix$k NodeAddr=$net.$k CPUs=$cpus RealMemory=1 State=UNKNOWN"
    done
    if ((preempt)); then
      # Preemption by partition priority (slurm.preempt): a job of "high" takes nodes from jobs
      # of "main", which get SIGTERM (their batch step at the end of GraceTime), then SIGKILL
      # after KillWait, and are requeued where they asked for it (sbatch --requeue; JobRequeue
      # stays 0); jobs of "cancel" the same, but cancelled (PreemptMode=CANCEL). sinfo -N then
      # lists each node once per partition.
      echo "PreemptType=preempt/partition_prio"
      echo "PreemptMode=REQUEUE"
      # The preemption is decided by the backfill cycle (measured: 9-30 s after the preempting
      # job's submission with the default bf_interval of 30 s): every 5 s here.
      echo "SchedulerParameters=bf_interval=5"
      echo "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO PriorityTier=1 GraceTime=10"
      echo "PartitionName=cancel Nodes=ALL MaxTime=INFINITE State=UP OverSubscribe=NO PriorityTier=1 GraceTime=10 PreemptMode=CANCEL"
      echo "PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP OverSubscribe=NO PriorityTier=10"
    else
      echo "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
    fi
  } >"$conf.tmp"
  mv "$conf.tmp" "$conf"
}

start_munged() {
  [[ -z $(pid_of "$munge_pid" munged) ]] || return 0
  rm -f "$munge_pid" "$munge_sock" "$munge_sock.lock"
  [[ -s $munge_dir/munge.key ]] ||
    mungekey --create --keyfile="$munge_dir/munge.key" --bits=1024 >/dev/null ||
    fail "mungekey could not create $munge_dir/munge.key"
  chmod 0400 "$munge_dir/munge.key"
  # As root and with its files in a directory of ours: --force accepts what munged would only warn
  # about. It forks into the background once its socket is ready.
  munged --force --socket="$munge_sock" --key-file="$munge_dir/munge.key" \
    --pid-file="$munge_pid" --log-file="$munge_dir/munged.log" \
    --seed-file="$munge_dir/munged.seed" </dev/null >>"$munge_dir/munged.log" 2>&1 ||
    fail "munged did not start"
  wait_file "$munge_pid" 10 || fail "munged wrote no pid file"
}

start_slurmctld() {
  [[ -z $(pid_of "$ctld_pid" slurmctld) ]] || return 0
  rm -f "$ctld_pid"
  local port=$1
  if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
    fail "port $port (SlurmctldPort of cluster $prefix) is already in use"
  fi
  # Its own UTS namespace, with the controller's name; slurmctld daemonizes and writes its pid.
  # shellcheck disable=SC2016  # expanded by that sh
  unshare --uts sh -c 'hostname "$1" && exec slurmctld -f "$2"' sh "$ctl" "$conf" \
    </dev/null >>"$dir/log/slurmctld.out" 2>&1 || fail "slurmctld did not start"
  wait_file "$ctld_pid" 20 || fail "slurmctld wrote no pid file $ctld_pid"
}

start_slurmd() {
  local h=$1 pf=$dir/run/slurmd-$1.pid
  [[ -z $(pid_of "$pf" slurmd) ]] || return 0
  rm -f "$pf"
  mkdir -p "$dir/spool/$h" "$dir/tmp/$h" "$dir/nodetmp"
  # The network namespace of the host only (ip netns exec would remount /sys and hide the cgroup
  # mounts slurmd needs), a UTS namespace with the host's name, and a mount namespace (a slave of
  # the machine's, so that the hosts' namespaces removed later are released here too) where the
  # host's /etc/netns/H/hosts covers /etc/hosts, as ip netns exec does: jobs resolve host names.
  # shellcheck disable=SC2016  # expanded by that sh
  nsenter --net="/var/run/netns/$h" unshare --uts --mount --propagation slave \
    sh -c 'mount --bind "/etc/netns/$1/hosts" /etc/hosts && hostname "$1" &&
      mount --bind "$3/tmp/$1" "$3/nodetmp" && exec slurmd -f "$2" -N "$1"' sh "$h" "$conf" "$dir" \
    </dev/null >>"$dir/log/slurmd-$h.out" 2>&1 || fail "slurmd of $h did not start"
  wait_file "$pf" 20 || fail "slurmd of $h wrote no pid file $pf"
}

# wait_idle SECONDS: until sinfo shows n idle nodes; a progress line every 5 s.
wait_idle() {
  local t0=$SECONDS last=-5 got
  while :; do
    # Each node once, whatever partitions list it (--preempt).
    got=$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u | awk '$2 == "idle" {s++} END {print s + 0}')
    ((got == n)) && return 0
    if ((SECONDS - t0 >= $1)); then
      sinfo -N -l >&2 || true
      fail "after $1 s sinfo shows $got of $n nodes idle"
    fi
    if ((SECONDS - last >= 5)); then
      last=$SECONDS
      echo "slurm.sh: waiting for $n idle nodes ($((SECONDS - t0)) s):" \
        "$(sinfo -h -o '%T:%D' 2>/dev/null | tr '\n' ' ' || echo 'no answer')" >&2
    fi
    sleep 0.5
  done
}

do_up() {
  need_tools
  if [[ -f $state ]]; then
    local old_n old_cpus
    old_n=$(field n)
    old_cpus=$(field cpus)
    [[ $old_n == "$n" ]] ||
      die "cluster '$prefix' is up with $old_n hosts; run: $0 down --prefix $prefix"
    [[ $old_cpus == "$cpus" ]] || die "cluster '$prefix' is up with $old_cpus CPUs per node"
  fi
  local rc=0 out
  out=$("$hosts" up "$n" --prefix "$prefix" 2>&1) || rc=$?
  if ((rc == SKIP)); then
    echo "$out"
    exit "$SKIP"
  fi
  ((rc == 0)) || die "hosts.sh up $n --prefix $prefix failed ($rc): $out"
  local net port
  net=$(sed -n 's/^net=//p' "/run/pcm-hosts/$prefix")
  [[ -n $net ]] || die "no subnet recorded by hosts.sh for '$prefix'"
  port=$((17000 + 2 * ${net##*.}))

  mkdir -p "$STATE_DIR" "$dir"
  chmod 0755 "$dir"
  printf 'n=%s\ncpus=%s\nnet=%s\nport=%s\n' "$n" "$cpus" "$net" "$port" >"$state"
  mkdir -p "$munge_dir"
  chmod 0755 "$munge_dir" # the socket must be reachable; the key is 0400
  mkdir -p "$dir/ctld" "$dir/spool" "$dir/log" "$dir/run"
  write_conf "$net" "$port"
  echo "export SLURM_CONF=$conf" >"$dir/env"

  start_munged
  start_slurmctld "$port"
  local k
  for ((k = 1; k <= n; k++)); do start_slurmd "$prefix$k"; done
  wait_idle 60
  echo "slurm.sh: cluster '$prefix' is up: $n idle nodes, controller $ctl at $net.254:$port"
  echo "export SLURM_CONF=$conf"
}

# stop FILE COMM: TERM the process of pid file FILE (if alive and COMM), KILL it after 10 s.
stop() {
  local p i
  p=$(pid_of "$1" "$2")
  [[ -n $p ]] || return 0
  kill -TERM "$p" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    [[ -n $(pid_of "$1" "$2") ]] || return 0
    sleep 0.1
  done
  echo "slurm.sh: $2 ($p) did not end on TERM; killing it" >&2
  kill -KILL "$p" 2>/dev/null || true
}

do_down() {
  need_root # not the Slurm tools: what was started is stopped by pid even if they are gone since
  local f
  if [[ -d $dir ]]; then
    for f in "$dir"/run/slurmd-*.pid; do
      [[ ! -e $f ]] || stop "$f" slurmd
    done
    stop "$ctld_pid" slurmctld
    stop "$munge_pid" munged
  fi
  # Job steps (slurmstepd and their tasks) still inside a host end with it.
  "$hosts" down --prefix "$prefix" >/dev/null
  rm -rf "$dir"
  # /run/pcm-slurm stays (empty): another cluster may be being made right now.
  echo "slurm.sh: cluster '$prefix' is down"
}

do_status() {
  if [[ ! -f $state ]]; then
    echo "slurm.sh: cluster '$prefix' is not up"
    return 0
  fi
  PATH=$PATH:/usr/sbin:/sbin
  echo "export SLURM_CONF=$conf"
  sinfo || true
  squeue || true
}

case $cmd in
  up) do_up ;;
  down) do_down ;;
  status) do_status ;;
  *) usage ;;
esac
