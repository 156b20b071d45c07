/* overlap_cost.c — benchmark: the application-visible cost of a split under PCM_Adapt, with the
 * spawn overlapping the loop (PCM_OVERLAP=1) or not. MB MiB of doubles are registered (block
 * layout, units of 1024 doubles, each element holding its global index); every iteration sleeps
 * WORK_US microseconds (a stand-in for computing that does not slow down when the world outgrows
 * the cores) and agrees with one MPI_Allreduce. Rank 0 of every world prints, for each iteration,
 * the CLOCK_REALTIME epoch at its top (before PCM_Adapt) and the seconds PCM_Adapt took:
 *   overlap_cost: it IT t EPOCH adapt SECONDS procs N
 * (the old world's rank 0 prints the line of the iteration it retires at too, with its size: the
 * new world's rank 0 then prints one of the same iteration).
 * Once the job ends (ITERS, or STOP_FILE seen by rank 0), every rank checks every element it holds
 * and rank 0 prints "overlap_cost: ok: P processes, W wrong"; exit 1 if any is wrong.
 * Usage: overlap_cost MB ITERS WORK_US [STOP_FILE] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pcm.h"

#define UNIT 1024L /* doubles per unit */

static double epoch(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int die(const char *what) {
  fprintf(stderr, "overlap_cost: %s: %s\n", what, PCM_Last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

/* Sets every element rank owns to its global index (fill) or counts those that differ. */
static long walk(double *buf, PCM_Dist dist, int rank, int fill) {
  long nseg = 0, s, first, units, off, i, bad = 0;
  PCM_Dist_local(dist, rank, &nseg, NULL, NULL);
  for (s = 0; s < nseg; s++) {
    PCM_Dist_segment(dist, rank, s, &first, &units, &off);
    for (i = 0; i < units * UNIT; i++) {
      if (fill)
        buf[off + i] = (double)(first * UNIT + i);
      else
        bad += buf[off + i] != (double)(first * UNIT + i);
    }
  }
  return bad;
}

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  PCM_Dist dist = NULL;
  double *buf = NULL;
  long mb = argc >= 4 ? atol(argv[1]) : 0, units = mb * 1024 * 1024 / 8 / UNIT, elements = 0;
  int iters = argc >= 4 ? atoi(argv[2]) : 0, work_us = argc >= 4 ? atoi(argv[3]) : 0;
  const char *stop_file = argc >= 5 ? argv[4] : NULL;
  int it = 0, rank, size, s, stop = 0;
  long bad, all;
  if (mb <= 0 || iters <= 0 || work_us < 0) {
    fprintf(stderr, "usage: overlap_cost MB ITERS WORK_US [STOP_FILE]\n");
    return 2;
  }
  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "overlap_cost: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  PCM_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (PCM_Process_Status() == PCM_STARTED) {
    if (PCM_Dist_create(PCM_BLOCK, units, UNIT, 0, 0, size, &dist) != PCM_SUCCESS)
      return die("PCM_Dist_create");
    PCM_Dist_local(dist, rank, NULL, NULL, &elements);
    buf = malloc((size_t)(elements > 0 ? elements : 1) * sizeof(double));
    if (!buf) return die("malloc");
    walk(buf, dist, rank, 1);
  }
  if (PCM_Register_dist("a", (void **)&buf, PCM_DOUBLE, &dist) != PCM_SUCCESS ||
      PCM_Register_value("it", &it, PCM_INT, 1) != PCM_SUCCESS)
    return die("PCM_Register");
  if (PCM_Resume(&world) != PCM_SUCCESS) return die("PCM_Resume");
  /* A process spawned by a split resumes at the old world's iteration: its first PCM_Adapt is the
   * one the old world has made already (it returns at once). */
  for (; it < iters && !stop; it++) {
    struct timespec w = {work_us / 1000000, (long)(work_us % 1000000) * 1000};
    double t = epoch(), a;
    s = PCM_Adapt(&world);
    a = epoch() - t;
    if (s == PCM_RETIRED) { /* the old world's line of the switch's iteration */
      if (rank == 0) printf("overlap_cost: it %d t %.6f adapt %.6f procs %d\n", it, t, a, size);
      fflush(stdout);
      return PCM_Exit() == PCM_SUCCESS ? 0 : 1;
    }
    if (s < 0) return die("PCM_Adapt");
    PCM_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    if (rank == 0) printf("overlap_cost: it %d t %.6f adapt %.6f procs %d\n", it, t, a, size);
    nanosleep(&w, NULL);
    if (rank == 0 && stop_file) stop = access(stop_file, F_OK) == 0;
    MPI_Allreduce(MPI_IN_PLACE, &stop, 1, MPI_INT, MPI_MAX, world);
  }
  bad = walk(buf, dist, rank, 0);
  MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, world);
  if (rank == 0) printf("overlap_cost: ok: %d processes, %ld wrong\n", size, all);
  fflush(stdout);
  free(buf);
  PCM_Dist_free(&dist);
  PCM_Finalize(world);
  return all != 0;
}
