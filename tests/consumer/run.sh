#!/usr/bin/env bash
# run.sh — installs a PCM build tree into a temporary prefix and builds and runs a consumer
# against it twice: with CMake (find_package(PCM)) and with pkg-config plus the MPI C wrapper.
# Usage: run.sh BUILD_DIR LIBDIR MPI_C_COMPILER MPIEXEC [TMP_PARENT]
#   LIBDIR: the install's library directory relative to the prefix (CMAKE_INSTALL_LIBDIR).
# Environment: CMAKE, the cmake to use (default: cmake in PATH).
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

echo "install.consumer: both consumers ok"
