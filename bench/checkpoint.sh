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
#    first size): BENCH_VERSIONS versions with the ranks writing the keys themselves, `dd
#    conv=fsync` of the same bytes as many times, and BENCH_STORE_OLD (3) versions through pcmd
#    (PCM_CHECKPOINT_DIRECT=0); the first two of the direct ones and of dd warm up; then a restart's
#    PCM_Load of the newest direct version, read by the ranks and then through pcmd.
#  - the paper's path through pcmd (PCM_Store + PCM_Commit, PCM_Load; PCM_CHECKPOINT_DIRECT=0) at
#    the first size, once, with `pcmctl status` timed meanwhile.
# Environment: BENCH_SIZES, BENCH_NP, BENCH_VERSIONS, BENCH_STORE_SIZES, BENCH_STORE_OLD,
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
  PCM_JOB=bench-store-$mb mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" store "$versions" |
    tee "$tmp/sw$mb.txt"
  for _ in $(seq "$versions"); do
    dd if=/dev/zero of="$tmp/dd" bs=1M count="$mb" conv=fsync 2>&1 | tail -1 | tee -a "$tmp/sdd$mb.txt"
  done
  rm -f "$tmp/dd"
  PCM_CHECKPOINT_DIRECT=0 PCM_JOB=bench-store-old-$mb mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" \
    store "${BENCH_STORE_OLD:-3}" | tee "$tmp/so$mb.txt"
  # The restart's PCM_Load of the newest direct version: the ranks read the shards, then pcmd does.
  PCM_JOB=bench-store-$mb PCM_RESTART=1 mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" store |
    tee "$tmp/sr$mb.txt"
  PCM_CHECKPOINT_DIRECT=0 PCM_JOB=bench-store-$mb PCM_RESTART=1 mpiexec -n "$np" \
    "$B/bench/ckpt_cost" "$mb" store | tee "$tmp/sro$mb.txt"
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
python3 - "$tmp" "$sizes" "$can_drop" "${BENCH_STORE_SIZES:-$first}" <<'PY'
import os, re, statistics, sys
d, sizes, can_drop = sys.argv[1], [int(x) for x in sys.argv[2].split()], sys.argv[3] == "1"
store_sizes = [int(x) for x in sys.argv[4].split()]
med = statistics.median
def text(name):
    p = os.path.join(d, name)
    return open(p).read() if os.path.exists(p) else ""
print("\n| what | PCM | baseline, same bytes | baseline/PCM time (>= 0.8 is the target) |")
print("| --- | --- | --- | --- |")
for mb in sizes:
    gb = mb * 1024 * 1024 / 1e9
    pairs = [(float(a), float(b)) for a, b in
             re.findall(r"wrote .*?: ([\d.]+) s, .*?raw write\(\)\+fsync ([\d.]+) s", text(f"w{mb}.txt"))]
    steady = pairs[2:] or pairs
    dd = [float(x) for x in re.findall(r"copied, ([\d.]+) s", text(f"dd{mb}.txt"))]
    dd = dd[2:] or dd
    w = med([p[0] for p in steady])
    ratios = [b / a for a, b in steady]
    print(f"| write {mb} MiB: PCM_Checkpoint (fsync included) vs write()+fsync by the same "
          f"processes | {w:.3f} s ({gb / w:.2f} GB/s) | {med([p[1] for p in steady]):.3f} s | "
          f"{med(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}, {len(steady)} pairs) |")
    print(f"| write {mb} MiB: PCM_Checkpoint vs dd conv=fsync | {w:.3f} s | {med(dd):.3f} s "
          f"({gb / med(dd):.2f} GB/s) | {med(dd) / w:.2f} |")
    for kind, name in (("warm", f"rw{mb}.txt"), ("cold", f"rc{mb}.txt")):
        runs = [(float(a), float(b)) for a, b in
                re.findall(r"read .*?: ([\d.]+) s, .*?raw read\(\) ([\d.]+) s", text(name))]
        if runs:
            a, b = med([r[0] for r in runs]), med([r[1] for r in runs])
            print(f"| restart read {mb} MiB, page cache {kind}: PCM_Resume (chunks verified) vs "
                  f"read() into new memory by the same processes | {a:.3f} s ({gb / a:.2f} GB/s) | "
                  f"{b:.3f} s | {b / a:.2f} ({len(runs)} run{'s' if len(runs) > 1 else ''}) |")
        elif kind == "cold" and not can_drop:
            print(f"| restart read {mb} MiB, page cache cold | not measured: the page cache was not "
                  f"dropped (not root, or BENCH_COLD=0) | | |")
for mb in store_sizes:
    gb = mb * 1024 * 1024 / 1e9
    def times(name):
        return [float(x) for x in re.findall(r"(?:wrote .*?: |copied, )([\d.]+) s", text(name))]
    direct, dd, old = times(f"sw{mb}.txt"), times(f"sdd{mb}.txt"), times(f"so{mb}.txt")
    direct, dd = direct[2:] or direct, dd[2:] or dd
    if not (direct and dd and old):
        continue
    a, b, o = med(direct), med(dd), med(old)
    print(f"| write {mb} MiB: PCM_Store + PCM_Commit, the ranks write (fsync included) vs dd "
          f"conv=fsync | {a:.3f} s ({gb / a:.2f} GB/s; {min(direct):.3f}-{max(direct):.3f}, "
          f"{len(direct)} versions) | {b:.3f} s ({gb / b:.2f} GB/s) | {b / a:.2f} |")
    print(f"| write {mb} MiB: PCM_Store + PCM_Commit through pcmd (PCM_CHECKPOINT_DIRECT=0) vs dd "
          f"conv=fsync | {o:.3f} s ({gb / o:.2f} GB/s; {len(old)} versions) | {b:.3f} s | "
          f"{b / o:.2f} (direct is {o / a:.1f}x faster) |")
    r1 = re.search(r"read .*?: ([\d.]+) s", text(f"sr{mb}.txt"))
    r2 = re.search(r"read .*?: ([\d.]+) s", text(f"sro{mb}.txt"))
    if r1 and r2:
        a, b = float(r1.group(1)), float(r2.group(1))
        print(f"| restart read {mb} MiB: PCM_Load of that version, the ranks read the shards "
              f"(chunks verified) vs through pcmd | {a:.3f} s ({gb / a:.2f} GB/s) | {b:.3f} s | "
              f"{b / a:.2f} |")
ow, orr = text("ow.txt"), text("or.txt")
m1, m2 = re.search(r"wrote .*?: ([\d.]+) s", ow), re.search(r"read .*?: ([\d.]+) s", orr)
idle = [int(x) / 1000 for x in text("idle-status.txt").split()]
busy = [int(x) / 1000 for x in text("busy-status.txt").split()]
if idle and busy:
    print(f"\n`pcmctl status` (a new process each time): idle median {med(idle):.1f} ms; while a "
          f"job stores and commits {sizes[0]} MiB through pcmd: median {med(busy):.1f} ms, max "
          f"{max(busy):.1f} ms ({len(busy)} answers)")
if m1 and m2:
    print(f"\nthe paper's path through pcmd at {sizes[0]} MiB (PCM_Store + PCM_Commit, PCM_Load): "
          f"write {float(m1.group(1)):.3f} s, read {float(m2.group(1)):.3f} s")
PY
