#!/usr/bin/env bash
# The MPI side of PCM against the process count P and the bytes (issue 39, item 4), every figure in
# one run: the per-iteration agreement (PCM_Status, PCM_Adapt, beside a bare 16-byte MPI_Bcast),
# a split P -> 2P, a merge 2P -> P and a migration of one rank (bench/resize_cost.c, adapt mode:
# `pcmctl resize` / `pcmctl migrate`, from entering the PCM_Adapt call that carries the command
# out to every rank of the new world holding its data, every element then checked), a checkpoint
# written at once (PCM_CHECKPOINT_ASYNC=0) and its restart read at the same P (PCM_RESTART=1:
# PCM_Resume, every chunk verified and every element checked), and what the loop waits for a
# background checkpoint (bench/ckpt_cost.c wait: PCM_Checkpoint's median over 3 versions). Then each operation is fitted to
# t = a + b*log2(P) + c*bytes/P (and with d*P + e*bytes, the terms this 2-core machine adds),
# least squares, with the residuals (bench/mpi_scale_fit.py).
# Oversubscription: P is far above the cores, and MPICH's waits spin. Every MPI process of this run
# has bench/yield_poll.c preloaded (BENCH_YIELD=0: not): a zero-timeout poll() that finds nothing,
# which ch3:nemesis makes every few turns of its spinning wait, yields the core to a runnable rank.
# The agreement is also timed without it (spinning, "_spin") at BENCH_SPIN_PROCS ("4 16"), to show the
# difference.
# Usage: bash bench/run.sh mpi_scale [--quick] (or BENCH_QUICK=1: P = 2 and 4, 1 MiB; ctest's
# bench.mpi_scale.quick). Environment: BENCH_PROCS ("1 2 4 8 16 32"; a split
# goes to 2P), BENCH_SIZES (MiB at every P: "1 16 256"), BENCH_BIG (MiB: 1024) at BENCH_BIG_PROCS
# ("2 8 32"), BENCH_REPS (resizes per point: 1), BENCH_UNTIL (a time after which the points left
# are skipped, e.g. 09:30), BENCH_CALLS (agreement calls per timing: 2000),
# BENCH_CSV=FILE (op,procs,to_procs,size_mib,rep,seconds), BENCH_PNG=FILE (the plot),
# BENCH_FIT=FILE (the fitted constants as JSON).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ "${1:-}" = --quick ] || [ "${BENCH_QUICK:-0}" = 1 ]; then
  : "${BENCH_PROCS:=2 4}" "${BENCH_SIZES:=1}" "${BENCH_BIG_PROCS:=}" "${BENCH_CALLS:=500}"
  : "${BENCH_SPIN_PROCS:=4}"
fi
procs=${BENCH_PROCS:-1 2 4 8 16 32} sizes=${BENCH_SIZES:-1 16 256} big=${BENCH_BIG:-1024}
big_procs=${BENCH_BIG_PROCS-2 8 32} reps=${BENCH_REPS:-1} calls=${BENCH_CALLS:-2000}
spin_procs=${BENCH_SPIN_PROCS-4 16}
preload=
[ "${BENCH_YIELD:-1}" = 1 ] && preload=$(cd "$B/bench" && pwd)/libpcm_yield_poll.so
[ -z "$preload" ] || [ -f "$preload" ] || { echo "mpi_scale: no $preload (build pcm_yield_poll)" >&2; exit 1; }
ctl=$B/pcmctl
limit=900 # seconds any one step may take
csv=$tmp/mpi_scale.csv
echo "op,procs,to_procs,size_mib,rep,seconds" >"$csv"
bench_trap_failures mpi_scale
# keep: the rows so far at BENCH_CSV too, so that a run stopped early leaves what it measured.
keep() { if [ -n "${BENCH_CSV:-}" ]; then cp "$csv" "$BENCH_CSV"; fi; }

ulimit -n "$(ulimit -Hn)" # pcmd holds two connections per process (128 at P = 64)
echo "machine: $(nproc) cores; MPI processes preload: ${preload:-nothing (waits spin)}"
echo "load before: $(uptime)"
maxp=0
for p in $procs; do [ $((2 * p)) -gt $maxp ] && maxp=$((2 * p)); done
bench_start_pcmd --hosts "localhost:$((maxp + 8))" --keep 1

