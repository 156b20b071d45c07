/* status_cost.c — benchmark: the cost of PCM_Status and PCM_Adapt per call, against the bare
 * MPI_Bcast PCM_Status is built on and an empty loop, measured in the same run; and an MPI call
 * that does nothing (MPI_Waitall of no request), which shows what libpcm's profiling wrapper adds
 * to each of the application's MPI calls (run once with PCM_PROFILE_MS=0 to compare). Prints one
 * line per variant. */
#include <stdio.h>
#include <stdlib.h>

#include "pcm.h"

static double per_call_us(MPI_Comm world, int variant, long calls) {
  long long msg[2] = {0, 0};
  volatile long sink = 0;
  double t0, t;
  long i;
  MPI_Barrier(world);
  t0 = MPI_Wtime();
  for (i = 0; i < calls; i++) {
    if (variant == 0) {
      sink += i;
    } else if (variant == 1) {
      MPI_Bcast(msg, 2, MPI_LONG_LONG, 0, world);
    } else if (variant == 4) {
      MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE);
    } else if (variant == 3) {
      if (PCM_Adapt(&world) != PCM_NONE) {
        fprintf(stderr, "status_cost: unexpected reconfiguration\n");
        return -1.0;
      }
    } else if (PCM_Status(world) != PCM_NONE) {
      fprintf(stderr, "status_cost: unexpected reconfiguration\n");
      return -1.0;
    }
  }
  t = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, world);
  return t / (double)calls * 1e6;
}

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  long calls = argc > 1 ? atol(argv[1]) : 200000;
  int rank, size, rep, reps = argc > 2 ? atoi(argv[2]) : 5;
  static const char *names[] = {"empty loop", "MPI_Bcast 16 B", "PCM_Status", "PCM_Adapt",
                                "MPI_Waitall(0)"};
  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "status_cost: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  if (PCM_Resume(&world) != PCM_SUCCESS) { /* nothing registered: PCM_Adapt is PCM_Status */
    fprintf(stderr, "status_cost: %s\n", PCM_Last_error());
    PCM_Finalize(world);
    return 1;
  }
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  for (rep = 0; rep < reps; rep++) {
    double us[5];
    int v;
    for (v = 0; v < 5; v++) us[v] = per_call_us(world, v, calls);
    if (rank == 0) {
      for (v = 0; v < 5; v++)
        printf("status_cost: rep %d procs %d %-15s %.3f us/call\n", rep, size, names[v], us[v]);
      fflush(stdout);
    }
  }
  PCM_Finalize(world);
  return 0;
}
