#!/usr/bin/env bash
# bench/slurm_job.sh — the sbatch script of every job of bench/slurm.py, run on the
# allocation's first node: pcmd as a step there (--resources slurm, bound to the node's address,
# its files in DIR), then heat2d_pcm through mpiexec on every node of the allocation, PPN
# processes per node, with testbed/launcher_slurm.sh as hydra's launcher (so that every process
# beyond the first node, and every spawn, is a step of a Slurm job).
#
#   sbatch -N K --ntasks-per-node=PPN ... slurm_job.sh BUILD DIR LAUNCHER PPN PROGRAM ARGS...
#
# MPIEXEC (hydra's mpiexec), PCM_JOB and PCMD_ARGS (pcmd's --policy options, split on spaces)
# come from the submitter's environment (sbatch passes it).
# After mpiexec has exited: pcmd's view of the job (pcmctl status --json, with its timed events)
# goes to DIR/pcm-status.json; the job waits (at most 30 s) for pcmd to have given back the
# second allocations it asked for (job name pcm-grow.$SLURM_JOB_ID), cancels any left, and ends
# pcmd's step (TERM through srun).
set -euo pipefail

build=$1 dir=$2 launcher=$3 ppn=$4
shift 4
node=$(hostname)
addr=$(getent hosts "$node" | awk '{print $1; exit}')
[[ -n $addr ]] || {
  echo "bench_slurm_job: no address for $node" >&2
  exit 1
}
export PCM_CONFIG=$dir/pcmd.conf
nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -)
[[ -n $nodes ]] || {
  echo "bench_slurm_job: no nodes in SLURM_JOB_NODELIST '${SLURM_JOB_NODELIST:-}'" >&2
  exit 1
}
np=$(($(tr ',' '\n' <<<"$nodes" | wc -l) * ppn))

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

for ((i = 0; i < 600; i++)); do
  [[ -s $PCM_CONFIG && -s $dir/pcmd.pid ]] && break
  kill -0 "$pcmd_step" 2>/dev/null || {
    echo "bench_slurm_job: pcmd's step ended:" >&2
    cat "$dir/pcmd.log" >&2
    exit 1
  }
  sleep 0.1
done
[[ -s $PCM_CONFIG ]] || {
  echo "bench_slurm_job: pcmd wrote no $PCM_CONFIG within 60 s" >&2
  exit 1
}
echo "bench_slurm_job: pcmd listens on $addr (job $SLURM_JOB_ID, nodes $nodes, $np processes)"

hosts=$(tr ',' '\n' <<<"$nodes" | sed "s/\$/:$ppn/" | paste -sd, -)
rc=0
"${MPIEXEC:-mpiexec}" -launcher ssh -launcher-exec "$launcher" -hosts "$hosts" -n "$np" "$@" ||
  rc=$?
echo "bench_slurm_job: mpiexec exited $rc"

if "$build/pcmctl" status "$PCM_JOB" --json >"$dir/pcm-status.json.tmp" 2>"$dir/pcmctl.err"; then
  mv "$dir/pcm-status.json.tmp" "$dir/pcm-status.json"
else
  echo "bench_slurm_job: pcmctl status failed: $(cat "$dir/pcmctl.err")" >&2
fi
grow=pcm-grow.$SLURM_JOB_ID
for ((i = 0; i < 300; i++)); do
  [[ -n $(squeue -h -n "$grow" -o %i 2>/dev/null) ]] || break
  sleep 0.1
done
left=$(squeue -h -n "$grow" -o %i 2>/dev/null || true)
if [[ -n $left ]]; then
  echo "bench_slurm_job: pcmd's allocations still held after 30 s, cancelled: $left" >&2
  # shellcheck disable=SC2086  # ids: words
  scancel $left || true
fi
exit "$rc"