# agreement P [spin]: status_cost's per-call times (µs) as rows agree_* (seconds per call), with
# PCM's default window (PCM_Status agrees once about every ms; the calls between only count) and
# with PCM_STATUS_WINDOW_US=0 (_w0: one agreement, a broadcast, at every call); fewer calls as P
# grows (at least 200). With "spin", without the yielding poll (rows _spin).
agreement() {
  local p=$1 suffix= pre=$preload n w
  if [ "${2:-}" = spin ]; then suffix=_spin pre=; fi
  n=$((calls * 4 / p))
  [ $n -ge 200 ] || n=200
  for w in 1000 0; do
    log=$tmp/status-$p$suffix-$w.out
    LD_PRELOAD=$pre PCM_STATUS_WINDOW_US=$w PCM_JOB=agree-$p$suffix-$w \
      timeout "$limit" mpiexec -n "$p" "$B/bench/status_cost" "$n" 3 >"$log" 2>&1 </dev/null
    awk -v p="$p" -v s="$([ $w = 0 ] && echo _w0)$suffix" '$1 == "status_cost:" {
        name = $6; if (name == "MPI_Bcast") name = "bcast"; else if (name == "PCM_Status") name = "status"
        else if (name == "PCM_Adapt") name = "adapt"; else next
        printf "agree_%s%s,%d,%d,0,%d,%.9f\n", name, s, p, p, $3 + 1, $(NF - 1) * 1e-6 }' \
      "$log" >>"$csv"
  done
  progress "P=$p agreement${suffix:+ (spinning)}: PCM_Status $(awk '$6 == "PCM_Status" {
      printf "%s ", $(NF - 1) }' "$tmp/status-$p$suffix-1000.out" "$log") us"
}

# moves FILE: "PROCS SECONDS" per move of resize_cost's output, start line to ready line (read in
# two passes: the two come from different processes, and a migration's ready line, printed by the
# replacement when it is the new rank 0, can come first); fails unless every move checked all its
# elements.
moves() {
  awk 'NR == FNR { if ($1 == "resize_cost:" && $2 == "start") t[$5] = $3; next }
       $1 == "resize_cost:" && $2 == "ready" {
         n++
         if ($9 != 0 || !($5 in t)) bad = 1
         else printf "%d %.6f\n", $7, $3 - t[$5] }
       END { exit bad || n == 0 }' "$1" "$1"
}

# resizes P MB: one job at P: split to 2P, merge to P, migrate its last rank; BENCH_REPS times.
resizes() {
  local p=$1 mb=$2 job=scale-$1-$2 dir=$tmp/rs-$1-$2 n=0 r
  mkdir -p "$dir"
  log=$dir/out
  LD_PRELOAD=$preload PCM_JOB=$job timeout "$limit" mpiexec -n "$p" "$B/bench/resize_cost" "$mb" \
    adapt "$dir" \
    >"$log" 2>&1 </dev/null &
  bench_mpi=$!
  for r in $(seq "$reps"); do
    "$ctl" wait "$job" --iteration $(((n + 1) * 5)) --timeout "$limit" >/dev/null
    "$ctl" resize "$job" --to $((2 * p)) >/dev/null
    "$ctl" wait "$job" --reconfigurations $((n + 1)) --timeout "$limit" >/dev/null
    "$ctl" wait "$job" --iteration $(((n + 2) * 5)) --timeout "$limit" >/dev/null
    "$ctl" resize "$job" --to "$p" >/dev/null
    "$ctl" wait "$job" --reconfigurations $((n + 2)) --timeout "$limit" >/dev/null
    "$ctl" wait "$job" --iteration $(((n + 3) * 5)) --timeout "$limit" >/dev/null
    "$ctl" migrate "$job" $((p - 1)) >/dev/null
    "$ctl" wait "$job" --reconfigurations $((n + 3)) --timeout "$limit" >/dev/null
    n=$((n + 3))
  done
  touch "$dir/stop"
  wait "$bench_mpi"
  bench_mpi=
  # The moves come in threes: split, merge, migration.
  moves "$log" | awk -v p="$p" -v mb="$mb" '{
      k = (NR - 1) % 3; r = int((NR - 1) / 3) + 1
      op = k == 0 ? "split" : k == 1 ? "merge" : "migrate"
      from = k == 1 ? 2 * p : p
      printf "%s,%d,%d,%d,%d,%.6f\n", op, from, $1, mb, r, $2 }' >"$dir/rows"
  [ "$(grep -c . "$dir/rows")" -eq $((3 * reps)) ] || {
    echo "mpi_scale: P=$p $mb MiB: expected $((3 * reps)) checked moves" >&2
    return 1
  }
  cat "$dir/rows" >>"$csv"
  progress "P=$p $mb MiB: $(tr '\n' ' ' <"$dir/rows")"
  rm -rf "$dir" "$tmp/data/jobs/$job" "$tmp/data/checkpoints/$job"
}

