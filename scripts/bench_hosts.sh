#!/usr/bin/env bash
# bench_hosts.sh — reconfigurations across namespace hosts against the same on one host: migration,
# growth 2 -> 4, and heat2d after spread against after concentrate placement, side by side in one
# run (scripts/bench_hosts.py says what is measured). Needs root (network namespaces); prints
# SKIPPED and exits 77 without. Environment: BENCH_REPS (3), BENCH_NX/BENCH_NY (512),
# BENCH_ITERS (400).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
python3 "$ROOT/scripts/bench_hosts.py" "$B"
