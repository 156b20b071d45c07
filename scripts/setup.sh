#!/usr/bin/env bash
# Idempotent set-up for a Debian machine: packages, an MPI whose MPI_Comm_spawn works, the build.
#
# Environment:
#   PCM_CACHE_DIR   where a self-built MPICH is kept between runs (default ~/.cache/pcm)
#   PCM_MPI         mpich (default: one whose spawn works, built once if need be), openmpi
#                   (Debian's openmpi-bin and libopenmpi-dev) or stock-mpich (Debian's own mpich
#                   and libmpich-dev, which cannot spawn: jobs reshape by restart,
#                   docs/user/restart-reshape.md)
#   PCM_MPI_HOME    use the MPI installed under this prefix (must be able to spawn)
#   PCM_BUILD_DIR   CMake build directory (default <checkout>/build; on Open MPI build-openmpi)
#   PCM_BUILD_TYPE  CMake build type (default RelWithDebInfo)
#   PCM_BUILD_TARGETS  build only these targets (space-separated; scripts/demo.sh's programs)
# Prints `export` lines for the chosen MPI to scripts/.env (sourced by the other scripts); an
# Open MPI (PCM_MPI=openmpi, or found under PCM_MPI_HOME) gets scripts/.env.openmpi instead, and
# its own build directory, so that the MPICH set-up stays as it is beside it; Debian's MPICH
# (PCM_MPI=stock-mpich) scripts/.env.stock-mpich and build-stock-mpich.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${PCM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pcm}
PCM_MPI=${PCM_MPI:-mpich}
case $PCM_MPI in
  mpich | openmpi | stock-mpich) ;;
  *) echo "[setup] PCM_MPI=$PCM_MPI: mpich, openmpi or stock-mpich expected" >&2; exit 2 ;;
esac
BUILD_TYPE=${PCM_BUILD_TYPE:-RelWithDebInfo}
MPICH_VERSION=4.0.2
MPICH_PREFIX=$CACHE/mpich-$MPICH_VERSION-ch3

log() { printf '[setup] %s\n' "$*" >&2; }
# Package installation needs root; a user who may use sudo gets it through sudo.
SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi

PACKAGES=(build-essential cmake pkg-config dpkg-dev python3 clang-format
  libhdf5-dev hdf5-tools libzmq3-dev cppzmq-dev libsodium-dev libxxhash-dev
  libfmt-dev libspdlog-dev libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev zlib1g-dev procps gnuplot-nox
  fonts-dejavu-core ccache clang-14 libclang-rt-14-dev slurm-wlm munge universal-ctags iproute2 nftables
  gfortran)
if [ "$PCM_MPI" = openmpi ] && [ -z "${PCM_MPI_HOME:-}" ]; then
  PACKAGES+=(openmpi-bin libopenmpi-dev)
  # The Python package pcm (python/): Debian's mpi4py is built against Debian's Open MPI, so it
  # is built and tested on this build only (/usr/bin/python3; a pyenv python3 lacks these).
  PACKAGES+=(python3-dev python3-numpy python3-mpi4py python3-venv python3-pip python3-setuptools
    python3-wheel)
fi

if [ "$PCM_MPI" = stock-mpich ]; then
  PACKAGES+=(mpich libmpich-dev)
fi

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  local munged_before=
  munged_before=$(cat /run/munge/munged.pid 2>/dev/null || true)
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  # Where invoke-rc.d may start services (sysvinit without a denying policy-rc.d), munge's
  # post-install starts a system munged; testbed/slurm.sh runs one of its own, so stop one that
  # this install started, by its pid file. (slurmctld and slurmd start only with /etc/slurm.)
  local pid
  pid=$(cat /run/munge/munged.pid 2>/dev/null || true)
  if [ -n "$pid" ] && [ "$pid" != "$munged_before" ] &&
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = munged ]; then
    log "stopping the munged ($pid) that the munge package started"
    $SUDO kill "$pid" || true
  fi
}

# mpi_family MPIEXEC: prints mpich (hydra), openmpi or unknown (testbed/launcher_mpi.sh decides).
mpi_family() {
  # shellcheck disable=SC2016
  MPIEXEC=$1 PCM_MPI_FAMILY='' sh -c '. "$0" && echo "$PCM_MPI_FAMILY"' "$ROOT/testbed/launcher_mpi.sh"
}

