#!/usr/bin/env bash
# scripts/slurm_demo.sh — PCM inside a real Slurm cluster, shown step by step (as root, on a fresh
# Debian 12 machine: scripts/setup.sh installs Slurm and munge with the rest). It makes a cluster
# of two network-namespace nodes (testbed/slurm.sh), runs heat2d under sbatch on node 1 with pcmd
# as a step of the job (--resources slurm), and prints Slurm's queue and pcmd's view as:
#   - a split waits for a second allocation while another job holds node 2, and is refused when
#     none comes (--slurm-grow-timeout 5), the job unchanged and nothing left allocated;
#   - with node 2 free, the split gets a second allocation there (a job of Slurm's own);
#   - pcmd is killed and started again inside the allocation, and keeps the job;
#   - a merge leaves node 2: pcmd gives the allocation back and a job waiting for node 2 starts;
#   - heat2d's result equals the plain run's, bit for bit.
# The same scenario is the test slurm.grow (tests/multihost/slurm_grow.py, which this runs with
# --show). Everything it makes is removed at the end, also on failure. Exits 77 without root.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $(id -u) -ne 0 ]]; then
  echo "slurm_demo.sh: needs root (network namespaces, slurmd, munged)" >&2
  exit 77
fi
bash "$ROOT/scripts/setup.sh"
# shellcheck source=/dev/null
source "$ROOT/scripts/.env"
PATH=$PATH:/usr/sbin:/sbin exec python3 "$ROOT/tests/multihost/slurm_grow.py" "$PCM_BUILD_DIR" --show
