#!/usr/bin/env bash
# bench_site_move.sh — a whole job moved between sites (pcmctl move, carried out by pcmctl run)
# against the same move by hand (checkpoint, stop, copy the version's directory, restart in the
# other site), at each size of BENCH_SIZES MiB (256 1024), BENCH_REPS (2) times each;
# scripts/bench_site_move.py says what is measured. Needs root (test sites of network
# namespaces); prints SKIPPED and exits 77 without. Run it alone:
# flock /tmp/pcm-ns.lock bash scripts/bench_site_move.sh. Environment: BENCH_SIZES, BENCH_REPS.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
python3 "$ROOT/scripts/bench_site_move.py" "$B"
