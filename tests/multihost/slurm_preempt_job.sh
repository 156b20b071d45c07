#!/usr/bin/env bash
# tests/multihost/slurm_preempt_job.sh — the sbatch script of slurm.preempt (slurm_preempt.py), as
# docs/user/preemption.md gives it: pcmd in the batch script itself (--detach, --stop-grace: it
# must outlive the job's last version, and srun kills a step it is sent TERM for), the signals the
# batch shell gets forwarded to `pcmctl run --requeue`, which runs PROGRAM on NP processes of this
# node (hydra, its proxy forked here) and resumes the job from its newest version in a requeued
# run.
#
#   sbatch --requeue --open-mode=append ... slurm_preempt_job.sh BUILD DIR NP PROGRAM ARGS...
#
# PCM_JOB and MPIEXEC come from the submitter's environment (sbatch passes it).
set -uo pipefail
build=$1 dir=$2 np=$3
shift 3
node=$(hostname)
addr=$(getent hosts "$node" | awk '{print $1; exit}')
export PCM_CONFIG=$dir/pcmd.conf
echo "slurm_preempt_job: run $((${SLURM_RESTART_COUNT:-0} + 1)) of Slurm job $SLURM_JOB_ID on $node"
"$build/pcmd" --resources slurm --bind "$addr" --config "$PCM_CONFIG" --data-dir "$dir/data" \
  --pidfile "$dir/pcmd.pid" --stop-grace 60 --detach 2>>"$dir/pcmd.log" || {
  echo "slurm_preempt_job: pcmd did not start" >&2
  exit 1
}
run=
# shellcheck disable=SC2317  # run by the traps
forward() { [[ -n $run ]] && kill "-$1" "$run" 2>/dev/null; }
trap 'forward USR1' USR1 # --signal=B:USR1@T reaches this shell only
trap 'forward TERM' TERM
"$build/pcmctl" run --requeue -n "$np" --job "${PCM_JOB:?}" --mpiexec "${MPIEXEC:-mpiexec}" \
  --mpiexec-arg=-launcher --mpiexec-arg=fork -- "$@" &
run=$!
while kill -0 "$run" 2>/dev/null; do wait "$run"; done # a trapped signal interrupts wait
wait "$run"
rc=$?
echo "slurm_preempt_job: pcmctl run exited $rc"
pid=$(cat "$dir/pcmd.pid" 2>/dev/null)
if [[ $pid =~ ^[0-9]+$ ]] && kill -TERM "$pid" 2>/dev/null; then
  for ((i = 0; i < 300; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
fi
exit "$rc"
