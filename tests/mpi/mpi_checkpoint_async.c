/* mpi_checkpoint_async.c — MPI test of PCM_Checkpoint's background writing (POSIX: raise).
 * Usage: mpi_checkpoint_async MODE [UNITS]
 *   write: a loop of 60 iterations over a registered array (UNITS units of 64 doubles, block map)
 *          whose every element is a function of its index and the iteration, changed right after
 *          each PCM_Checkpoint returns. Versions at 10, 20, 30, 40; each waited for only where the
 *          mode says. With PCM_TEST_SHARD_FAIL=20:<last rank>, version 20 must fail: in the
 *          background (PCM_CHECKPOINT_ASYNC unset) PCM_Checkpoint(20) succeeds and the next
 *          PCM_Checkpoint_wait reports the failure with the same code on every rank; with
 *          PCM_CHECKPOINT_ASYNC=0, PCM_Checkpoint(20) itself does. Version 40 is left to
 *          PCM_Finalize.
 *   kill:  as write, but every process kills itself (SIGKILL) right after PCM_Checkpoint(40)
 *          returns, while that version is (most likely) still being written in the background.
 *   check [MIN]: a restarted run (PCM_RESTART=1, any process count): the version restored is
 *          40 (or, with MIN, any from MIN up), and every element holds its value of that
 *          iteration.
 * Prints "async: ok" from rank 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcm.h"

#define UNIT_LEN 64

static double value(long unit, long i, int it) {
  return (double)unit * 1000.0 + (double)i + it * 0.5;
}

/* Sets (set != 0) or checks every owned element for iteration it; returns the mismatches. */
static long walk(double *buf, PCM_Dist dist, int rank, int it, int set) {
  long nseg = 0, s, u, i, first, count, off, bad = 0;
  PCM_Dist_local(dist, rank, &nseg, NULL, NULL);
  for (s = 0; s < nseg; s++) {
    PCM_Dist_segment(dist, rank, s, &first, &count, &off);
    for (u = 0; u < count; u++)
      for (i = 0; i < UNIT_LEN; i++) {
        double *e = buf + off + u * UNIT_LEN + i;
        if (set)
          *e = value(first + u, i, it);
        else
          bad += *e != value(first + u, i, it);
      }
  }
  return bad;
}

/* Whether every rank's last error gives the same reason (the failed rank's own text; the others'
 * begin "on rank R: "). */
static int same_everywhere(const char *text, MPI_Comm comm) {
  const char *why = strstr(text, "PCM_TEST_SHARD_FAIL: the shard of rank");
  unsigned long h = 5381, lo, hi;
  for (; why && *why; why++) h = h * 33u + (unsigned char)*why;
  if (!why) h = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG, MPI_MIN, comm);
  MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG, MPI_MAX, comm);
  return lo == hi && lo != 0;
}

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  PCM_Dist dist = NULL;
  double *a = NULL;
  int it = 0, rank, size, rc, failures = 0, all, background;
  long units, elements;
  const char *mode = argc > 1 ? argv[1] : "write";
  const char *fail = getenv("PCM_TEST_SHARD_FAIL");
  const char *async = getenv("PCM_CHECKPOINT_ASYNC");
  background = !(async && strcmp(async, "0") == 0);
  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "async: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  units = argc > 2 ? atol(argv[2]) : 4096;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (PCM_Process_Status() == PCM_STARTED) {
    PCM_Dist_create(PCM_BLOCK, units, UNIT_LEN, 0, 0, size, &dist);
    PCM_Dist_local(dist, rank, NULL, NULL, &elements);
    a = malloc((size_t)(elements > 0 ? elements : 1) * sizeof *a);
    walk(a, dist, rank, 0, 1);
  }
  if (PCM_Register_dist("a", (void **)&a, PCM_DOUBLE, &dist) != PCM_SUCCESS ||
      PCM_Register_value("it", &it, PCM_INT, 1) != PCM_SUCCESS ||
      PCM_Resume(&world) != PCM_SUCCESS) {
    fprintf(stderr, "async: rank %d: %s\n", rank, PCM_Last_error());
    PCM_Finalize(world);
    return 1;
  }
  MPI_Comm_rank(world, &rank);
  if (strcmp(mode, "check") == 0) {
    int from = -1, min = argc > 3 ? atoi(argv[3]) : 40;
    PCM_Restart_info(&from, NULL);
    if (it != from || from < min || from > 40 || from % 10 != 0) {
      fprintf(stderr, "async: rank %d restarted at iteration %d (version %d), expected %d-40\n",
              rank, it, from, min);
      failures++;
    } else if (rank == 0) {
      printf("async: restarted from version %d\n", from);
    }
    failures += (int)walk(a, dist, rank, from, 0);
  } else {
    for (; it < 60; it++) {
      if (PCM_Adapt(&world) < 0) failures++;
      walk(a, dist, rank, it, 1);
      if (it % 10 != 0 || it == 0 || it > 40) continue;
      rc = PCM_Checkpoint(world, it);
      if (it == 40 && strcmp(mode, "kill") == 0) raise(SIGKILL);
      /* The data the version holds is the data at the call: change it at once. */
      walk(a, dist, rank, it + 1000, 1);
      if (it == 20 && fail && !background) {
        if (rc != PCM_ERR_INTERNAL || !same_everywhere(PCM_Last_error(), world)) {
          fprintf(stderr, "async: rank %d: PCM_Checkpoint(20) gave %d (%s)\n", rank, rc,
                  PCM_Last_error());
          failures++;
        }
        continue;
      }
      if (rc != PCM_SUCCESS) {
        fprintf(stderr, "async: rank %d: PCM_Checkpoint(%d): %s\n", rank, it, PCM_Last_error());
        failures++;
      }
      if (it == 20 || it == 30) {
        rc = PCM_Checkpoint_wait(world);
        if (it == 20 && fail) {
          if (rc != PCM_ERR_INTERNAL || !same_everywhere(PCM_Last_error(), world)) {
            fprintf(stderr, "async: rank %d: the wait for version 20 gave %d (%s)\n", rank, rc,
                    PCM_Last_error());
            failures++;
          } else if (rank == 0) {
            printf("async: version 20 failed as asked: %s\n", PCM_Last_error());
          }
        } else if (rc != PCM_SUCCESS) {
          fprintf(stderr, "async: rank %d: wait after %d: %s\n", rank, it, PCM_Last_error());
          failures++;
        }
        if (PCM_Checkpoint_wait(world) != PCM_SUCCESS) failures++; /* nothing in flight */
      }
    }
  }
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, world);
  if (rank == 0) printf("async: %s (%d failures)\n", all == 0 ? "ok" : "FAIL", all);
  fflush(stdout);
  PCM_Finalize(world);
  return all == 0 ? 0 : 1;
}
