#!/usr/bin/env bash
# Benchmark of checkpoints, side by side in one run on one filesystem (set up like the README
# commands): writing BENCH_MB MiB as a PCM checkpoint (PCM_Store + PCM_Commit, fsyncs included)
# and reading it back in a restarted job (PCM_Load), against dd writing the same bytes with
# conv=fsync and reading them back. BENCH_REPS repetitions; medians. Environment: BENCH_MB (256),
# BENCH_NP (2), BENCH_REPS (3), BENCH_DIR (a directory on the filesystem to measure; default
# $TMPDIR or /tmp).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
mb=${BENCH_MB:-256} np=${BENCH_NP:-2} reps=${BENCH_REPS:-3}
bench_start_pcmd --keep 1
echo "== checkpoint of $mb MiB on $np processes against dd, $reps repetitions ($(df -T "$tmp" | awk 'NR==2 {print $2}') at $tmp)"
for r in $(seq "$reps"); do
  job=bench-ckpt-$r
  PCM_JOB=$job mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" | tee -a "$tmp/w.txt"
  PCM_JOB=$job PCM_RESTART=1 mpiexec -n "$np" "$B/bench/ckpt_cost" "$mb" | tee -a "$tmp/r.txt"
  dd if=/dev/zero of="$tmp/raw" bs=1M count="$mb" conv=fsync 2>&1 | tail -1 | tee -a "$tmp/ddw.txt"
  dd if="$tmp/raw" of=/dev/null bs=1M 2>&1 | tail -1 | tee -a "$tmp/ddr.txt"
  rm -f "$tmp/raw"
done
python3 - "$tmp" "$mb" <<'PY'
import re, statistics, sys, os
d, mb = sys.argv[1], int(sys.argv[2])
def times(name, pat):
    return [float(x) for x in re.findall(pat, open(os.path.join(d, name)).read())]
w = times("w.txt", r"wrote .*?: ([\d.]+) s")
r = times("r.txt", r"read .*?: ([\d.]+) s")
dw = times("ddw.txt", r"copied, ([\d.]+) s")
dr = times("ddr.txt", r"copied, ([\d.]+) s")
gb = mb * 1024 * 1024 / 1e9
med = statistics.median
print(f"write: checkpoint {med(w):.3f} s ({gb / med(w):.2f} GB/s), dd conv=fsync {med(dw):.3f} s "
      f"({gb / med(dw):.2f} GB/s): checkpoint/dd time {med(w) / med(dw):.2f}")
print(f"read:  restart load {med(r):.3f} s ({gb / med(r):.2f} GB/s), dd {med(dr):.3f} s "
      f"({gb / med(dr):.2f} GB/s): load/dd time {med(r) / med(dr):.2f} (page cache warm for both)")
PY
