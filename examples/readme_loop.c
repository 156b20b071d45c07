/* readme_loop.c — the instrumented loop shown in README.md (built and run as a test). */
#include <stdio.h>
#include <stdlib.h>

#include "pcm.h"

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  PCM_Dist dist = NULL; /* which of the 1000 units (of 4 doubles) each process holds */
  double *x = NULL;     /* this process's units */
  int it = 0, rank, size, s;
  long n = 0, first, count, off;

  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "pcm: %s\n", PCM_Last_error());
    return PCM_Finalize(MPI_COMM_NULL), 1;
  }
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (PCM_Process_Status() == PCM_STARTED) { /* spawned processes receive theirs */
    PCM_Dist_create(PCM_BLOCK, 1000, 4, 0, 0, size, &dist);
    PCM_Dist_local(dist, rank, NULL, NULL, &n);
    x = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (long i = 0; i < n; i++) x[i] = 1.0;
  }
  PCM_Register_dist("x", (void **)&x, PCM_DOUBLE, &dist); /* moved by every reconfiguration */
  PCM_Register_value("it", &it, PCM_INT, 1);              /* the same on every process */
  if (PCM_Resume(&world) != PCM_SUCCESS) return PCM_Finalize(world), 1;
  for (; it < 100; it++) {
    s = PCM_Adapt(&world); /* collective; cheap when nothing is pending */
    if (s == PCM_RETIRED) return PCM_Exit();
    if (s < 0) break; /* the same error on every process */
    MPI_Comm_rank(world, &rank);
    PCM_Dist_local(dist, rank, NULL, NULL, &n);
    for (long i = 0; i < n; i++) x[i] *= 0.5; /* compute and communicate on world */
  }
  if (PCM_Dist_owner(dist, 0, &s) == PCM_SUCCESS && s == rank &&
      PCM_Dist_segment(dist, rank, 0, &first, &count, &off) == PCM_SUCCESS) {
    printf("x[0] = %g\n", x[off]);
  }
  free(x);
  PCM_Dist_free(&dist);
  return PCM_Finalize(world) == PCM_SUCCESS ? 0 : 1;
}
