# instrumented.sh — sourced by scripts/sanitize.sh and scripts/fuzz.sh: configures their shared
# build (Clang 14, -DPCM_FUZZ=ON: ASan + UBSan with -fno-sanitize-recover, and libFuzzer's
# coverage) with the MPI of scripts/.env, unless it is configured already. Everything is configured
# (the tests refer to the examples' targets); the scripts build only the targets they run.
# instrumented_configure DIR
instrumented_configure() {
  local dir=$1 mpi_bin
  # Configured means generated too: a failed generation leaves a cache but no Makefile.
  [ -f "$dir/CMakeCache.txt" ] && [ -f "$dir/Makefile" ] && return 0
  mpi_bin=$(dirname "$(command -v mpicc)")
  cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPCM_FUZZ=ON \
    -DCMAKE_C_COMPILER_LAUNCHER="${PCM_COMPILER_LAUNCHER:-}" \
    -DCMAKE_CXX_COMPILER_LAUNCHER="${PCM_COMPILER_LAUNCHER:-}" \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DMPI_HOME="$(dirname "$mpi_bin")" -DMPIEXEC_EXECUTABLE="$mpi_bin/mpiexec" \
    -DMPI_C_COMPILER="$mpi_bin/mpicc" -DMPI_CXX_COMPILER="$mpi_bin/mpicxx" >/dev/null
}
