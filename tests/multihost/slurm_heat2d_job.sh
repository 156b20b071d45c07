#!/usr/bin/env bash
# tests/multihost/slurm_heat2d_job.sh — the sbatch script of slurm.heat2d (slurm_heat2d.py), run on
# the allocation's first node: pcmd as a step there (--resources slurm, bound to the node's
# address, its configuration in the shared DIR), then heat2d_pcm through mpiexec with
# scripts/slurm-launcher.sh as hydra's launcher (so that every spawn is a step of this job).
#
#   sbatch -N2 ... slurm_heat2d_job.sh BUILD DIR LAUNCHER NP PROGRAM ARGS...
#
# MPIEXEC (hydra's mpiexec), PCM_JOB and PCMD_ARGS (more pcmd options, split on spaces) come
# from the submitter's environment (sbatch passes it).
# pcmd's step is ended (TERM, through srun) once mpiexec has, whatever its exit status, and the
# test has created DIR/release (or 60 s later).
set -euo pipefail

build=$1 dir=$2 launcher=$3 np=$4
shift 4
node=$(hostname)
addr=$(getent hosts "$node" | awk '{print $1; exit}')
[[ -n $addr ]] || {
  echo "slurm_heat2d_job: no address for $node" >&2
  exit 1
}
export PCM_CONFIG=$dir/pcmd.conf

# shellcheck disable=SC2086  # PCMD_ARGS: words
srun --jobid="$SLURM_JOB_ID" -w "$node" -N1 -n1 --overlap "$build/pcmd" --resources slurm \
  --bind "$addr" --config "$PCM_CONFIG" --data-dir "$dir/data" --pidfile "$dir/pcmd.pid" \
  ${PCMD_ARGS:-} >"$dir/pcmd.log" 2>&1 &
pcmd_step=$!
# shellcheck disable=SC2317  # run by the EXIT trap
stop_pcmd() {
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
echo "slurm_heat2d_job: pcmd listens on $addr (job $SLURM_JOB_ID, nodes $SLURM_JOB_NODELIST)"

rc=0
"${MPIEXEC:-mpiexec}" -launcher ssh -launcher-exec "$launcher" -hosts "$node" -n "$np" "$@" || rc=$?
echo "slurm_heat2d_job: mpiexec exited $rc"
# pcmd stays until the test has read the job's end from it (DIR/release; at most 60 s).
for ((i = 0; i < 600; i++)); do
  [[ ! -e $dir/release ]] || break
  sleep 0.1
done
exit "$rc"
