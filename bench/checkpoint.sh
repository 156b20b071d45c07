#!/usr/bin/env bash
# Benchmark of checkpoints, side by side in one run on one filesystem (set up like the README
# commands), at each size of BENCH_SIZES MiB (256 1024) on BENCH_NP (2) processes:
#  - write: PCM_Checkpoint (every rank writes its shard, fsyncs; pcmd commits) of BENCH_VERSIONS
#    (6) versions, each paired with the same bytes written by the same processes with plain
#    write()+fsync to raw files; then `dd conv=fsync` of the same bytes, as many times. The first
#    two pairs warm up (the first writes of a run get pages the machine has never used, which
#    cost several times more here) and are left out of the medians.
#  - read: a restart (PCM_RESTART=1; PCM_Resume reads each rank's share from the shards,
#    verifying every chunk) against read() of the raw files into new memory by the same
#    processes, right after it; warm (page cache; 3 runs, medians) and, where the page cache can
#    be dropped (root), cold.
#  - the paper's calls (PCM_Store + PCM_Commit) at each size of BENCH_STORE_SIZES (default: the
#    first size): BENCH_STORE_ROUNDS (3) rounds of BENCH_VERSIONS versions with the ranks writing
#    the keys themselves (with O_DIRECT, PCM_WRITE_DIRECT=1, then through the page cache, the
#    default) and `dd conv=fsync` of the same bytes as many times, the first two of
#    each warming up; and behind the application (PCM_STORE_ASYNC=1: what PCM_Store + PCM_Commit
#    wait for) with BENCH_STORE_GAP (2) s of computing between versions, its newest version read
#    back and checked element by element; then BENCH_STORE_OLD (3) versions through pcmd
#    (PCM_CHECKPOINT_DIRECT=0); the first two of the direct ones and of dd warm up; then a restart's
#    PCM_Load of the newest direct version, read by the ranks and then through pcmd.
#  - the paper's path through pcmd (PCM_Store + PCM_Commit, PCM_Load; PCM_CHECKPOINT_DIRECT=0) at
#    the first size, once, with `pcmctl status` timed meanwhile.
# Environment: BENCH_SIZES, BENCH_NP, BENCH_VERSIONS, BENCH_STORE_SIZES, BENCH_STORE_OLD, BENCH_STORE_GAP,
# BENCH_DIR (a directory on the filesystem to measure; default $TMPDIR or /tmp), BENCH_OLD=0 to
# skip the through-pcmd path, BENCH_COLD=0 to leave the machine's page cache alone.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# The disk's speed: each PCM_Checkpoint returns once its version is committed (in the background
# the call would return once the data is staged: bench/checkpoint_wait.sh measures that).
export PCM_CHECKPOINT_ASYNC=0
sizes=${BENCH_SIZES:-256 1024} np=${BENCH_NP:-2} versions=${BENCH_VERSIONS:-6}
bench_start_pcmd --keep 2
fs=$(df -T "$tmp" | awk 'NR==2 {print $2}')
can_drop=0
if [ "${BENCH_COLD:-1}" != 0 ] && [ -w /proc/sys/vm/drop_caches ] && sync &&
  echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
  can_drop=1
fi
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
echo "== checkpoints on $np processes, $versions versions per size ($fs at $tmp)"
mkdir -p "$tmp/raw"
export CKPT_RAW_DIR=$tmp/raw
for mb in $sizes; do
  job=bench-ckpt-$mb
  PCM_JOB=$job mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" shards "$versions" |
    tee "$tmp/w$mb.txt"
  for _ in $(seq "$versions"); do
    dd if=/dev/zero of="$tmp/dd" bs=1M count="$mb" conv=fsync 2>&1 | tail -1 | tee -a "$tmp/dd$mb.txt"
  done
  rm -f "$tmp/dd"
  for _ in 1 2 3; do
    PCM_JOB=$job PCM_RESTART=1 mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" | tee -a "$tmp/rw$mb.txt"
  done
  if [ "$can_drop" = 1 ]; then
    drop
    PCM_JOB=$job PCM_RESTART=1 mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" | tee "$tmp/rc$mb.txt"
  fi
