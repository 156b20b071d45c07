#!/usr/bin/env bash
# tests/multihost/slurm_heat2d_job.sh — the sbatch script of slurm.heat2d and slurm.grow
# (slurm_heat2d.py, slurm_grow.py), run on the allocation's first node: pcmd as a step there
# (--resources slurm, bound to the node's address, its configuration in the shared DIR), then
# NP processes of PROGRAM on this node through mpiexec, with testbed/launcher_slurm.sh starting
# whatever the MPI starts on another node, as a step of the allocation holding that node:
#   - MPICH's hydra: -launcher ssh -launcher-exec LAUNCHER -hosts NODE (a proxy per spawn);
#   - Open MPI's mpirun: --mca plm rsh --mca plm_rsh_agent LAUNCHER --mca ras ^slurm
#     --host NODE:NP, and -x for each PCM_* variable. mpirun would otherwise launch its daemons
#     (orted) with its own srun inside this job only (plm slurm: a spawn given a host outside
#     the job landed on this node instead), and with the job's nodes as its allocation (ras
#     slurm) it refuses a spawn onto a node of the job that --host left out ("All nodes which
#     are allocated for this job are already filled"). libpcm names each spawn's host in
#     "add-host" too, so mpirun starts its daemon on a node when the first spawn goes there
#     (through LAUNCHER: a step of this job, or of a second allocation holding the node). That
#     daemon stays until mpirun ends (Open MPI 4.1 cannot stop one and aborts the run if one is
#     killed), so pcmd gives such a node back only then.
#
#   sbatch -N2 ... slurm_heat2d_job.sh BUILD DIR LAUNCHER NP PROGRAM ARGS...
#
# With PCM_RUN_LAUNCHER=srun the program runs under `pcmctl run --launcher srun` instead: each run
# a step of this allocation (srun --mpi=pmi2 on MPICH, --mpi=pmix on Open MPI), reshaped by
# restart (slurm_srun.py).
#
# MPIEXEC (the MPI's mpiexec; on Open MPI the build's mpi-bin/mpiexec, which sets what
# testbed/launcher_mpi.sh sets), PCM_MPI_FAMILY (mpich or openmpi; else exit 77, SKIPPED), PCM_JOB
# PCMD_ARGS (more pcmd options, split on spaces) and PCMD_PATH_PREFIX come from the submitter's
# environment (sbatch passes it).
# pcmd is stopped (TERM to its pid, then its srun) once mpiexec has, whatever its exit status, and the
# test has created DIR/release (or 60 s later).
set -euo pipefail

build=$1 dir=$2 launcher=$3 np=$4
shift 4
node=$(hostname)
export PCM_CONFIG=$dir/pcmd.conf
family=${PCM_MPI_FAMILY:-mpich}
case $family in
  mpich) launch=(-launcher ssh -launcher-exec "$launcher" -hosts "$node") ;;
  openmpi)
    launch=(--mca plm rsh --mca plm_rsh_agent "$launcher" --mca ras ^slurm --host "$node:$np")
    for name in $(compgen -e); do
      if [[ $name == PCM_* ]]; then launch+=(-x "$name"); fi
    done
    ;;
  *)
    echo "SKIPPED: slurm_heat2d_job: no launcher syntax for MPI family '$family' (mpich, openmpi)"
    exit 77
    ;;
esac
addr=$(getent hosts "$node" | awk '{print $1; exit}')
[[ -n $addr ]] || {
  echo "slurm_heat2d_job: no address for $node" >&2
  exit 1
}

# PCMD_PATH_PREFIX: directories before PATH for pcmd only (slurm.slow_commands' slow Slurm).
pcmd_env=()
[[ -n ${PCMD_PATH_PREFIX:-} ]] && pcmd_env=(env "PATH=$PCMD_PATH_PREFIX:$PATH")
# shellcheck disable=SC2086  # PCMD_ARGS: words
srun --jobid="$SLURM_JOB_ID" -w "$node" -N1 -n1 --overlap "${pcmd_env[@]}" "$build/pcmd" --resources slurm \
  --bind "$addr" --config "$PCM_CONFIG" --data-dir "$dir/data" --pidfile "$dir/pcmd.pid" \
  ${PCMD_ARGS:-} >"$dir/pcmd.log" 2>&1 &
pcmd_step=$!
# srun answers a SIGTERM by killing its step ("Job step aborted", the task SIGKILLed): pcmd
# itself gets the TERM (its pidfile), so that it stops as it should (it gives back the second
# allocations no job uses), then srun if pcmd has not ended within 30 s.
# shellcheck disable=SC2317  # run by the EXIT trap
stop_pcmd() {
  local pid
  pid=$(cat "$dir/pcmd.pid" 2>/dev/null) || pid=
  if [[ $pid =~ ^[0-9]+$ ]] && kill -TERM "$pid" 2>/dev/null; then
    for ((i = 0; i < 300; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  kill -TERM "$pcmd_step" 2>/dev/null || true
  wait "$pcmd_step" 2>/dev/null || true
}
trap stop_pcmd EXIT

# pcmd writes its configuration file once it listens (bounded wait: 60 s).
for ((i = 0; i < 600; i++)); do
  [[ -s $PCM_CONFIG && -s $dir/pcmd.pid ]] && break
  kill -0 "$pcmd_step" 2>/dev/null || {
    echo "slurm_heat2d_job: pcmd's step ended:" >&2
    cat "$dir/pcmd.log" >&2
    exit 1
  }
  sleep 0.1
done
[[ -s $PCM_CONFIG ]] || {
  echo "slurm_heat2d_job: pcmd wrote no $PCM_CONFIG within 60 s" >&2
  exit 1
}
echo "slurm_heat2d_job: pcmd listens on $addr (job $SLURM_JOB_ID, nodes $SLURM_JOB_NODELIST," \
  "MPI $family)"

rc=0
if [[ ${PCM_RUN_LAUNCHER:-} == srun ]]; then
  # Each run a step of this allocation, launched by srun and supervised by pcmctl run (which
  # reshapes it by restart); the MPI takes its PMI from srun: PMI-2's plugin (MPICH's simple PMI
  # speaks its wire protocol) or PMIx (Open MPI).
  case $family in
    mpich) srun_mpi=pmi2 ;;
    openmpi) srun_mpi=pmix ;;
  esac
  "$build/pcmctl" run --launcher srun --mpiexec-arg="--mpi=$srun_mpi" -n "$np" \
    --job "${PCM_JOB:?}" --max-restarts 0 -- "$@" || rc=$?
else
  "${MPIEXEC:-mpiexec}" "${launch[@]}" -n "$np" "$@" || rc=$?
fi
echo "slurm_heat2d_job: mpiexec exited $rc"
# pcmd stays until the test has read the job's end from it (DIR/release; at most 60 s).
for ((i = 0; i < 600; i++)); do
  [[ ! -e $dir/release ]] || break
  sleep 0.1
done
exit "$rc"
