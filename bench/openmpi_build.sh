#!/usr/bin/env bash
# bench/openmpi_build.sh — builds Debian's Open MPI source (upstream's tarball from apt-get source
# openmpi, 4.1.4 on Debian 12) with the PMIx it carries inside (3.2.3) instead of Debian's external PMIx 4, C only,
# into PCM_CACHE_DIR/openmpi-VERSION-pmix-internal (default ~/.cache/pcm), once: a second run
# prints the prefix and does nothing else. For bench/openmpi_spawn.sh, which runs the same spawns
# on it and on Debian's Open MPI (openpmix#2735: Open MPI 4.1 hangs now and then in
# MPI_Comm_spawn with an external PMIx 4, not with its internal 3.2). About 25 CPU-minutes.
# Needs deb-src entries (scripts/setup.sh adds them when it builds MPICH), libevent-dev and
# libhwloc-dev. Prints the prefix on its last line.
set -euo pipefail
CACHE=${PCM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pcm}
work=$CACHE/src-openmpi
mkdir -p "$CACHE"
built() { find "$CACHE" -maxdepth 1 -name 'openmpi-*-pmix-internal' -type d | head -n 1; }
if [ -z "$(built)" ] || [ ! -x "$(built)/bin/mpirun" ]; then
  rm -rf "$work"
  mkdir -p "$work"
  # Upstream's tarball as Debian keeps it (Debian's patches touch configure.ac and Makefile.am,
  # after which make wants automake).
  (cd "$work" && apt-get source -qq --download-only openmpi >/dev/null 2>&1 &&
    tar xf openmpi_*.orig.tar.*) ||
    { echo "openmpi_build: apt-get source openmpi failed (deb-src entries? see scripts/setup.sh)" >&2; exit 1; }
  src=$(find "$work" -maxdepth 1 -type d -name 'openmpi-*' | head -n 1)
  if [ -z "$src" ] || [ ! -d "$src/opal/mca/pmix/pmix3x/pmix" ]; then
    echo "openmpi_build: no Open MPI source tree with its internal PMIx under $work" >&2
    exit 1
  fi
  version=${src##*/openmpi-}
  prefix=$CACHE/openmpi-$version-pmix-internal
  log=$CACHE/openmpi-build.log
  echo "openmpi_build: Open MPI $version with its internal PMIx into $prefix (log: $log)"
  started=$SECONDS
  mkdir -p "$work/build"
  (cd "$work/build" && "$src/configure" --prefix="$prefix" --with-pmix=internal \
    --with-libevent=external --with-hwloc=external --disable-mpi-fortran --disable-oshmem \
    --without-ucx --without-verbs --without-ofi --disable-man-pages >"$log" 2>&1 &&
    make -j"$(nproc)" >>"$log" 2>&1 && make install DESTDIR="$work/stage" >>"$log" 2>&1) ||
    { echo "openmpi_build: the build failed; see $log" >&2; tail -5 "$log" >&2; exit 1; }
  mv "$work/stage$prefix" "$prefix"
  rm -rf "$work"
  echo "openmpi_build: built in $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s"
fi
built
