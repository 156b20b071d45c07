#!/usr/bin/env bash
# Benchmark: how long pcmd takes to answer other jobs' small requests (ping, status, a
# registration, a poll; bench/pcmd_latency.cpp, back to back) while job A moves BENCH_MB MiB,
# for this checkout's pcmd and an earlier revision's, side by side in one run:
#   idle     nothing else runs (3 s);
#   store    job A (2 processes) stores its data through pcmd (PCM_Store, the paper's path),
#            commits and loads it back (bench/ckpt_cost.c "store", that revision's build);
#   shards   job A writes a checkpoint of its own shards (PCM_Checkpoint) and a restart reads
#            it (this checkout only: the revision before has no shards).
# bash bench/pcmd_latency.sh [REV]   (REV: default 1c372f9, the last commit before pcmd's
# disk work left its request loop). The revision is built once into $PCM_CACHE_DIR/compare-REV.
# Environment: BENCH_MB (1024).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rev=${1:-1c372f9}
mb=${BENCH_MB:-1024}
bench_build_rev "$rev" pcmd ckpt_cost

# phase NAME BUILD [COMMAND...]: the latency client runs while COMMAND runs (3 s without one).
phase() {
  local name=$1 build=$2
  shift 2
  rm -f "$tmp/stop"
  "$B/bench/pcmd_latency" "$PCM_CONFIG" 3600 "$tmp/stop" >"$tmp/lat-$name.txt" 2>"$tmp/lat-$name.err" &
  local lat=$!
  bench_mpi=$lat
  if [ $# -eq 0 ]; then sleep 3; else "$@" >"$tmp/job-$name.out" 2>&1 || {
    echo "job A failed in phase $name:"; cat "$tmp/job-$name.out"; exit 1; }; fi
  touch "$tmp/stop"
  wait "$lat"
  bench_mpi=
  echo "-- $name ($build pcmd)"
  cat "$tmp/lat-$name.txt"
  grep -E '^ckpt_cost' "$tmp/job-$name.out" 2>/dev/null | sed 's/^/   job A: /' || true
}
run_pcmd() {  # run_pcmd BUILD: a fresh pcmd of that build on a new data directory
  if [ -f "$tmp/pcmd.pid" ]; then kill "$(cat "$tmp/pcmd.pid")"; sleep 0.5; fi
  rm -rf "$tmp/data"
  "$1/pcmd" --detach --pidfile "$tmp/pcmd.pid" --data-dir "$tmp/data" --config "$PCM_CONFIG" \
    --probe-port 0 2>>"$tmp/pcmd.log"
}

echo "== answer times of ping/status/poll/register from another job while job A moves $mb MiB"
for which in old new; do
  if [ $which = old ]; then build=$base/build label=$sha; else build=$B label="this checkout"; fi
  run_pcmd "$build"
  phase "idle-$which" "$label"
  phase "store-$which" "$label" env PCM_JOB=a-store-$which mpiexec -n 2 "$build/bench/ckpt_cost" "$mb" store
  if [ $which = new ]; then
    phase "shards-$which" "$label" sh -c "PCM_JOB=a-shards mpiexec -n 2 '$build/bench/ckpt_cost' $mb shards &&
      PCM_JOB=a-shards PCM_RESTART=1 mpiexec -n 2 '$build/bench/ckpt_cost' $mb shards"
  fi
done
