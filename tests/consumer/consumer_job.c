/* consumer_job.c — a small PCM job built against an installed PCM: registers with pcmd, runs 50
 * iterations through PCM_Adapt, checks a value reduced over the world, finishes with pcmd. */
#include <mpi.h>
#include <pcm.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  int it = 0, rank = 0, size = 0, s = PCM_SUCCESS;
  long sum = 0;

  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "consumer_job: FAILED: %s\n", PCM_Last_error());
    return PCM_Finalize(MPI_COMM_NULL), 1;
  }
  PCM_Register_value("it", &it, PCM_INT, 1);
  PCM_Register_value("sum", &sum, PCM_LONG, 1);
  if (PCM_Resume(&world) != PCM_SUCCESS) return PCM_Finalize(world), 1;
  for (; it < 50; it++) {
    long mine = 0;
    s = PCM_Adapt(&world);
    if (s == PCM_RETIRED) return PCM_Exit();
    if (s < 0) break;
    MPI_Comm_rank(world, &rank);
    mine = rank + 1;
    long all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, world);
    sum += all;
  }
  MPI_Comm_size(world, &size);
  /* every iteration adds 1 + 2 + ... + size */
  const long want = 50L * size * (size + 1) / 2;
  if (s < 0 || sum != want) {
    fprintf(stderr, "consumer_job: FAILED: status %d, sum %ld, expected %ld\n", s, sum, want);
    return PCM_Finalize(world), 1;
  }
  if (rank == 0) printf("consumer_job: ok on %d processes\n", size);
  return PCM_Finalize(world) == PCM_SUCCESS ? 0 : 1;
}
