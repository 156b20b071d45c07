#!/usr/bin/env bash
# bench/openmpi_spawn.sh [MPI...] — Open MPI 4.1's intermittent spawn hang without PCM, on each
# Open MPI given side by side: testbed/spawn_loop.c (BENCH_SPAWNS spawns one after another from 2
# processes, each merged with, freed and disconnected, as PCM's splits make them) run BENCH_RUNS
# times per MPI, the MPIs taking turns run by run, beside BENCH_LOOPS busy loops (the hang shows
# under load). MPI: "debian" (Debian's /usr/bin/mpirun.openmpi; the default) or an installation
# prefix (e.g. the one `bash bench/openmpi_build.sh` makes with Open MPI's internal PMIx).
# Prints, per MPI: Open MPI's version, its PMIx (the component and, external, the library's
# package), the runs in which a spawn hung (not done within BENCH_BOUND_S), the spawns made, and
# the call the hung ones were stuck in.
# Environment: BENCH_RUNS (10), BENCH_SPAWNS (20), BENCH_LOOPS (2), BENCH_BOUND_S (30).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${BENCH_RUNS:-10} spawns=${BENCH_SPAWNS:-20} loops=${BENCH_LOOPS:-2} bound=${BENCH_BOUND_S:-30}
[ $# -gt 0 ] || set -- debian
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pcm-ompi-spawn.XXXXXX")
busy=()
cleanup() {
  local p
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${busy[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

names=() runners=()
i=0
for mpi in "$@"; do
  i=$((i + 1))
  if [ "$mpi" = debian ]; then
    mpicc=/usr/bin/mpicc.openmpi mpirun=/usr/bin/mpirun.openmpi info=/usr/bin/ompi_info
  else
    mpicc=$mpi/bin/mpicc mpirun=$mpi/bin/mpirun info=$mpi/bin/ompi_info
  fi
  for t in "$mpicc" "$mpirun" "$info"; do
    [ -x "$t" ] || { echo "openmpi_spawn: $t is missing (MPI '$mpi')" >&2; exit 1; }
  done
  "$mpicc" -O1 -o "$tmp/loop$i" "$ROOT/testbed/spawn_loop.c"
  version=$("$info" --parsable | sed -n 's/^ompi:version:full://p')
  component=$("$info" --parsable | sed -n 's/^mca:pmix:\([a-z0-9]*\):version:.*/\1/p' | sort -u |
    grep -v -E '^(isolated|flux|s1|s2)$' | head -n 1)
  lib=
  if [ "$component" = ext3x ] || [ "$component" = ext4x ]; then
    libdir=$("$mpicc" --showme:libdirs | awk '{print $1}')
    plugin=$(find "$libdir" -maxdepth 2 -name "mca_pmix_$component.so" | head -n 1)
    so=$(ldd "${plugin:-/dev/null}" 2>/dev/null | awk '/libpmix/ {print $3; exit}')
    [ -n "$so" ] && lib=$(dpkg -S "$(readlink -f "$so")" 2>/dev/null | cut -d: -f1 | head -n 1)
    [ -n "$lib" ] && lib="$lib $(dpkg-query -W -f '${Version}' "$lib" 2>/dev/null)"
  fi
  [ "$component" = pmix3x ] && lib="Open MPI's internal PMIx"
  names+=("$mpi: Open MPI $version, PMIx ${component:-?}${lib:+ ($lib)}")
  runners+=("$mpirun")
  echo "openmpi_spawn: ${names[-1]}"
done

for ((k = 0; k < loops; k++)); do
  bash -c 'while :; do :; done' &
  busy+=($!)
done
declare -A hung made stuck
for ((r = 1; r <= runs; r++)); do
  for ((j = 1; j <= ${#runners[@]}; j++)); do
    log=$tmp/run$j.$r
    rc=0
    timeout -k 5 $((bound * spawns + 60)) "${runners[j - 1]}" --oversubscribe -n 2 "$tmp/loop$j" \
      "$spawns" "$bound" >"$log" 2>&1 </dev/null || rc=$?
    if [ "$rc" = 0 ] && grep -q "spawns made" "$log"; then
      made[$j]=$((${made[$j]:-0} + spawns))
      what="all $spawns spawns made"
    elif line=$(grep -m1 -E "spawn [0-9]+ of [0-9]+ not done" "$log"); then
      k=$(sed -E 's/.*spawn ([0-9]+) of.*/\1/' <<<"$line")
      call=$(sed -E 's/.*\(stuck in ([A-Za-z_]+)\).*/\1/' <<<"$line")
      hung[$j]=$((${hung[$j]:-0} + 1))
      made[$j]=$((${made[$j]:-0} + k - 1))
      stuck[$j]="${stuck[$j]:-}${stuck[$j]:+, }$call"
      what="spawn $k hung ($call)"
    else
      what="failed otherwise (exit $rc): $(tail -n 2 "$log" | tr '\n' ' ')"
      stuck[$j]="${stuck[$j]:-}${stuck[$j]:+, }exit $rc"
    fi
    echo "openmpi_spawn: run $r of $runs, MPI $j: $what"
  done
done

echo
echo "| MPI | runs with a hung spawn | spawns made | spawns per hang | stuck in |"
echo "| --- | --- | --- | --- | --- |"
for ((j = 1; j <= ${#runners[@]}; j++)); do
  h=${hung[$j]:-0} m=${made[$j]:-0}
  per=-
  [ "$h" -eq 0 ] || per=$(awk -v m="$m" -v h="$h" 'BEGIN { printf "%.1f", (m + h) / h }')
  calls=$(tr ',' '\n' <<<"${stuck[$j]:-}" | sed 's/^ *//' | grep -v '^$' | sort | uniq -c |
    awk '{printf "%s%s x%d", (NR > 1 ? ", " : ""), $2, $1}' || true)
  echo "| ${names[j - 1]} | $h of $runs | $m of $((runs * spawns)) | $per | ${calls:--} |"
done
