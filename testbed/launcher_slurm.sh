#!/usr/bin/env bash
# testbed/launcher_slurm.sh — the ssh-like launcher that MPICH's hydra and Open MPI's mpirun use
# inside Slurm allocations: it starts the command on HOST as a step of the allocation that holds
# HOST,
#
#   mpiexec -launcher ssh -launcher-exec testbed/launcher_slurm.sh -hosts n1,n2 ...     (hydra)
#   mpirun --mca plm rsh --mca plm_rsh_agent testbed/launcher_slurm.sh --mca ras ^slurm \
#       --host n1:2 ...                                              (Open MPI: its daemons)
#
# (run inside the allocation: in the sbatch script, under salloc, or in a step; for Open MPI see
# tests/multihost/slurm_heat2d_job.sh). The MPI calls it as ssh would be called: `LAUNCHER [ssh
# options, e.g. -x] HOST WORD...`; like ssh, it joins the words with spaces and runs them with a
# shell on HOST:
#
#   srun --jobid=J -w HOST -N1 -n1 --overlap bash -c "WORDS"
#
# J is $SLURM_JOB_ID when that job holds HOST (squeue -j J -w HOST), else the running job that
# holds HOST (squeue -t R -w HOST; the first if several do); with none, it says so and exits 255
# (as ssh does when it cannot connect). By hand: launcher_slurm.sh HOST CMD...
# Every MPI_Comm_spawn onto a host of the allocation thus becomes a step there (--overlap: it
# shares the CPUs of the steps already running, such as hydra's and pcmd's own): hydra starts a
# proxy per spawn, Open MPI's mpirun one daemon per host at the first spawn there, which stays
# until mpirun ends.
set -euo pipefail

# shellcheck source=ssh_args.sh
source "$(dirname "${BASH_SOURCE[0]}")/ssh_args.sh"
ssh_args "$@"

for t in srun squeue; do
  command -v "$t" >/dev/null 2>&1 || {
    echo "launcher_slurm.sh: $t is not on PATH: install Slurm's client commands" \
      "(Debian: slurm-client) or put their directory on PATH" >&2
    exit 255
  }
done

# The running job (of this user's view) that holds host: SLURM_JOB_ID's if it does.
job=
if [[ -n ${SLURM_JOB_ID:-} ]]; then
  job=$(squeue -h -t R -j "$SLURM_JOB_ID" -w "$host" -o %i 2>/dev/null | head -n 1 || true)
fi
if [[ -z $job ]]; then
  job=$(squeue -h -t R -w "$host" -o %i 2>/dev/null | head -n 1 || true)
fi
[[ $job =~ ^[0-9]+$ ]] || {
  echo "launcher_slurm.sh: no running Slurm allocation holds host '$host'" \
    "(SLURM_JOB_ID=${SLURM_JOB_ID:-unset}; squeue -t R -w $host shows none): allocate it" \
    "(e.g. salloc --no-shell -w $host) or choose a host of the allocation" >&2
  exit 255
}

exec srun --jobid="$job" -w "$host" -N1 -n1 --overlap bash -c "$command_line"
