#!/usr/bin/env bash
# bench_levels.sh — restart time after a host loss from the local, partner and shared checkpoint
# levels, and the application-visible PCM_Checkpoint time with levels against without, at each
# size of BENCH_SIZES MiB (64 256); scripts/bench_levels.py says what is measured and how. Needs
# root (namespace hosts with mount namespaces); prints SKIPPED and exits 77 without. Run it alone:
# flock /tmp/pcm-ns.lock bash scripts/bench_levels.sh. Environment: BENCH_SIZES, BENCH_REPS (2),
# BENCH_VERSIONS (4), BENCH_GAP (1).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
python3 "$ROOT/scripts/bench_levels.py" "$B"
