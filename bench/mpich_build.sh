#!/usr/bin/env bash
# bench/mpich_build.sh — what each MPICH configure option costs: the MPICH that scripts/setup.sh
# builds (Debian's source package, ch3:nemesis) configured and built once per variant, one after
# another in one run, each into a scratch prefix: configure seconds, make seconds, install size,
# and whether a two-process spawn + merge (testbed/spawn_probe.c, as setup.sh runs it) works.
# Prints a table with each variant's total against the base's.
# Environment: BENCH_VARIANTS (";"-separated lists of options added to the base's; default: the
# base, --disable-fortran (the set-up before 2026-11-29), --disable-romio, and the options of
# MPICH's configure that drop parts PCM does not use, each alone and all together), BENCH_DIR (scratch; default $TMPDIR or /tmp), BENCH_JOBS (make -j;
# default the number of cores). Needs deb-src entries (scripts/setup.sh adds them when it builds).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE=(--with-device=ch3:nemesis --enable-fortran=all FC=gfortran F77=gfortran
  FFLAGS=-fallow-argument-mismatch FCFLAGS=-fallow-argument-mismatch --disable-doc --enable-fast=O2
  --with-hwloc=embedded)
mkdir -p "${BENCH_DIR:-${TMPDIR:-/tmp}}"
tmp=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/pcm-mpich.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
jobs=${BENCH_JOBS:-$(nproc)}

echo "== MPICH's source (apt-get source mpich)"
(cd "$tmp" && apt-get source -qq mpich >/dev/null 2>&1) ||
  { echo "mpich_build: apt-get source mpich failed (deb-src entries? see scripts/setup.sh)" >&2; exit 1; }
src=$(find "$tmp" -maxdepth 1 -type d -name 'mpich-*' | head -n 1)
[ -n "$src" ] || { echo "mpich_build: no source tree" >&2; exit 1; }
help=$("$src/configure" --help 2>/dev/null || true)
knows() { grep -q -- "${1%%=*}" <<<"$help"; }

if [ -n "${BENCH_VARIANTS:-}" ]; then
  IFS=';' read -r -a variants <<<"$BENCH_VARIANTS"
else
  variants=("" "--disable-fortran" "--disable-romio")
  for opt in --disable-cxx --disable-ft-tests --disable-dependency-tracking; do
    if knows "$opt"; then variants+=("$opt"); fi
  done
  all="--disable-romio"
  for v in "${variants[@]:3}"; do all="$all $v"; done
  [ ${#variants[@]} -gt 3 ] && variants+=("$all")
fi

now() { date +%s.%N; }
rows=()
i=0
for v in "${variants[@]}"; do
  i=$((i + 1))
  read -r -a extra <<<"$v"
  name=${v:-base}
  b=$tmp/build$i prefix=$tmp/prefix$i
  mkdir -p "$b"
  echo "== $name: configure, make -j$jobs, make install"
  t0=$(now)
  (cd "$b" && "$src/configure" --prefix="$prefix" "${BASE[@]}" "${extra[@]}" >"$b/log" 2>&1) ||
    { echo "mpich_build: configure failed for '$name' (log: $b/log)" >&2; tail -5 "$b/log"; continue; }
  t1=$(now)
  (cd "$b" && make -j"$jobs" >>"$b/log" 2>&1 && make install >>"$b/log" 2>&1) ||
    { echo "mpich_build: make failed for '$name'" >&2; tail -5 "$b/log"; continue; }
  t2=$(now)
  size=$(du -sm "$prefix" | cut -f1)
  spawn=no
  if "$prefix/bin/mpicc" -o "$b/probe" "$ROOT/testbed/spawn_probe.c" >/dev/null 2>&1 &&
     timeout -k 5 60 "$prefix/bin/mpiexec" -n 2 "$b/probe" >/dev/null 2>&1 </dev/null; then
    spawn=yes
  fi
  rows+=("$name|$(python3 "$ROOT/bench/benchlib.py" diff "$t1" "$t0")|$(python3 "$ROOT/bench/benchlib.py" diff "$t2" "$t1")|$size|$spawn")
  rm -rf "$b" "$prefix"
done

echo
echo "| variant (options added to setup.sh's) | configure s | make + install s | total s | against the base | installed MiB | spawn works |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
base_total=
for r in "${rows[@]}"; do
  IFS='|' read -r name conf mk size spawn <<<"$r"
  total=$(awk -v a="$conf" -v b="$mk" 'BEGIN { printf "%.1f", a + b }')
  [ -n "$base_total" ] || base_total=$total
  ratio=$(python3 "$ROOT/bench/benchlib.py" ratio --digits 2 "$total" "$base_total")
  printf '| %s | %.0f | %.0f | %.0f | %sx | %s | %s |\n' "$name" "$conf" "$mk" "$total" "$ratio" \
    "$size" "$spawn"
done
