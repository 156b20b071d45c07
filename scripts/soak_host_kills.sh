#!/usr/bin/env bash
# soak_host_kills.sh [KILLS] [SEED] — seeded host power-offs (tests/multihost/recover.py):
# heat2d_pcm under `pcmctl run --on-inventory` on three namespace hosts loses host 3 (its processes
# stopped, its link cut, then killed: no FIN or RST reaches anyone) at a random moment (between
# versions, in a split, before the first version, in a merge, at a version, in a split onto host 3
# alone), KILLS times (default 100) from SEED (default 1); every job must finish on the hosts left
# with the plain run's checksum, none lost, none hung, the loss seen by pcmd (not the watchdog).
# Prints one line per kill and a summary (iterations computed twice, time to iterate again after
# the loss was seen and after the power-off, how many within 15 s). CI runs 6 (ctest
# multihost.recover). Needs root and a build
# (bash scripts/test.sh); exits 77 where namespaces cannot be made.
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-100}
seed=${2:-1}
[ -x build/pcmctl ] || { echo "soak_host_kills: no build/pcmctl; build first (bash scripts/test.sh)" >&2; exit 1; }
# shellcheck source=/dev/null
[ -f scripts/.env ] && source scripts/.env  # the self-built MPICH, written by scripts/test.sh
exec python3 tests/multihost/recover.py build --kills "$kills" --seed "$seed"
