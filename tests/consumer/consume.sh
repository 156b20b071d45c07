#!/usr/bin/env bash
# consume.sh — installs a PCM build tree into a temporary prefix and builds and runs a consumer
# against it twice: with CMake (find_package(PCM)) and with pkg-config plus the MPI C wrapper;
# then runs a small job (consumer_job, built with find_package(PCM)) under the installed pcmd,
# started by the installed `pcmctl run` with the installed Slurm launcher put in by
# {launcher:slurm}, in a directory outside the source and build trees.
# Where the build has the Fortran module pcm (MPI_FORTRAN_COMPILER set), a Fortran consumer too,
# the same two ways (find_package(PCM COMPONENTS Fortran), and pkg-config pcm-fortran + mpifort).
# Usage: run.sh BUILD_DIR LIBDIR MPI_C_COMPILER MPIEXEC [TMP_PARENT]
#   LIBDIR: the install's library directory relative to the prefix (CMAKE_INSTALL_LIBDIR).
# Environment: CMAKE, the cmake to use (default: cmake in PATH); MPI_FORTRAN_COMPILER, the MPI
# Fortran wrapper where the build has the module (default: none, no Fortran consumer).
set -euo pipefail

if [ $# -lt 4 ]; then
  echo "usage: $0 BUILD_DIR LIBDIR MPI_C_COMPILER MPIEXEC [TMP_PARENT]" >&2
  exit 2
fi
BUILD=$1
LIBDIR=$2
MPICC=$3
MPIEXEC=$4
CMAKE=${CMAKE:-cmake}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "${5:-${TMPDIR:-/tmp}}"
TMP=$(mktemp -d "${5:-${TMPDIR:-/tmp}}/pcm-consumer.XXXXXX")
cleanup() {
  if [ -f "$TMP/job/pcmd.pid" ]; then kill "$(cat "$TMP/job/pcmd.pid")" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
PREFIX=$TMP/prefix

echo "== cmake --install $BUILD --prefix $PREFIX"
"$CMAKE" --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" 2>&1 ||
  { cat "$TMP/install.log"; exit 1; }
for f in include/pcm.h include/pcm_types.h "$LIBDIR/pkgconfig/pcm.pc" \
    "$LIBDIR/cmake/PCM/PCMConfig.cmake" "$LIBDIR/cmake/PCM/PCMConfigVersion.cmake"; do
  [ -f "$PREFIX/$f" ] || { echo "not installed: $f" >&2; exit 1; }
done

# Runs a consumer on one process; it must exit 0 and print "consumer: ok".
run() {
  local out rc=0
  out=$("$MPIEXEC" -n 1 "$@" </dev/null) || rc=$?
  printf '%s\n' "$out"
  if [ "$rc" -ne 0 ] || ! grep -qx 'consumer: ok' <<<"$out"; then
    echo "$*: exit status $rc, 'consumer: ok' expected" >&2
    exit 1
  fi
}

echo "== (a) CMake: find_package(PCM) + PCM::pcm"
"$CMAKE" -S "$HERE" -B "$TMP/cmake-build" -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DMPI_C_COMPILER="$MPICC" -DMPIEXEC_EXECUTABLE="$MPIEXEC" -DCMAKE_BUILD_TYPE=Release \
  >"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log"; exit 1; }
# It must have found the PCM just installed, not another one.
if ! grep -qx "PCM_DIR:PATH=$PREFIX/$LIBDIR/cmake/PCM" "$TMP/cmake-build/CMakeCache.txt"; then
  echo "find_package(PCM) found another PCM:" >&2
  grep '^PCM_DIR' "$TMP/cmake-build/CMakeCache.txt" >&2
  exit 1
fi
"$CMAKE" --build "$TMP/cmake-build" >"$TMP/build.log" 2>&1 || { cat "$TMP/build.log"; exit 1; }
run "$TMP/cmake-build/consumer"

echo "== (b) pkg-config + $MPICC"
command -v pkg-config >/dev/null || { echo "pkg-config is not installed" >&2; exit 1; }
export PKG_CONFIG_PATH=$PREFIX/$LIBDIR/pkgconfig
pkg-config --exists --print-errors pcm
pcm_libdir=$(pkg-config --variable=libdir pcm)
# shellcheck disable=SC2046  # pkg-config's output is a list of words
"$MPICC" -std=c99 -Wall -Wextra -pedantic -o "$TMP/consumer-pc" "$HERE/consumer.c" \
  $(pkg-config --cflags --libs pcm) -Wl,-rpath,"$pcm_libdir"
run "$TMP/consumer-pc"

echo "== (e) consumer_job under the installed pcmd, by the installed pcmctl run and launcher"
for f in bin/pcmd bin/pcmctl libexec/pcm/launcher_slurm.sh libexec/pcm/launcher_hosts.sh \
    libexec/pcm/ssh_args.sh; do
  [ -f "$PREFIX/$f" ] || { echo "not installed: $f" >&2; exit 1; }
done
for f in launcher_slurm.sh launcher_hosts.sh; do
  [ -x "$PREFIX/libexec/pcm/$f" ] ||
    { echo "installed, not executable: libexec/pcm/$f" >&2; exit 1; }
done
J=$TMP/job
mkdir -p "$J"
cd "$J"  # nothing from the source or the build tree from here on
unset PCM_LIBEXEC_DIR PCM_JOB PCM_RESTART
export PCM_CONFIG=$J/pcmd.conf
# The MPI's launcher is given the installed launcher; on one host it starts the processes itself.
case $("$MPIEXEC" --version 2>&1 </dev/null || true) in
  *"Open MPI"* | *OpenRTE*) via=(--mca plm_rsh_agent) ;;
  *) via=(-launcher ssh -launcher-exec) ;;
