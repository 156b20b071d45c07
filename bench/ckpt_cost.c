/* ckpt_cost.c — benchmark: write a checkpoint of MB MiB (PCM_Store of each rank's share, then
 * PCM_Commit, fsyncs included) or, in a run started with PCM_RESTART=1, read it back with
 * PCM_Load; prints the time and throughput from rank 0. Usage: ckpt_cost MB */
#include <stdio.h>
#include <stdlib.h>

#include "pcm.h"

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank, size, i, iteration, then;
  long mb = argc > 1 ? atol(argv[1]) : 64, n, k;
  double *x, t0, t1, t2;
  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "ckpt_cost: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  n = mb * 1024 * 1024 / 8 / size;
  x = malloc((size_t)n * sizeof(double));
  if (PCM_Process_Status() == PCM_RESTARTED) {
    PCM_Restart_info(&iteration, &then);
    MPI_Barrier(world);
    t0 = MPI_Wtime();
    if (PCM_Load(rank, "x", x, PCM_DOUBLE, n) != PCM_SUCCESS) {
      fprintf(stderr, "ckpt_cost: %s\n", PCM_Last_error());
      return 1;
    }
    MPI_Barrier(world);
    t1 = MPI_Wtime();
    for (k = 0; k < n; k++)
      if (x[k] != (double)(rank * n + k)) {
        fprintf(stderr, "ckpt_cost: wrong data\n");
        return 1;
      }
    if (rank == 0)
      printf("ckpt_cost: read %ld MiB with %d processes: %.3f s, %.3f GB/s\n", mb, size, t1 - t0,
             (double)n * size * 8 / (t1 - t0) / 1e9);
  } else {
    for (k = 0; k < n; k++) x[k] = (double)(rank * n + k);
    MPI_Barrier(world);
    t0 = MPI_Wtime();
    if (PCM_Store(rank, "x", x, PCM_DOUBLE, n) != PCM_SUCCESS) {
      fprintf(stderr, "ckpt_cost: %s\n", PCM_Last_error());
      return 1;
    }
    MPI_Barrier(world);
    t1 = MPI_Wtime();
    i = PCM_Commit(world, 1);
    t2 = MPI_Wtime();
    if (i != PCM_SUCCESS) {
      fprintf(stderr, "ckpt_cost: %s\n", PCM_Last_error());
      return 1;
    }
    if (rank == 0)
      printf(
          "ckpt_cost: wrote %ld MiB with %d processes: %.3f s (store %.3f s + commit %.3f s), %.3f "
          "GB/s\n",
          mb, size, t2 - t0, t1 - t0, t2 - t1, (double)n * size * 8 / (t2 - t0) / 1e9);
  }
  free(x);
  PCM_Finalize(world);
  return 0;
}
