#!/usr/bin/env bash
# soak_checkpoints.sh [TRIALS] [SEEDS] — seeded kill trials of the checkpoint data path: a writer
# making shard versions (write, commit, prune) is SIGKILLed at a random moment, TRIALS times per
# seed (default 1000) for SEEDS seeds (default 3); after each kill the newest valid version must
# read back bit-identical to what was written for it. CI runs 300 trials of one seed in the
# unit tests (ShardVersions.KilledWriterLeavesOnlyWholeVersions). Needs a build (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-1000}
seeds=${2:-3}
bin=build/tests/pcm_unit_tests
[ -x "$bin" ] || { echo "soak_checkpoints: no $bin; build first (bash scripts/test.sh)" >&2; exit 1; }
for ((s = 1; s <= seeds; s++)); do
  PCM_SOAK_TRIALS=$trials PCM_SOAK_SEED=$((20261124 + s)) "$bin" \
    --gtest_filter=ShardVersions.KilledWriterLeavesOnlyWholeVersions | grep -E '^\[ *(soak|FAILED|PASSED)'
done
