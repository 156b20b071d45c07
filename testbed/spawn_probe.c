/* spawn_probe.c — does this MPI's MPI_Comm_spawn work? Run on 2 processes: they spawn one more
 * and merge with it; exit 0 when the merged world has 3 processes, 3 when the spawn fails, 4 when
 * the size is wrong. scripts/setup.sh runs it on every MPI it considers; bench/mpich_build.sh on
 * each MPICH it builds. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm parent, inter, merged;
  MPI_Comm_get_parent(&parent);
  if (parent == MPI_COMM_NULL) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                            MPI_ERRCODES_IGNORE);
    if (rc != MPI_SUCCESS) {
      MPI_Finalize();
      return 3;
    }
    MPI_Intercomm_merge(inter, 0, &merged);
  } else {
    MPI_Intercomm_merge(parent, 1, &merged);
  }
  int size;
  MPI_Comm_size(merged, &size);
  int ok = size == 3, all;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, merged);
  MPI_Comm_free(&merged);
  MPI_Finalize();
  return all ? 0 : 4;
}
