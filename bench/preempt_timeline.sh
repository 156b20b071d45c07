#!/usr/bin/env bash
# Benchmark: one preempt-requeue-resume cycle of a PCM job on the Slurm test cluster, as a timeline
# (issue 37). tests/multihost/slurm_preempt.py --timeline runs its case B with heat2d's trace: a
# job of partition high preempts the PCM job (SIGTERM, its last version within GraceTime 10 s),
# Slurm requeues it, the high job runs, the job resumes from that version and finishes bit for bit.
# Prints when each moment came (tables.py preempt_timeline) and draws the throughput over time with
# the moments (bench/plots/timeline.gp). Needs root, Slurm and munge (else SKIPPED, exit 77).
# Writes to BENCH_OUT (default $PCM_BUILD_DIR/bench-preempt-timeline): trace.csv, events.csv,
# timeline.png; BENCH_PNG, when set, gets a copy of the plot.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
out=${BENCH_OUT:-$B/bench-preempt-timeline}
mkdir -p "$out"
rc=0
python3 "$ROOT/tests/multihost/slurm_preempt.py" "$B" --timeline "$out" || rc=$?
[ "$rc" = 0 ] || exit "$rc"
bench_table preempt_timeline "$out/trace.csv" "$out/events.csv"
bench_py plot timeline "$out/timeline.png" "$out/trace.csv" "$out/events.csv" "$out/timeline.png" \
  "heat2d on 2 processes preempted by a job of a higher partition, requeued, resumed" >/dev/null
if [ -n "${BENCH_PNG:-}" ]; then cp "$out/timeline.png" "$BENCH_PNG"; echo "plot: $BENCH_PNG"; fi
echo "files: $out/trace.csv $out/events.csv $out/timeline.png"
