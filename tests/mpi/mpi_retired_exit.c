/* mpi_retired_exit.c MODE — a process that a merge retires ends the wrong way: MODE "finalize"
 * calls MPI_Finalize instead of PCM_Exit, MODE "return" returns from main. Either way it must
 * wait for the job's end without spinning, and the job must end cleanly. The retired process
 * prints the wall and CPU time its ending took; the survivor runs 100 iterations of 20 ms after
 * the merge. A failed start prints PCM's message and the code's string. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pcm.h"

static double t0_wall, t0_cpu;
static int returning = 0;

static double now(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void report(const char *how) {
  printf("retired: %s after %.2f s wall, %.2f s cpu\n", how, now(CLOCK_MONOTONIC) - t0_wall,
         now(CLOCK_PROCESS_CPUTIME_ID) - t0_cpu);
  fflush(stdout);
}

/* Registered first, so it runs after libpcm's own exit handler. */
static void at_exit(void) {
  if (returning) report("returned from main; ended");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "finalize";
  MPI_Comm world = MPI_COMM_WORLD;
  int it = 0, rc, s, after = -1;
  atexit(at_exit);
  if ((rc = MPI_PCM_Init(&argc, &argv)) != PCM_SUCCESS || (rc = PCM_Init(&world)) != PCM_SUCCESS) {
    printf("start failed: %s [%s]\n", PCM_Last_error(), PCM_Error_string(rc));
    fflush(stdout);
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  PCM_Register_value("it", &it, PCM_INT, 1);
  if (PCM_Resume(&world) != PCM_SUCCESS) return PCM_Finalize(world), 1;
  for (; it < 3000; it++) {
    s = PCM_Adapt(&world);
    if (s == PCM_RETIRED) {
      printf("retired: pid %ld, mode %s\n", (long)getpid(), mode);
      fflush(stdout);
      t0_wall = now(CLOCK_MONOTONIC);
      t0_cpu = now(CLOCK_PROCESS_CPUTIME_ID);
      if (strcmp(mode, "finalize") == 0) {
        rc = MPI_Finalize();
        report(rc == MPI_SUCCESS ? "MPI_Finalize returned" : "MPI_Finalize FAILED");
        return rc == MPI_SUCCESS ? 0 : 1;
      }
      returning = 1;
      return 0;
    }
    if (s < 0) {
      printf("PCM_Adapt failed: %s\n", PCM_Last_error());
      return PCM_Finalize(world), 1;
    }
    if (s == PCM_RESHAPED) after = it;
    if (after >= 0 && it - after >= 100) break;
    {
      const struct timespec pause = {0, 20 * 1000 * 1000};
      nanosleep(&pause, NULL);
    }
  }
  rc = PCM_Finalize(world);
  printf("survivor: %s at iteration %d\n", after >= 0 ? "done" : "never merged", it);
  return rc == PCM_SUCCESS && after >= 0 ? 0 : 1;
}
