/* readme_paper.c — the paper's calls (Table 1), in docs/user/paper-calls.md (run as a test). */
#include <stdio.h>

#include "pcm.h"

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank, it = 0;
  double x[1000];

  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "pcm: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  PCM_Comm_rank(world, &rank);
  if (PCM_Process_Status() == PCM_STARTED) {
    for (int i = 0; i < 1000; i++) x[i] = rank + i;
  } else { /* spawned to replace a process that migrated: take over its state */
    PCM_Load(rank, "it", &it, PCM_INT, 1);
    PCM_Load(rank, "x", x, PCM_DOUBLE, 1000);
  }
  for (; it < 100; it++) {
    int s = PCM_Status(world); /* collective; cheap when nothing is pending */
    if (s == PCM_MIGRATE) {    /* this process moves: leave its state behind */
      PCM_Store(rank, "it", &it, PCM_INT, 1);
      PCM_Store(rank, "x", x, PCM_DOUBLE, 1000);
    }
    if (s == PCM_MIGRATE || s == PCM_RECONFIGURE) {
      if (PCM_Reconfigure(&world, argv[0]) != PCM_SUCCESS) break;
      if (world == MPI_COMM_NULL) return PCM_Exit(); /* retired: wait for the end, no CPU */
      PCM_Comm_rank(world, &rank);
    }
    for (int i = 0; i < 1000; i++) x[i] *= 0.5; /* compute and communicate on world */
    MPI_Allreduce(MPI_IN_PLACE, x, 1, MPI_DOUBLE, MPI_SUM, world);
  }
  if (rank == 0) printf("x[0] = %g\n", x[0]);
  PCM_Finalize(world);
  return 0;
}
