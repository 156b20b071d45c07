#!/usr/bin/env bash
# bench_slurm.sh — rigid against malleable jobs under a real Slurm: a Slurm cluster of 3 namespace
# nodes (scripts/slurm.sh, 2 CPUs each, taken down at the end), a seeded schedule of heat2d jobs
# run twice, once with every job fixed-size and once with every other job's pcmd deciding by
# itself (--policy auto: grow onto idle nodes, shrink when a job waits); prints makespan, wait,
# turnaround, node-seconds, utilisation and the policy's latencies, writes CSVs and a plot of the
# nodes in use over time (scripts/bench_slurm.py says more). About 10 minutes; --quick about 4.
#
#   bash scripts/bench_slurm.sh [--quick] [--seed N] [--out DIR]
#
# Needs root, Debian's slurm-wlm and munge, and MPICH's hydra; prints SKIPPED and exits 77
# without. Nothing is written into the checkout: the output goes to --out (default: a new
# temporary directory, printed at the end).
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: bench_slurm: needs root to make namespace hosts and run slurmd (uid $(id -u))"
  exit 77
fi
# shellcheck source-path=SCRIPTDIR source=bench_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
python3 "$ROOT/scripts/bench_slurm.py" "$B" "$@"
