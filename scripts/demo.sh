#!/usr/bin/env bash
# The README's demo command: heat2d under pcmd with live migrations driven through pcmctl, then a
# bitwise check against the plain MPI run. Options (environment): DEMO_NP (2), DEMO_NX/DEMO_NY
# (768), DEMO_ITERS (3000), DEMO_DIR (where pcmd's files and the run's output go; build/demo).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh"
# shellcheck source=/dev/null
source "$ROOT/scripts/.env"
B=$PCM_BUILD_DIR
np=${DEMO_NP:-2}
iters=${DEMO_ITERS:-3000}
args=(--nx "${DEMO_NX:-768}" --ny "${DEMO_NY:-768}" --iters "$iters" --report $((iters / 20)))
dir=${DEMO_DIR:-$B/demo}
mkdir -p "$dir"
rm -f "$dir"/pcmd.pid
export PCM_CONFIG=$dir/pcmd.conf
job=heat2d-demo-$$
mpi_pid=

stop() {
  [ -n "$mpi_pid" ] && kill "$mpi_pid" 2>/dev/null
  if [ -f "$dir/pcmd.pid" ]; then
    kill "$(cat "$dir/pcmd.pid")" 2>/dev/null || true
  fi
}
trap stop EXIT
trap 'echo "demo: interrupted" >&2; exit 130' INT TERM

say() { printf '\n== %s\n' "$*"; }

say "plain MPI heat2d on $np processes (${args[*]})"
plain=$(mpiexec -n "$np" "$B/examples/heat2d/heat2d_plain" "${args[@]}" | tee /dev/stderr |
        awk '/^checksum/ {print $2}')

say "starting pcmd (log: $dir/pcmd.log)"
"$B/pcmd" --detach --pidfile "$dir/pcmd.pid" --data-dir "$dir/data" --config "$PCM_CONFIG" \
  2>"$dir/pcmd.log"
"$B/pcmctl" ping

say "heat2d with PCM on $np processes, job $job; migrations come through pcmctl while it runs"
PCM_JOB=$job mpiexec -n "$np" "$B/examples/heat2d/heat2d_pcm" "${args[@]}" \
  > >(tee "$dir/heat2d.out") 2>&1 </dev/null &
mpi_pid=$!
n=0
for pair in "$((iters / 5)):$((np - 1))" "$((iters / 2)):0"; do
  at=${pair%%:*} rank=${pair##*:}
  "$B/pcmctl" wait "$job" --iteration "$at" --timeout 300
  printf 'demo: pcmctl migrate %s %s: ' "$job" "$rank"
  "$B/pcmctl" migrate "$job" "$rank"
  n=$((n + 1))
  "$B/pcmctl" wait "$job" --reconfigurations "$n" --timeout 300
  "$B/pcmctl" status "$job"
done
wait "$mpi_pid"
mpi_pid=

say "result"
got=$(awk '/^checksum/ {print $2}' "$dir/heat2d.out")
grep -E '^heat2d: (migration|retired)' "$dir/heat2d.out" || true
if [ -n "$got" ] && [ "$got" = "$plain" ]; then
  echo "verification: bitwise match with the plain run (checksum $got, $n migrations)"
else
  echo "verification: MISMATCH: PCM run $got, plain run $plain" >&2
  exit 1
fi
