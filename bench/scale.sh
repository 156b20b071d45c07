#!/usr/bin/env bash
# pcmd against the number of ranks: the rank emulator (bench/scale_emu.cpp) plays N ranks of a job
# (hellos and watch connections, rank 0's polls, a checkpoint's shard records and commit, a merge
# delivered and reported, a lost rank, the restart's registration) against a fresh pcmd for each N,
# with another job's requests timed meanwhile; every N in one run.
# Prints the table with each figure's log-log slope against N; BENCH_CSV=FILE keeps the rows,
# BENCH_PNG=FILE draws them (bench/plots/scale.gp).
# Environment: BENCH_SCALE_N ("64 128 256 512 1024 2048 4096 8192 16384"), BENCH_REPS (1),
# BENCH_SCALE_PER_HOST (32 ranks per host), BENCH_SCALE_CONNS (256 request connections),
# BENCH_SCALE_CHECK=1: fail unless every commit is recorded within 1 s of the last shard record,
# nothing is refused and no request fails (ctest's scale.quick).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ns=${BENCH_SCALE_N:-64 128 256 512 1024 2048 4096 8192 16384}
reps=${BENCH_REPS:-1}
# pcmd and the emulator each hold one descriptor per rank: the soft limit goes to the hard one.
ulimit -n "$(ulimit -Hn)"
echo "file descriptors: $(ulimit -n) (hard limit $(ulimit -Hn))"
"$B/bench/scale_emu" --header >"$tmp/all.csv"
for n in $ns; do
  for r in $(seq "$reps"); do
    if [ -f "$tmp/pcmd.pid" ]; then  # the previous N's pcmd, ended by its PID
      pid=$(cat "$tmp/pcmd.pid")
      bench_kill "$pid"
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
      rm -f "$tmp/pcmd.pid"
    fi
    rm -rf "$tmp/data"
    bench_start_pcmd --probe-port 0
    echo "N=$n, run $r of $reps ..." >&2
    if ! "$B/bench/scale_emu" "$n" "${BENCH_SCALE_PER_HOST:-32}" "${BENCH_SCALE_CONNS:-256}" \
      >>"$tmp/all.csv" 2>"$tmp/emu.err"; then
      rc=$?
      cat "$tmp/emu.err" >&2
      echo "--- pcmd's log:" >&2
      tail -n 20 "$tmp/pcmd.log" >&2
      # 3: the machine's file-descriptor limit stops the emulator; the larger N are left out.
      if [ "$rc" -eq 3 ]; then break 2; fi
      exit 1
    fi
    cat "$tmp/emu.err" >&2
    grep -E "refused|out of file" "$tmp/pcmd.log" | head -n 3 >&2 || true
  done
done
bench_table scale "$tmp/all.csv" "$tmp/plot.csv" "${BENCH_SCALE_CHECK:-0}"
bench_keep_csv "$tmp/all.csv"
bench_plot scale "$tmp/plot.csv"
