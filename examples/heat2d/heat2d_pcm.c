/* heat2d_pcm.c — heat2d_plain.c made malleable with PCM's register-once calls (Figure 6). */
#include <stdio.h>

#include "heat2d_grid.h"
#include "pcm.h"

/* Prints what failed with PCM's own message, ends PCM and MPI; returns the exit code. */
static int quit(const char *what, MPI_Comm world) {
  fprintf(stderr, "heat2d: %s: %s\n", what, PCM_Last_error());
  PCM_Finalize(world);
  return 1;
}

int main(int argc, char **argv) {
  Heat2dOptions opt;
  Heat2dGrid grid = {0};
  Heat2dProgress progress;
  MPI_Comm world = MPI_COMM_WORLD;
  int rank, nprocs, it = 0, start_it, reconfigs = 0, origin, s, rc;
  uint64_t sum;
  double t0, seconds;

  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS) return quit("MPI_PCM_Init", MPI_COMM_NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  rc = heat2d_parse_options(argc, argv, rank == 0, &opt);
  if (rc != 0) {
    PCM_Finalize(MPI_COMM_NULL);
    return rc > 0 ? 0 : 2; /* rc > 0: --help */
  }
  if (PCM_Init(&world) != PCM_SUCCESS) return quit("PCM_Init", MPI_COMM_NULL);
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &nprocs);
  origin = PCM_Process_Status();
  /* A started process lays out and fills its grid; a restarted one lays it out for this world
   * and PCM_Resume fills it; a spawned one receives both. */
  if ((origin == PCM_STARTED || origin == PCM_RESTARTED) &&
      heat2d_grid_layout(&grid, &opt, rank, nprocs, origin == PCM_STARTED) != 0) {
    return quit("laying out the grid", world);
  }
  if (PCM_Register_dist("grid", (void **)&grid.mesh.cur, PCM_DOUBLE, &grid.dist) != PCM_SUCCESS ||
      PCM_Register_value("it", &it, PCM_INT, 1) != PCM_SUCCESS ||
      PCM_Register_value("reconfigs", &reconfigs, PCM_INT, 1) != PCM_SUCCESS ||
      heat2d_progress_register(&progress) != PCM_SUCCESS || PCM_Resume(&world) != PCM_SUCCESS) {
    return quit("registering the state", world);
  }
  if (origin == PCM_MIGRATED || origin == PCM_SPLITTED) reconfigs++;
  if (heat2d_grid_adopt(&grid, world) != 0) return quit("adopting the grid", world);
  heat2d_progress_start(&progress, &opt, world, it, reconfigs, origin);

  start_it = it;
  t0 = MPI_Wtime();
  for (; it < opt.iters; it++) {
    s = PCM_Adapt(&world);
    if (s == PCM_RETIRED) return heat2d_retire(&grid, &progress);
    if (s < 0) return quit("PCM_Adapt", world);
    if (s == PCM_RESHAPED) {
      reconfigs++;
      if (heat2d_grid_adopt(&grid, world) != 0) return quit("adopting the grid", world);
      heat2d_progress_reconfig(&progress, world, it, reconfigs);
    }
    if (opt.commit_every > 0 && it > 0 && it % opt.commit_every == 0 &&
        PCM_Checkpoint(world, it) != PCM_SUCCESS) {
      return quit("PCM_Checkpoint", world);
    }
    if (heat2d_grid_exchange(&grid, world) != 0) {
      /* The neighbours may be anywhere in the exchange: no collective way out is left. */
      fprintf(stderr, "heat2d: halo exchange failed: %s\n", PCM_Last_error());
      MPI_Abort(world, 1);
    }
    heat2d_grid_step(&grid);
    heat2d_throttle(&opt);
    heat2d_progress(&progress, grid.rank, it + 1, opt.iters, grid.nprocs);
  }
  seconds = MPI_Wtime() - t0;
  heat2d_progress_close(&progress);

  rc = heat2d_grid_checksum(&grid, world, opt.dump, &sum);
  if (rc == -1) return quit("gathering the grid", world);
  if (grid.rank == 0) {
    heat2d_print_result(opt.iters, grid.nprocs, seconds, opt.iters - start_it, sum);
    printf("reconfigurations %d\n", reconfigs);
    fflush(stdout);
  }
  heat2d_grid_free(&grid);
  /* rc -3: rank 0 could not write the dump (reported). */
  return PCM_Finalize(world) == PCM_SUCCESS && rc == 0 ? 0 : 1;
}