done
first=${sizes%% *}
for mb in ${BENCH_STORE_SIZES:-$first}; do
  # Rounds of: the ranks' files written with O_DIRECT (PCM_WRITE_DIRECT=1), written through the
  # page cache (the default), dd; each its versions, the first two of each warming up.
  rounds=${BENCH_STORE_ROUNDS:-3}
  for r in $(seq "$rounds"); do
    PCM_WRITE_DIRECT=1 PCM_JOB=bench-store-$mb-$r mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" \
      store "$versions" | tee "$tmp/sw$mb-$r.txt"
    PCM_WRITE_DIRECT=0 PCM_JOB=bench-store-buffered-$mb-$r mpiexec -n "$np" "$B/bench/ckpt_cost" \
      "$mb" store "$versions" | tee "$tmp/swb$mb-$r.txt"
    # Behind the application (PCM_STORE_ASYNC=1): what the calls wait for, with BENCH_STORE_GAP
    # (2) s of computing between versions (the writes of one go on during it).
    PCM_STORE_ASYNC=1 PCM_JOB=bench-store-async-$mb-$r mpiexec -n "$np" "$B/bench/ckpt_cost" \
      "$mb" store "$versions" "${BENCH_STORE_GAP:-2}" | tee "$tmp/swa$mb-$r.txt"
    for _ in $(seq "$versions"); do
      dd if=/dev/zero of="$tmp/dd" bs=1M count="$mb" conv=fsync 2>&1 | tail -1 |
        tee -a "$tmp/sdd$mb-$r.txt"
    done
    rm -f "$tmp/dd"
  done
  PCM_CHECKPOINT_DIRECT=0 PCM_JOB=bench-store-old-$mb mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" \
    store "${BENCH_STORE_OLD:-3}" | tee "$tmp/so$mb.txt"
  # The restart's PCM_Load of the newest direct version: the ranks read the shards, then pcmd does.
  PCM_JOB=bench-store-buffered-$mb-$rounds PCM_RESTART=1 mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" store |
    tee "$tmp/sr$mb.txt"
  PCM_CHECKPOINT_DIRECT=0 PCM_JOB=bench-store-buffered-$mb-$rounds PCM_RESTART=1 mpiexec -n "$np" \
    "$B/bench/ckpt_cost" "$mb" store | tee "$tmp/sro$mb.txt"
  # The newest version made behind the application, read back and checked element by element.
  PCM_JOB=bench-store-async-$mb-$rounds PCM_RESTART=1 mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" \
    store | tee "$tmp/sra$mb.txt"
done
# How long `pcmctl status` takes to answer: idle, then while a job moves data through pcmd.
status_times() {  # status_times FILE: times `pcmctl status` until $tmp/stop-status exists
  while [ ! -e "$tmp/stop-status" ]; do
    local t0 t1
    t0=$(date +%s%N)
    "$B/pcmctl" status >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000)) >>"$1"
  done
}
if [ "${BENCH_OLD:-1}" = 1 ]; then
  for _ in $(seq 20); do
    t0=$(date +%s%N)
    "$B/pcmctl" status >/dev/null
    echo $((($(date +%s%N) - t0) / 1000)) >>"$tmp/idle-status.txt"
  done
  status_times "$tmp/busy-status.txt" &
  poller=$!
  PCM_CHECKPOINT_DIRECT=0 PCM_JOB=bench-old mpiexec -n "$np" "$B/bench/ckpt_cost" "$first" store |
    tee "$tmp/ow.txt"
  touch "$tmp/stop-status"
  wait "$poller"
  PCM_CHECKPOINT_DIRECT=0 PCM_JOB=bench-old PCM_RESTART=1 mpiexec -n "$np" "$B/bench/ckpt_cost" \
    "$first" store |
    tee "$tmp/or.txt"
fi
bench_table checkpoint "$tmp" "$sizes" "$can_drop" "${BENCH_STORE_SIZES:-$first}"
