/* heat2d_plain.c — 2-D heat diffusion in plain MPI (paper's Figure 5); the reference result. */
#include <stdio.h>

#include "heat2d_common.h"

int main(int argc, char **argv) {
  Heat2dOptions opt;
  Heat2dMesh mesh;
  Heat2dProgress progress;
  int rank, nprocs, first_col, ncols, it, rc;
  uint64_t sum;
  double t0, seconds;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  /* --layout, --block and --commit-every are accepted (so both versions take one command line)
   * but ignored: the plain version is the reference, always uses the block layout and never
   * checkpoints. */
  rc = heat2d_parse_options(argc, argv, rank == 0, &opt);
  if (rc != 0) {
    MPI_Finalize();
    return rc > 0 ? 0 : 2; /* rc > 0: --help */
  }

  heat2d_block(rank, nprocs, opt.nx, &first_col, &ncols);
  if (heat2d_mesh_create(&mesh, opt.nx, opt.ny, first_col, ncols, rank, nprocs) != 0) {
    /* Other ranks would wait for this one in the first exchange. */
    fprintf(stderr, "heat2d: rank %d: out of memory for %d columns\n", rank, ncols);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  t0 = MPI_Wtime();
  heat2d_progress_init(&progress, &opt, rank, 0, nprocs, "start");
  for (it = 0; it < opt.iters; it++) {
    if (heat2d_exchange(&mesh, MPI_COMM_WORLD) != MPI_SUCCESS) {
      fprintf(stderr, "heat2d: rank %d: halo exchange failed\n", rank);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    heat2d_step(&mesh);
    heat2d_throttle(&opt);
    heat2d_progress(&progress, rank, it + 1, opt.iters, nprocs);
  }
  seconds = MPI_Wtime() - t0;
  heat2d_progress_close(&progress);

  rc = heat2d_checksum(&mesh, MPI_COMM_WORLD, opt.dump, &sum);
  if (rc == -2) {
    fprintf(stderr, "heat2d: rank %d: gathering the grid failed\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rc == -1) {
    if (rank == 0) fprintf(stderr, "heat2d: out of memory gathering the grid\n");
    heat2d_mesh_destroy(&mesh);
    MPI_Finalize();
    return 1;
  }
  if (rank == 0) heat2d_print_result(opt.iters, nprocs, seconds, opt.iters, sum);

  heat2d_mesh_destroy(&mesh);
  MPI_Finalize();
  return rc == 0 ? 0 : 1; /* -3: rank 0 could not write the dump (reported) */
}
