#!/usr/bin/env bash
# What the application waits for per checkpoint, side by side in one run (set up like the README
# commands), at each size of BENCH_SIZES MiB (256 1024) on BENCH_NP (2) processes:
#  - PCM_Checkpoint written at once (PCM_CHECKPOINT_ASYNC=0: the call returns once the version is
#    committed) against in the background (the default: the call returns once the data is
#    staged), BENCH_VERSIONS (5) versions each with BENCH_GAP (3) s of computing between them
#    (passes over the array), median of the calls' times; then `dd conv=fsync` of the same bytes;
#  - heat2d_pcm (BENCH_HEAT: --nx 4096 --ny 4096 --iters 300, a 128 MiB grid) without
#    checkpoints, with one every BENCH_EVERY (50) iterations written at once, and in the
#    background: whole-run times, BENCH_REPEAT (3) runs each, interleaved.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sizes=${BENCH_SIZES:-256 1024} np=${BENCH_NP:-2} versions=${BENCH_VERSIONS:-5} gap=${BENCH_GAP:-3}
every=${BENCH_EVERY:-50} repeat=${BENCH_REPEAT:-3}
read -r -a heat <<<"${BENCH_HEAT:---nx 4096 --ny 4096 --iters 300}"
bench_start_pcmd --keep 2
echo "== checkpoint waits on $np processes, $versions versions per size, ${gap} s apart"
for mb in $sizes; do
  for mode in 0 1; do
    PCM_CHECKPOINT_ASYNC=$mode PCM_JOB=bench-wait-$mb-$mode mpiexec -n "$np" \
      "$B/bench/ckpt_cost" "$mb" wait "$versions" "$gap" | tee -a "$tmp/w$mb.txt"
  done
  for _ in 1 2 3; do
    dd if=/dev/zero of="$tmp/dd" bs=1M count="$mb" conv=fsync 2>&1 | tail -1 | tee -a "$tmp/dd$mb.txt"
  done
  rm -f "$tmp/dd"
done
echo "== heat2d ${heat[*]} on $np processes: none, a version every $every iterations at once, in the background"
for r in $(seq "$repeat"); do
  for mode in none sync async; do
    extra=() env=(PCM_JOB=bench-heat-$mode-$r)
    [ "$mode" != none ] && extra=(--commit-every "$every")
    [ "$mode" = sync ] && env+=(PCM_CHECKPOINT_ASYNC=0)
    t0=$(date +%s%N)
    env "${env[@]}" mpiexec -n "$np" "$B/examples/heat2d/heat2d_pcm" "${heat[@]}" "${extra[@]}" \
      >"$tmp/heat-$mode-$r.out"
    echo "$mode $((($(date +%s%N) - t0) / 1000000))" | tee -a "$tmp/heat.txt"
  done
done
python3 - "$tmp" "$sizes" <<'PY'
import os, re, statistics, sys
d, sizes = sys.argv[1], [int(x) for x in sys.argv[2].split()]
med = statistics.median
def text(name):
    p = os.path.join(d, name)
    return open(p).read() if os.path.exists(p) else ""
print("\n| size | PCM_Checkpoint at once (median wait) | in the background (median wait; last "
      "PCM_Checkpoint_wait) | background/at once (<= 0.1 is the target) | dd conv=fsync |")
print("| --- | --- | --- | --- | --- |")
for mb in sizes:
    t = text(f"w{mb}.txt")
    s = re.search(r"\(sync\):.*median ([\d.]+) s", t)
    a = re.search(r"\(async\):.*median ([\d.]+) s; last wait ([\d.]+) s", t)
    dd = [float(x) for x in re.findall(r"copied, ([\d.]+) s", text(f"dd{mb}.txt"))]
    if s and a and dd:
        sy, asy, last = float(s[1]), float(a[1]), float(a[2])
        print(f"| {mb} MiB | {sy:.3f} s | {asy:.4f} s; {last:.3f} s | {asy / sy:.3f} | "
              f"{med(dd):.3f} s |")
runs = {}
for line in text("heat.txt").split("\n"):
    if line.strip():
        mode, ms = line.split()
        runs.setdefault(mode, []).append(int(ms) / 1000)
if runs.get("none"):
    base = med(runs["none"])
    print("\n| heat2d whole run | seconds (median) | against no checkpoints |")
    print("| --- | --- | --- |")
    for mode, label in (("none", "no checkpoints"), ("sync", "a version every k iterations, at once"),
                        ("async", "a version every k iterations, in the background")):
        if runs.get(mode):
            m = med(runs[mode])
            print(f"| {label} | {m:.2f} ({', '.join(f'{x:.2f}' for x in runs[mode])}) | "
                  f"{(m / base - 1) * 100:+.1f} % |")
PY