# checkpoints P MB: a version written at once (the call returns once it is committed) and read back
# by a restart at the same P; then the background checkpoint's wait, with twice that write's time
# (at least 0.5 s) of computing between versions, so that a version is never held up by the one
# before (that would be the write, not the wait).
checkpoints() {
  local p=$1 mb=$2 job=ck-$1-$2 wrote gap
  log=$tmp/write-$p-$mb.out
  LD_PRELOAD=$preload PCM_CHECKPOINT_ASYNC=0 PCM_JOB=$job timeout "$limit" mpiexec -n "$p" \
    "$B/bench/ckpt_cost" "$mb" shards 1 >"$log" 2>&1 </dev/null
  wrote=$(awk '/ckpt_cost: wrote/ { print $9 }' "$log")
  echo "ckpt_write,$p,$p,$mb,1,$wrote" >>"$csv"
  log=$tmp/read-$p-$mb.out
  LD_PRELOAD=$preload PCM_RESTART=1 PCM_JOB=$job timeout "$limit" mpiexec -n "$p" \
    "$B/bench/ckpt_cost" "$mb" shards >"$log" 2>&1 </dev/null
  awk -v p="$p" -v mb="$mb" '/ckpt_cost: read/ {
      printf "restart_read,%d,%d,%d,1,%s\n", p, p, mb, $9 }' "$log" >>"$csv"
  gap=$(awk -v w="$wrote" 'BEGIN { g = 2 * w; printf "%.2f", (g > 0.5 ? g : 0.5) }')
  log=$tmp/wait-$p-$mb.out
  LD_PRELOAD=$preload PCM_JOB=wait-$p-$mb timeout "$limit" mpiexec -n "$p" "$B/bench/ckpt_cost" \
    "$mb" wait 3 "$gap" >"$log" 2>&1 </dev/null
  awk -v p="$p" -v mb="$mb" '/ckpt_cost: waits/ {
      for (i = 1; i <= NF; i++) if ($i == "median") m = $(i + 1)
      printf "ckpt_wait,%d,%d,%d,1,%.6f\n", p, p, mb, m }' "$log" >>"$csv"
  progress "P=$p $mb MiB: checkpoint written $wrote s, read $(awk '/ckpt_cost: read/ {
      print $9 }' "$tmp/read-$p-$mb.out") s, wait $(grep -o 'median [0-9.]*' "$log") s (gap $gap s)"
  [ "$(grep -c "^\(ckpt_wait\|ckpt_write\|restart_read\),$p,$p,$mb,[0-9]*,[0-9.]" "$csv")" -eq 3 ] || {
    echo "mpi_scale: P=$p $mb MiB: a checkpoint step printed no figure" >&2
    return 1
  }
  rm -rf "$tmp/data/jobs/$job" "$tmp/data/checkpoints/$job" "$tmp/data/jobs/wait-$p-$mb" \
    "$tmp/data/checkpoints/wait-$p-$mb"
}

# in_time WHAT: whether there is time left before BENCH_UNTIL (a date, e.g. 09:30 UTC); after it
# the remaining points are left out, and said so.
until_s=$([ -n "${BENCH_UNTIL:-}" ] && date -d "$BENCH_UNTIL" +%s || echo 0)
in_time() {
  [ "$until_s" = 0 ] || [ "$(date +%s)" -lt "$until_s" ] && return 0
  echo "mpi_scale: left out (BENCH_UNTIL=$BENCH_UNTIL has passed): $1"
  return 1
}
for p in $spin_procs; do in_time "agreement P=$p, spinning" && agreement "$p" spin; done
for p in $procs; do
  progress "P=$p: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  in_time "P=$p" || continue
  agreement "$p"
  for mb in $sizes; do
    in_time "P=$p $mb MiB" || continue
    resizes "$p" "$mb"
    checkpoints "$p" "$mb"
    keep
  done
  for q in $big_procs; do
    if [ "$q" = "$p" ] && in_time "P=$p $big MiB"; then
      resizes "$p" "$big"
      checkpoints "$p" "$big"
      keep
    fi
  done
done
log=
echo "load after: $(uptime)"
# The fit needs numpy: the system's Python has it (scripts/setup.sh installs python3-numpy).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" "$ROOT/bench/mpi_scale_fit.py" "$csv" "$tmp/plot.csv" ${BENCH_FIT:+--json "$BENCH_FIT"}
bench_keep_csv "$csv"
bench_plot mpi_scale "$tmp/plot.csv"