# Compile and run a two-process job that spawns one child and merges with it, with the launcher
# settings of its family (testbed/launcher_mpi.sh: on Open MPI, root and oversubscription).
# $1: directory holding bin/mpicc and bin/mpiexec (empty: take them from PATH); or $1 and $2:
# the MPI C compiler and the mpiexec themselves.
probe_spawn() {
  local mpicc mpiexec
  if [ $# -ge 2 ]; then
    mpicc=$1 mpiexec=$2
  else
    mpicc=${1:+$1/}mpicc mpiexec=${1:+$1/}mpiexec
  fi
  local dir
  dir=$(mktemp -d)
  local rc=0 try
  if "$mpicc" -o "$dir/probe" "$ROOT/testbed/spawn_probe.c" >/dev/null 2>&1; then
    # Up to 3 tries: Open MPI's spawn hangs now and then (openpmix#2735; docs/ops/openmpi.md),
    # which says nothing about whether it works.
    for try in 1 2 3; do
      rc=0
      # shellcheck disable=SC2016
      MPIEXEC=$mpiexec PCM_MPI_FAMILY='' timeout -k 5 60 sh -c '. "$0" && exec "$MPIEXEC" -n 2 "$1"' \
        "$ROOT/testbed/launcher_mpi.sh" "$dir/probe" >"$dir/out" 2>&1 </dev/null || rc=$?
      [ $rc -eq 0 ] && break
      log "spawn probe with $mpiexec, try $try of 3: exit $rc$([ $rc -eq 124 ] && echo ' (no end within 60 s)'); its output's end:"
      tail -n 5 "$dir/out" >&2
    done
  else
    rc=1
  fi
  rm -rf "$dir"
  return $rc
}

# Whether the MPICH in MPICH_PREFIX has its Fortran bindings, mpi_f08 included (the Fortran
# module pcm and its tests need them: docs/user/fortran.md).
mpich_has_fortran() {
  [ -x "$MPICH_PREFIX/bin/mpifort" ] &&
    [ -n "$(find "$MPICH_PREFIX" -name mpi_f08.mod -print -quit 2>/dev/null)" ]
}

# Builds MPICH with its C and Fortran bindings beside the cache, then puts it in place with one
# rename: a build that is interrupted, or fails, leaves the cached MPICH as it was, and programs
# already running on the old one keep its files.
build_mpich() {
  log "building MPICH $MPICH_VERSION (ch3:nemesis, C and Fortran) into $MPICH_PREFIX; this takes about 10 CPU-minutes (5-6 minutes on 2 idle cores), once"
  # apt-get source needs deb-src entries; derive them from the configured deb entries.
  if ! apt-get source --print-uris mpich >/dev/null 2>&1 ||
     [ -z "$(apt-get source --print-uris mpich 2>/dev/null | grep -E '\.dsc')" ]; then
    local src=/etc/apt/sources.list.d/pcm-deb-src.sources
    {
      for f in /etc/apt/sources.list.d/*.sources; do
        [ "$f" = "$src" ] && continue
        grep -q '^Types: deb$' "$f" || continue
        sed 's/^Types: deb$/Types: deb-src/' "$f"
        echo
      done
    } | $SUDO tee "$src" >/dev/null
    if [ -f /etc/apt/sources.list ]; then
      grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' |
        $SUDO tee /etc/apt/sources.list.d/pcm-deb-src.list >/dev/null || true
    fi
    $SUDO apt-get update -qq
  fi
  local work=$CACHE/src
  rm -rf "$work"
  mkdir -p "$work"
  (cd "$work" && apt-get source -qq "mpich=$MPICH_VERSION*" >/dev/null 2>&1 || apt-get source -qq mpich >/dev/null)
  local srcdir
  srcdir=$(find "$work" -maxdepth 1 -type d -name "mpich-$MPICH_VERSION*" | head -n 1)
  [ -n "$srcdir" ] || { log "apt-get source mpich gave no source tree"; exit 1; }
  local blog=$CACHE/mpich-build.log
  log "configure (log: $blog)"
  local started=$SECONDS
  (cd "$srcdir" && ./configure --prefix="$MPICH_PREFIX" --with-device=ch3:nemesis \
      --enable-fortran=all FC=gfortran F77=gfortran FFLAGS=-fallow-argument-mismatch \
      FCFLAGS=-fallow-argument-mismatch --disable-doc --enable-fast=O2 \
      --with-hwloc=embedded >"$blog" 2>&1) ||
    { log "configure failed; see $blog"; return 1; }
  log "make (log: $blog)"
  local stage=$work/stage
  (cd "$srcdir" && make -j"$(nproc)" >>"$blog" 2>&1 && make install DESTDIR="$stage" >>"$blog" 2>&1) ||
    { log "MPICH build failed; see $blog"; return 1; }
  rm -rf "$MPICH_PREFIX.old"
  if [ -d "$MPICH_PREFIX" ]; then mv "$MPICH_PREFIX" "$MPICH_PREFIX.old"; fi
  mv "$stage$MPICH_PREFIX" "$MPICH_PREFIX"
  rm -rf "$MPICH_PREFIX.old" "$work"
  log "MPICH built in $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s"
}

# Debian's Open MPI: its commands are found by their own names (mpicc.openmpi, ...), never
# through the mpicc/mpiexec alternatives, which may point to another MPI. The probe runs once per
# build directory (a stamp naming the mpiexec probed).
choose_openmpi() {
  local stamp=$BUILD_DIR/.pcm-spawn-ok
  if [ -n "${PCM_MPI_HOME:-}" ]; then
    MPI_BIN=$PCM_MPI_HOME/bin MPICC=$MPI_BIN/mpicc MPICXX=$MPI_BIN/mpicxx MPIEXEC=$MPI_BIN/mpiexec
  else
    MPI_BIN=/usr/bin MPICC=/usr/bin/mpicc.openmpi MPICXX=/usr/bin/mpicxx.openmpi
    MPIEXEC=/usr/bin/mpiexec.openmpi
  fi
  [ "$(mpi_family "$MPIEXEC")" = openmpi ] || { log "$MPIEXEC is not Open MPI's"; exit 1; }
  if [ "$(cat "$stamp" 2>/dev/null)" != "$MPIEXEC" ]; then
    probe_spawn "$MPICC" "$MPIEXEC" || { log "Open MPI ($MPIEXEC): MPI_Comm_spawn does not work"; exit 1; }
    mkdir -p "$BUILD_DIR"
    echo "$MPIEXEC" >"$stamp"
  fi
}

choose_mpi() {
  if [ -n "${PCM_MPI_HOME:-}" ]; then
    probe_spawn "$PCM_MPI_HOME/bin" || { log "PCM_MPI_HOME=$PCM_MPI_HOME: MPI_Comm_spawn does not work"; exit 1; }
    MPI_BIN=$PCM_MPI_HOME/bin
    return
  fi
  if [ -f "$MPICH_PREFIX/.spawn-ok" ] && { mpich_has_fortran || [ -f "$MPICH_PREFIX/.no-fortran" ]; }; then
    MPI_BIN=$MPICH_PREFIX/bin
    return
  fi
  # Only an MPI of the MPICH family: with Debian's Open MPI installed, mpicc and mpiexec in PATH
  # may be Open MPI's (PCM_MPI=openmpi chooses that one, in a build directory of its own). Not
  # the cache's own MPICH (in PATH after sourcing scripts/.env), which is checked below.
  if command -v mpicc >/dev/null && command -v mpiexec >/dev/null &&
     [ "$(dirname "$(command -v mpicc)")" != "$MPICH_PREFIX/bin" ] &&
     [ "$(mpi_family mpiexec)" = mpich ] && probe_spawn ""; then
    MPI_BIN=$(dirname "$(command -v mpicc)")
    log "using the MPI in PATH ($MPI_BIN): spawn works"
    return
  fi
  mkdir -p "$CACHE"
  if [ ! -x "$MPICH_PREFIX/bin/mpicc" ]; then
    build_mpich || exit 1
  elif ! mpich_has_fortran && [ ! -f "$MPICH_PREFIX/.no-fortran" ]; then
    log "the MPICH cached in $MPICH_PREFIX has no Fortran bindings (an older set-up built it without them)"
    if ! build_mpich; then
      # Once: the next set-up does not try again (remove the file to).
      echo "the rebuild with Fortran failed; see $CACHE/mpich-build.log" >"$MPICH_PREFIX/.no-fortran"
      log "keeping the cached MPICH without Fortran: the Fortran tests say SKIPPED ($MPICH_PREFIX/.no-fortran)"
    fi
  fi
  probe_spawn "$MPICH_PREFIX/bin" || { log "the MPICH built in $MPICH_PREFIX cannot spawn"; exit 1; }
  touch "$MPICH_PREFIX/.spawn-ok"
  MPI_BIN=$MPICH_PREFIX/bin
}

# The compiler launcher every PCM build directory uses (this one, the Open MPI, sanitizer and fuzz
# builds): ccache with its cache beside the MPICH build, outside the checkout, keyed on paths
# relative to the checkout (CCACHE_BASEDIR, and no working directory in the hash), so that a
# fresh clone elsewhere, or a second build directory, compiles only what changed. A CMake list:
# 'env VAR=... ccache' before each compiler command. Empty where ccache is missing.
compiler_launcher() {
  command -v ccache >/dev/null || return 0
  printf 'env;CCACHE_DIR=%s;CCACHE_BASEDIR=%s;CCACHE_NOHASHDIR=1;CCACHE_MAXSIZE=4G;ccache' \
    "$CACHE/ccache" "$ROOT"
}

configure_and_build() {
  local gen_args=()
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    gen_args=(-DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DMPI_HOME="$(dirname "$MPI_BIN")"
      -DMPIEXEC_EXECUTABLE="$MPIEXEC" -DMPI_C_COMPILER="$MPICC" -DMPI_CXX_COMPILER="$MPICXX"
      -DPCM_MPI_CAN_SPAWN="$CAN_SPAWN")
  fi
  # PCM_BUILD_UNIT_TESTS=OFF (scripts/test_openmpi.sh's label run) leaves out the GoogleTest
  # programs; given on every configure, so that the next run without it builds them again.
  cmake -S "$ROOT" -B "$BUILD_DIR" "${gen_args[@]}" \
    -DCMAKE_C_COMPILER_LAUNCHER="$PCM_COMPILER_LAUNCHER" \
    -DCMAKE_CXX_COMPILER_LAUNCHER="$PCM_COMPILER_LAUNCHER" \
    -DPCM_BUILD_UNIT_TESTS="${PCM_BUILD_UNIT_TESTS:-ON}" >/dev/null
  # PCM_BUILD_TARGETS (the demo's: the programs it runs) builds those alone; empty builds all.
  local targets=()
  read -r -a targets <<<"${PCM_BUILD_TARGETS:-}"
  cmake --build "$BUILD_DIR" -j"$(nproc)" ${targets[@]:+--target "${targets[@]}"}
}

# write_env FILE: standard input into FILE, replaced in one rename and only when it changed (a
# set-up running beside tests, as scripts/test.sh's background builds do, never leaves a reader
# of scripts/.env a half-written file).
write_env() {
  local tmp
  tmp=$(mktemp "$1.XXXXXX")
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv -f "$tmp" "$1"; fi
}

main() {
  install_packages
  # --packages-only: the packages of PCM_MPI, nothing more (scripts/test.sh installs those of every
  # MPI it builds before building them in parallel: apt takes one installation at a time).
  if [ "${1:-}" = --packages-only ]; then return 0; fi
  CAN_SPAWN=ON
  PCM_COMPILER_LAUNCHER=$(compiler_launcher)
  # An Open MPI under PCM_MPI_HOME is set up as PCM_MPI=openmpi is.
  if [ "$PCM_MPI" = mpich ] && [ -n "${PCM_MPI_HOME:-}" ] &&
     [ "$(mpi_family "$PCM_MPI_HOME/bin/mpiexec")" = openmpi ]; then
    PCM_MPI=openmpi
  fi
  if [ "$PCM_MPI" = stock-mpich ]; then
    # Debian's own MPICH, by its own names (the mpicc/mpiexec alternatives may be another MPI's);
    # no spawn probe: it cannot spawn (ch4:ucx), which is what this build is for.
    BUILD_DIR=${PCM_BUILD_DIR:-$ROOT/build-stock-mpich}
    MPI_BIN=/usr/bin MPICC=/usr/bin/mpicc.mpich MPICXX=/usr/bin/mpicxx.mpich
    MPIEXEC=/usr/bin/mpiexec.mpich
    CAN_SPAWN=OFF
    [ "$(mpi_family "$MPIEXEC")" = mpich ] || { log "$MPIEXEC is not MPICH's hydra"; exit 1; }
    write_env "$ROOT/scripts/.env.stock-mpich" <<ENV
export PCM_BUILD_DIR="$BUILD_DIR"
export PCM_MPI_FAMILY=mpich
export MPIEXEC="$MPIEXEC"
export PCM_COMPILER_LAUNCHER="$PCM_COMPILER_LAUNCHER"
ENV
  elif [ "$PCM_MPI" = openmpi ]; then
    BUILD_DIR=${PCM_BUILD_DIR:-$ROOT/build-openmpi}
    choose_openmpi
    # mpi-bin (made by cmake/PCMMpiLauncher.cmake): mpiexec with testbed/launcher_mpi.sh's
    # settings, and the MPI's compiler wrappers, under their plain names.
    local path="$BUILD_DIR/mpi-bin"
    [ "$MPI_BIN" = /usr/bin ] || path="$path:$MPI_BIN"
    write_env "$ROOT/scripts/.env.openmpi" <<ENV
export PATH="$path:\$PATH"
export PCM_BUILD_DIR="$BUILD_DIR"
export PCM_MPI_FAMILY=openmpi
export PCM_COMPILER_LAUNCHER="$PCM_COMPILER_LAUNCHER"
ENV
  else
    BUILD_DIR=${PCM_BUILD_DIR:-$ROOT/build}
    choose_mpi
    MPICC=$MPI_BIN/mpicc MPICXX=$MPI_BIN/mpicxx MPIEXEC=$MPI_BIN/mpiexec
    write_env "$ROOT/scripts/.env" <<ENV
export PATH="$MPI_BIN:\$PATH"
export PCM_BUILD_DIR="$BUILD_DIR"
export PCM_COMPILER_LAUNCHER="$PCM_COMPILER_LAUNCHER"
ENV
  fi
  if [ "${1:-}" != "--no-build" ]; then
    configure_and_build
  fi
}

main "$@"
