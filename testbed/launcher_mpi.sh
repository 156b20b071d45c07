# launcher_mpi.sh — sourced (POSIX sh) by the test scripts, setup.sh and the launcher that
# cmake/PCMMpiLauncher.cmake generates: what differs between the MPI launchers PCM runs under,
# hydra (the MPICH family) and Open MPI's mpirun (OpenRTE), kept here and nowhere else.
# Input: MPIEXEC (default: mpiexec in PATH); PCM_MPI_FAMILY if already known (skips detection).
# After sourcing:
#   PCM_MPI_FAMILY   mpich, openmpi or unknown (treated as hydra), exported
#   on Open MPI, exported: the root variables (mpirun refuses root without both) and
#     oversubscription (more ranks than cores, spawned processes included) as an MCA variable,
#     so that "$MPIEXEC" -n N PROGRAM runs the same way under either launcher
#   pcm_mpi_env NAME VALUE   prints the options passing NAME=VALUE to the ranks of one MPMD part
#                            (hydra: -env NAME VALUE; Open MPI: -x NAME=VALUE); no spaces in VALUE
#   pcm_mpi_needs_hydra WHAT exits 77 (ctest's SKIP_RETURN_CODE) with SKIPPED and the reason when
#                            the launcher is not hydra
MPIEXEC=${MPIEXEC:-mpiexec}
if [ -z "${PCM_MPI_FAMILY:-}" ]; then
  pcm_mpi_version=$("$MPIEXEC" --version 2>&1 </dev/null || true)
  case $pcm_mpi_version in
    *HYDRA*) PCM_MPI_FAMILY=mpich ;;
    *"Open MPI"* | *OpenRTE*) PCM_MPI_FAMILY=openmpi ;;
    *) PCM_MPI_FAMILY=unknown ;;
  esac
  unset pcm_mpi_version
fi
export PCM_MPI_FAMILY
if [ "$PCM_MPI_FAMILY" = openmpi ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
fi

pcm_mpi_env() {
  if [ "$PCM_MPI_FAMILY" = openmpi ]; then
    printf '%s\n' -x "$1=$2"
  else
    printf '%s\n' -env "$1" "$2"
  fi
}

pcm_mpi_needs_hydra() {
  case $PCM_MPI_FAMILY in
    mpich | unknown) return 0 ;;
  esac
  echo "SKIPPED: $1 needs MPICH's hydra launcher; $MPIEXEC is $PCM_MPI_FAMILY" >&2
  exit 77
}
