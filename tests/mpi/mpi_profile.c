/* mpi_profile.c ITERS — MPI test program for the profile (PCM_PROFILE_MS): every iteration,
 * after PCM_Status, each rank sends 1000 bytes to world rank r+1 (MPI_Isend, MPI_Irecv,
 * MPI_Waitall on the PCM world) and 24 bytes to world rank r-1 through a communicator whose ranks
 * are numbered backwards (MPI_Sendrecv): 4 MPI calls and 1024 bytes per iteration, sent to two
 * known ranks, so that every profile pcmd holds can be checked exactly
 * (tests/integration/profile.sh). Each iteration also sleeps 200 us, so that a run lasts long
 * enough for several profiles. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pcm.h"

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD, backwards;
  MPI_Request req[2];
  MPI_Status st[2];
  char out[1000] = {0}, in[1000], small_out[24] = {0}, small_in[24];
  int rank, size, it, iters = argc > 1 ? atoi(argv[1]) : 5000;
  struct timespec pause = {0, 200000};
  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "mpi_profile: %s\n", PCM_Last_error());
    return 1;
  }
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  MPI_Comm_split(world, 0, size - 1 - rank, &backwards);
  for (it = 0; it < iters; it++) {
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    /* In `backwards`, world rank w is size-1-w. */
    const int b_prev = size - 1 - prev, b_next = size - 1 - next;
    if (PCM_Status(world) < 0) {
      fprintf(stderr, "mpi_profile: PCM_Status: %s\n", PCM_Last_error());
      return 1;
    }
    MPI_Irecv(in, sizeof in, MPI_CHAR, prev, 0, world, &req[0]);
    MPI_Isend(out, sizeof out, MPI_CHAR, next, 0, world, &req[1]);
    MPI_Waitall(2, req, st);
    MPI_Sendrecv(small_out, sizeof small_out, MPI_CHAR, b_prev, 1, small_in, sizeof small_in,
                 MPI_CHAR, b_next, 1, backwards, MPI_STATUS_IGNORE);
    nanosleep(&pause, NULL);
  }
  MPI_Comm_free(&backwards);
  if (rank == 0) printf("mpi_profile: done %d iterations on %d processes\n", iters, size);
  return PCM_Finalize(world) == PCM_SUCCESS ? 0 : 1;
}
