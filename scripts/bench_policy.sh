#!/usr/bin/env bash
# bench_policy.sh — the paper's Figures 9 and 10 with pcmd's own policy (pcmd --policy auto) on two
# namespace hosts: a host joins, is loaded, is freed and leaves while heat2d runs; prints the time
# from each resource event to the policy's decision and to the reconfiguration done, the decisions
# with their reasons, throughput after the policy's growth against the job launched at that size,
# the reconfigurations over a steady stretch, and the checksum against plain heat2d's; draws the
# timeline (scripts/bench_policy.py says more). Needs root (network namespaces); prints SKIPPED and
# exits 77 without. Environment: BENCH_STEADY_S (180), BENCH_NX/BENCH_NY (1024 x 512),
# BENCH_INTERVAL_S/BENCH_MEASURE_S/BENCH_SUSTAIN_S (5/5/3: pcmd's --policy-* options), BENCH_OUT,
# BENCH_PNG.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
python3 "$ROOT/scripts/bench_policy.py" "$B"
