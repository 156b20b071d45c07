#!/usr/bin/env bash
# run.sh — installs a PCM build tree into a temporary prefix and builds and runs a consumer
# against it twice: with CMake (find_package(PCM)) and with pkg-config plus the MPI C wrapper.
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
trap 'rm -rf "$TMP"' EXIT
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
