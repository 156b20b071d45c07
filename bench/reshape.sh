#!/usr/bin/env bash
# Benchmark of split and merge, side by side in one run (set up like the README commands):
#  1. split 1 -> 2 and merge 2 -> 1 of BENCH_MB MiB of doubles (block layout), broken into spawn,
#     data movement and rebuild, with the redistribution throughput against a plain memcpy of the
#     same bytes measured in the same run, between touched buffers and into new memory (what a
#     receiver pays: on some VMs the first touch of a page costs far more than the copy);
#     BENCH_REPS repetitions of each;
#  2. heat2d right after a split 1 -> 2 against heat2d launched on 2 processes (ms/iteration).
# Environment: BENCH_MB (64), BENCH_REPS (3).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mb=${BENCH_MB:-64} reps=${BENCH_REPS:-3}
bench_start_pcmd --hosts localhost:16

# MB MiB of doubles as units of 1024 doubles (8 KiB).
unit_len=1024
units=$((mb * 1024 * 1024 / 8 / unit_len))
bytes=$((units * unit_len * 8))
echo "== 1. split 1 -> 2 and merge 2 -> 1 of $mb MiB ($bytes bytes), $reps times each"
"$B/bench/memcpy_rate" "$bytes" 5 | tee "$tmp/memcpy.txt"
job=bench-reshape
PCM_JOB=$job mpiexec -n 1 "$B/tests/mpi_reshape" "$units" "$unit_len" block 1000000 2000 \
  >"$tmp/reshape.out" 2>&1 &
mpi=$!
bench_mpi=$mpi
n=0
for r in $(seq "$reps"); do
  for cmd in "resize $job --to 2" "resize $job --to 1"; do
    "$B/pcmctl" wait "$job" --iteration $(( (n + 1) * 20 )) --timeout 300 >/dev/null
    # shellcheck disable=SC2086
    "$B/pcmctl" $cmd >/dev/null
    n=$((n + 1))
    "$B/pcmctl" wait "$job" --reconfigurations "$n" --timeout 300 >/dev/null
  done
done
# pcmd hears of a reconfiguration just before the job prints its line: wait for the last line
# (the job's iteration numbers run ahead of any fixed target, so waiting on them would not do).
for _ in $(seq 100); do
  [ "$(grep -cE '^reshape: (split|merge)' "$tmp/reshape.out")" -ge "$n" ] && break
  sleep 0.1
done
bench_kill "$mpi"; wait "$mpi" 2>/dev/null || true; mpi= bench_mpi=
grep -E '^reshape: (split|merge)' "$tmp/reshape.out"
bench_table reshape "$tmp/reshape.out" "$tmp/memcpy.txt" "$bytes"

echo "== 2. heat2d after a split 1 -> 2 against heat2d launched on 2 processes (768x768), $reps pairs"
h=(--nx 768 --ny 768 --report 500 --iters 6000)
# Mean ms/iteration over the progress lines of iterations 3000-6000 (after any split).
late() { awk '/^heat2d: iter/ && $3+0 > 3000 {t += $(NF-1); n++} END {printf "%.4f", t / n}' "$1"; }
ratios=()
for r in $(seq "$reps"); do
  mpiexec -n 2 "$B/examples/heat2d/heat2d_pcm" "${h[@]}" >"$tmp/fresh.out" 2>&1
  job=bench-after-split-$r
  PCM_JOB=$job mpiexec -n 1 "$B/examples/heat2d/heat2d_pcm" "${h[@]}" >"$tmp/split.out" 2>&1 &
  mpi=$!
  bench_mpi=$mpi
  "$B/pcmctl" wait "$job" --iteration 300 --timeout 300 >/dev/null
  "$B/pcmctl" split "$job" 0 --into 2 >/dev/null
  wait "$mpi" || true
  mpi= bench_mpi=
  grep -q '^heat2d: split' "$tmp/split.out" || { echo "the split did not happen"; exit 1; }
  fresh=$(late "$tmp/fresh.out") after=$(late "$tmp/split.out")
  ratio=$(bench_py ratio --digits 3 "$after" "$fresh")
  ratios+=("$ratio")
  echo "pair $r: launched on 2: $fresh ms/iter; after split 1->2: $after ms/iter; ratio $ratio"
done
echo "after split / launched at that size: median ratio $(bench_median --digits 3 "${ratios[@]}")"
