#!/usr/bin/env bash
# Benchmark after the PCM paper's Figure 8: heat2d instrumented with PCM (no reconfiguration)
# against plain heat2d, over several granularities (mesh sizes), in alternating runs in one go.
# PCM runs twice per repetition: with its default PCM_Status agreement window, and with
# PCM_STATUS_WINDOW_US=0 (a broadcast at every call, as before the windows); and a third time
# with PCM_PROFILE_MS=0, which turns the application's profile off (the MPI wrappers then do one
# test and the PMPI call): pcm/unprofiled is what profiling costs.
# Prints per-size medians and the overhead in percent; with BENCH_CSV=FILE also writes CSV and
# with BENCH_PNG=FILE a plot of overhead against mesh size.
# Environment: BENCH_NP (2), BENCH_REPS (5), BENCH_SIZES ("64 128 256 512 1024"), BENCH_CSV,
# BENCH_MAX_ITERS (400000: the most iterations a run makes; the quick variant takes fewer),
# BENCH_PNG.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
np=${BENCH_NP:-2} reps=${BENCH_REPS:-5} sizes=${BENCH_SIZES:-64 128 256 512 1024}
bench_start_pcmd
echo "size,iterations,rep,plain_ms_per_iter,pcm_ms_per_iter,pcm_w0_ms_per_iter,pcm_noprof_ms_per_iter" >"$tmp/all.csv"
for n in $sizes; do
  iters=$((3200000000 / (n * n)))  # about the same work (1-2 s) per run at every size
  [ "$iters" -gt "${BENCH_MAX_ITERS:-400000}" ] && iters=${BENCH_MAX_ITERS:-400000}
  echo "mesh ${n}x$n, $iters iterations, $reps repetitions ..." >&2
  for r in $(seq "$reps"); do
    h=("$B/examples/heat2d/heat2d_pcm" --nx "$n" --ny "$n" --iters "$iters")
    p=$(mpiexec -n "$np" "$B/examples/heat2d/heat2d_plain" --nx "$n" --ny "$n" --iters "$iters" | bench_heat2d_ms)
    q=$(PCM_JOB=ovh-$n-$r mpiexec -n "$np" "${h[@]}" | bench_heat2d_ms)
    z=$(PCM_STATUS_WINDOW_US=0 PCM_JOB=ovh0-$n-$r mpiexec -n "$np" "${h[@]}" | bench_heat2d_ms)
    u=$(PCM_PROFILE_MS=0 PCM_JOB=ovhu-$n-$r mpiexec -n "$np" "${h[@]}" | bench_heat2d_ms)
    echo "$n,$iters,$r,$p,$q,$z,$u" >>"$tmp/all.csv"
  done
done
bench_table overhead "$tmp/all.csv" "$tmp/plot.csv"
bench_keep_csv "$tmp/all.csv"
bench_plot overhead "$tmp/plot.csv"