esac
launch=()
for a in "${via[@]}" "{launcher:slurm}"; do launch+=("--mpiexec-arg=$a"); done
# The MPI's launcher through a recorder of its arguments: which launcher pcmctl run put in.
cat >"$J/mpiexec" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >'$J/mpiexec.args'
exec '$MPIEXEC' "\$@"
EOF
chmod +x "$J/mpiexec"
"$PREFIX/bin/pcmd" --detach --pidfile "$J/pcmd.pid" --data-dir "$J/data" --config "$PCM_CONFIG" \
  2>"$J/pcmd.log" || { cat "$J/pcmd.log"; exit 1; }
rc=0
"$PREFIX/bin/pcmctl" run -n 2 --job consumer-job --mpiexec "$J/mpiexec" "${launch[@]}" \
  -- "$TMP/cmake-build/consumer_job" >"$J/run.out" 2>&1 </dev/null || rc=$?
cat "$J/run.out"
if [ "$rc" -ne 0 ] || ! grep -qx 'consumer_job: ok on 2 processes' "$J/run.out"; then
  echo "pcmctl run: exit status $rc, 'consumer_job: ok on 2 processes' expected" >&2
  cat "$J/pcmd.log" >&2
  exit 1
fi
given=$(grep -x '.*/launcher_slurm\.sh' "$J/mpiexec.args" || true)
want=$(realpath "$PREFIX/libexec/pcm/launcher_slurm.sh")
if [ -z "$given" ] || [ "$(realpath "$given")" != "$want" ]; then
  echo "pcmctl run gave the MPI launcher '$given', not the installed launcher_slurm.sh:" >&2
  cat "$J/mpiexec.args" >&2
  exit 1
fi
echo "pcmctl run put in $given"
status=$("$PREFIX/bin/pcmctl" status consumer-job)
printf '%s\n' "$status"
grep -Eq '^consumer-job +finished ' <<<"$status" ||
  { echo "installed pcmd does not show consumer-job finished" >&2; exit 1; }
# A launcher that is not there: refused before anything starts, naming where it looked.
rc=0
"$PREFIX/bin/pcmctl" run -n 1 --job consumer-none --mpiexec "$J/mpiexec" \
  "--mpiexec-arg={launcher:nosuch}" -- /bin/true >"$J/none.out" 2>&1 </dev/null || rc=$?
if [ "$rc" -eq 0 ] || ! grep -q "no launcher 'nosuch'.*libexec/pcm" "$J/none.out"; then
  echo "pcmctl run with {launcher:nosuch}: exit status $rc:" >&2
  cat "$J/none.out" >&2
  exit 1
fi
cd - >/dev/null

if [ -n "${MPI_FORTRAN_COMPILER:-}" ]; then
  for f in include/pcm_fortran/pcm.mod "$LIBDIR/pkgconfig/pcm-fortran.pc" \
      "$LIBDIR/cmake/PCM/PCMFortranTargets.cmake"; do
    [ -f "$PREFIX/$f" ] || { echo "not installed: $f" >&2; exit 1; }
  done
  echo "== (c) CMake: find_package(PCM COMPONENTS Fortran) + PCM::pcm_fortran"
  "$CMAKE" -S "$HERE/fortran" -B "$TMP/cmake-build-f" -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DMPI_C_COMPILER="$MPICC" -DMPI_Fortran_COMPILER="$MPI_FORTRAN_COMPILER" \
    -DMPIEXEC_EXECUTABLE="$MPIEXEC" -DCMAKE_BUILD_TYPE=Release >"$TMP/cmake-f.log" 2>&1 ||
    { cat "$TMP/cmake-f.log"; exit 1; }
  "$CMAKE" --build "$TMP/cmake-build-f" >"$TMP/build-f.log" 2>&1 || { cat "$TMP/build-f.log"; exit 1; }
  run "$TMP/cmake-build-f/consumer_f"
  echo "== (d) pkg-config pcm-fortran + $MPI_FORTRAN_COMPILER"
  pkg-config --exists --print-errors pcm-fortran
  # shellcheck disable=SC2046  # pkg-config's output is a list of words
  "$MPI_FORTRAN_COMPILER" -std=f2008 -Wall -o "$TMP/consumer-f-pc" "$HERE/fortran/consumer.f90" \
    $(pkg-config --cflags --libs pcm-fortran) -Wl,-rpath,"$pcm_libdir"
  run "$TMP/consumer-f-pc"
  echo "install.consumer: C and Fortran consumers ok"
else
  echo "install.consumer: both consumers ok (no Fortran module in this build)"
fi
