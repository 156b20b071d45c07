#!/usr/bin/env bash
# The README's demo command: heat2d under pcmd, reconfigured live through pcmctl — it migrates,
# grows and shrinks (2 -> 4 -> 3 -> 1 -> 2 processes) — then a bitwise check against the plain MPI
# run. Options (environment): DEMO_LAYOUT (block, cyclic, block-cyclic), DEMO_NX/DEMO_NY (768),
# DEMO_ITERS (4000), DEMO_DIR (where pcmd's files and the run's output go; build/demo).
# Leaves in DEMO_DIR the PCM run's trace (trace.csv), the pcmctl commands with their times
# (events.csv), the final grids of both runs (grid.bin, grid-plain.bin; heat2d --dump) and two
# plots: timeline.png (bench/plots/timeline.gp) and heatmap.png (bench/plots/heatmap.gp).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh"
# shellcheck source=/dev/null
source "$ROOT/scripts/.env"
B=$PCM_BUILD_DIR
np=2
iters=${DEMO_ITERS:-4000}
nx=${DEMO_NX:-768} ny=${DEMO_NY:-768}
args=(--nx "$nx" --ny "$ny" --iters "$iters" --report $((iters / 40)))
layout=(--layout "${DEMO_LAYOUT:-block}")
dir=${DEMO_DIR:-$B/demo}
mkdir -p "$dir"
rm -f "$dir"/pcmd.pid "$dir"/trace.csv "$dir"/grid.bin "$dir"/grid-plain.bin
echo "time_s,label" >"$dir/events.csv"
export PCM_CONFIG=$dir/pcmd.conf
job=heat2d-demo-$$
mpi_pid=

stop() {
  if [ -n "$mpi_pid" ]; then kill "$mpi_pid" 2>/dev/null || true; fi
  if [ -f "$dir/pcmd.pid" ]; then
    kill "$(cat "$dir/pcmd.pid")" 2>/dev/null || true
  fi
}
trap stop EXIT
trap 'echo "demo: interrupted" >&2; exit 130' INT TERM

say() { printf '\n== %s\n' "$*"; }

say "plain MPI heat2d on $np processes (${args[*]})"
plain=$(mpiexec -n "$np" "$B/examples/heat2d/heat2d_plain" "${args[@]}" --dump "$dir/grid-plain.bin" |
        tee /dev/stderr |
        awk '/^checksum/ {print $2}')

say "starting pcmd (log: $dir/pcmd.log)"
"$B/pcmd" --detach --pidfile "$dir/pcmd.pid" --data-dir "$dir/data" --config "$PCM_CONFIG" \
  --hosts localhost:8 2>"$dir/pcmd.log"
"$B/pcmctl" ping

say "heat2d with PCM on $np processes (${layout[*]}), job $job; reconfigured through pcmctl as it runs"
PCM_JOB=$job mpiexec -n "$np" "$B/examples/heat2d/heat2d_pcm" "${args[@]}" "${layout[@]}" \
  --trace "$dir/trace.csv" --dump "$dir/grid.bin" > >(tee "$dir/heat2d.out") 2>&1 </dev/null &
mpi_pid=$!
n=0
step=$((iters / 7))
for cmd in "migrate $job 1" "split $job 0 --into 3" "merge $job 1 2" "resize $job --to 1" \
           "resize $job --to 2" "migrate $job 0"; do
  "$B/pcmctl" wait "$job" --iteration $(((n + 1) * step)) --timeout 300
  printf 'demo: pcmctl %s: ' "$cmd"
  echo "$(date +%s.%6N),pcmctl ${cmd/ $job/}" >>"$dir/events.csv"
  # shellcheck disable=SC2086
  "$B/pcmctl" $cmd
  n=$((n + 1))
  "$B/pcmctl" wait "$job" --reconfigurations "$n" --timeout 300
done
"$B/pcmctl" status "$job"
wait "$mpi_pid"
mpi_pid=

say "result"
got=$(awk '/^checksum/ {print $2}' "$dir/heat2d.out")
grep -E '^heat2d: (migration|split|merge|retired)' "$dir/heat2d.out" || true
if [ -n "$got" ] && [ "$got" = "$plain" ]; then
  echo "verification: bitwise match with the plain run (checksum $got, $n reconfigurations)"
else
  echo "verification: MISMATCH: PCM run $got, plain run $plain" >&2
  exit 1
fi
cmp "$dir/grid.bin" "$dir/grid-plain.bin" ||
  { echo "verification: the final grids (--dump) differ" >&2; exit 1; }
echo "verification: the final grids (--dump) are byte-identical"
gnuplot -c "$ROOT/bench/plots/timeline.gp" "$dir/trace.csv" "$dir/events.csv" \
  "$dir/timeline.png" "heat2d ${nx}x$ny with PCM, reconfigured live through pcmctl"
gnuplot -c "$ROOT/bench/plots/heatmap.gp" "$dir/grid.bin" "$nx" "$ny" "$dir/heatmap.png"
echo "demo: plots: $dir/timeline.png $dir/heatmap.png"
