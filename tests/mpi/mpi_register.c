/* mpi_register.c — MPI test of the register-once calls with several arrays of different types
 * and layouts, replicated and local values: whatever pcmd sends (migrate, split, merge, resize),
 * every process checks after every PCM_Adapt and PCM_Resume that each element it owns holds its
 * expected value for the iteration, and that the values came along.
 * Prints "register: ok: N reconfigurations, P processes, 0 wrong" from the last world's rank 0.
 * Usage: mpi_register ITERS [SLEEP_US].
 * With REGISTER_STOP_FILE set (for rank 0: spawned processes need not see it), the job also ends
 * at the first iteration where that file exists.
 * With REGISTER_DIE_ONCE=FILE, the new rank 1 of a split kills itself before PCM_Resume if it is
 * the first to create FILE: a new process lost during the split (tests/integration/
 * split_rollback.sh).
 * With REGISTER_STALL_FILE=FILE, the new rank 1 of every split waits before PCM_Resume until a
 * line is added to FILE (which must exist): the old world gives the split up when its bound
 * (PCM_RECONFIG_TIMEOUT_S) nears, and every new process ends at its verdict
 * (tests/integration/split_giveup_leak.sh). */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pcm.h"

/* Array a: doubles, block, halo 1; array b: ints, cyclic, no halo. */
#define A_UNITS 53
#define A_LEN 3
#define B_UNITS 41
#define B_LEN 2

static double a_value(long u, long i, int it) { return (double)(u * 10 + i + it); }
static int b_value(long u, long i, int it) { return (int)(u * 7 + i - it); }

/* Visits every owned element of buf (laid out by dist for rank): sets it to its value for
 * iteration it (set != 0) or counts those that differ. */
static long walk(void *buf, int is_a, PCM_Dist dist, int rank, int it, int set) {
  long nseg = 0, s, u, i, len, first, count, off, bad = 0;
  PCM_Dist_info(dist, NULL, NULL, NULL, &len, NULL, NULL);
  PCM_Dist_local(dist, rank, &nseg, NULL, NULL);
  for (s = 0; s < nseg; s++) {
    PCM_Dist_segment(dist, rank, s, &first, &count, &off);
    for (u = 0; u < count; u++)
      for (i = 0; i < len; i++) {
        long k = off + u * len + i;
        if (is_a) {
          double *e = (double *)buf + k;
          if (set)
            *e = a_value(first + u, i, it);
          else
            bad += *e != a_value(first + u, i, it);
        } else {
          int *e = (int *)buf + k;
          if (set)
            *e = b_value(first + u, i, it);
          else
            bad += *e != b_value(first + u, i, it);
        }
      }
  }
  return bad;
}

/* Waits until REGISTER_STALL_FILE has more lines than when this was called. */
static int lines_of(const char *path) {
  FILE *f = fopen(path, "r");
  int c, n = 0;
  if (!f) return -1;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}
static void stall(void) {
  const char *path = getenv("REGISTER_STALL_FILE");
  const struct timespec tick = {0, 10000000};
  int start = lines_of(path);
  while (start >= 0 && lines_of(path) == start) nanosleep(&tick, NULL);
}

/* Rank 0 prints who asked for reconfiguration n and why, as pcmd told the world (a process the
 * reconfiguration made received it from the old world). */
static void say_why(int rank, long long n) {
  char why[512];
  if (rank == 0 && PCM_Reconfig_reason(why, (int)sizeof why) == PCM_SUCCESS) {
    printf("register: reconfiguration %lld because: %s\n", n, why);
    fflush(stdout);
  }
}

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  PCM_Dist da = NULL, db = NULL;
  double *a = NULL;
  int *b = NULL;
  int it = 0, iters, rank, size, s, origin, reconfigs = 0;
  long long table[2] = {0, 0}; /* replicated: 7 and the reconfiguration count */
  long computed = 0;           /* local: iterations this process computed */
  long bad = 0, allbad, elements;
  struct timespec pause = {0, 0};

  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "register: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  iters = argc > 1 ? atoi(argv[1]) : 100;
  pause.tv_nsec = (argc > 2 ? atol(argv[2]) : 0) * 1000L;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  origin = PCM_Process_Status();
  if (origin == PCM_STARTED) {
    PCM_Dist_create(PCM_BLOCK, A_UNITS, A_LEN, 0, 1, size, &da);
    PCM_Dist_create(PCM_CYCLIC, B_UNITS, B_LEN, 0, 0, size, &db);
    PCM_Dist_local(da, rank, NULL, NULL, &elements);
    a = calloc((size_t)(elements > 0 ? elements : 1), sizeof *a);
    PCM_Dist_local(db, rank, NULL, NULL, &elements);
    b = calloc((size_t)(elements > 0 ? elements : 1), sizeof *b);
    walk(a, 1, da, rank, 0, 1);
    walk(b, 0, db, rank, 0, 1);
    table[0] = 7;
  }
  if (origin == PCM_SPLITTED && rank == 1 && getenv("REGISTER_STALL_FILE")) stall();
  if (origin == PCM_SPLITTED && rank == 1 && getenv("REGISTER_DIE_ONCE")) {
    int fd = open(getenv("REGISTER_DIE_ONCE"), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd >= 0) {
      close(fd);
      raise(SIGKILL);
    }
  }
  if (PCM_Register_dist("a", (void **)&a, PCM_DOUBLE, &da) != PCM_SUCCESS ||
      PCM_Register_value("it", &it, PCM_INT, 1) != PCM_SUCCESS ||
      PCM_Register_dist("b", (void **)&b, PCM_INT, &db) != PCM_SUCCESS ||
      PCM_Register_value("table", table, PCM_LONG_LONG, 2) != PCM_SUCCESS ||
      PCM_Register_local("computed", &computed, PCM_LONG, 1) != PCM_SUCCESS ||
      PCM_Resume(&world) != PCM_SUCCESS) {
    fprintf(stderr, "register: rank %d: %s\n", rank, PCM_Last_error());
    PCM_Finalize(world);
    return 1;
  }
  if (origin == PCM_SPLITTED && computed != 0) bad++; /* a split's processes start at zero */
  if (origin == PCM_MIGRATED || origin == PCM_SPLITTED) {
    table[1]++;
    say_why(rank, table[1]);
  }
  bad += walk(a, 1, da, rank, it, 0) + walk(b, 0, db, rank, it, 0);
  while (it < iters) {
    s = PCM_Adapt(&world); /* at the top of iteration it, as the old world's was */
    if (s == PCM_RETIRED) {
      if (a != NULL || b != NULL || da != NULL || db != NULL) {
        fprintf(stderr, "register: a retired process still holds its arrays\n");
        return 1;
      }
      return PCM_Exit();
    }
    if (s < 0) {
      fprintf(stderr, "register: PCM_Adapt: %s\n", PCM_Last_error());
      PCM_Finalize(world);
      return 1;
    }
    if (s == PCM_RESHAPED) {
      table[1]++;
      MPI_Comm_rank(world, &rank);
      say_why(rank, table[1]);
      bad += walk(a, 1, da, rank, it, 0) + walk(b, 0, db, rank, it, 0);
    }
    walk(a, 1, da, rank, it + 1, 1);
    walk(b, 0, db, rank, it + 1, 1);
    computed++;
    it++;
    if (pause.tv_nsec > 0) nanosleep(&pause, NULL);
    {
      const char *stop_file = getenv("REGISTER_STOP_FILE");
      int stop = rank == 0 && stop_file && access(stop_file, F_OK) == 0;
      MPI_Bcast(&stop, 1, MPI_INT, 0, world);
      if (stop) break;
    }
  }
  MPI_Comm_size(world, &size);
  bad += walk(a, 1, da, rank, it, 0) + walk(b, 0, db, rank, it, 0);
  if (table[0] != 7) bad++;
  /* A started process computed every iteration unless it moved; none computed more. */
  if (computed > iters) bad++;
  MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, world);
  reconfigs = (int)table[1];
  if (rank == 0) {
    printf("register: %s: %d reconfigurations, %d processes, %ld wrong\n",
           allbad == 0 ? "ok" : "FAIL", reconfigs, size, allbad);
    fflush(stdout);
  }
  free(a);
  free(b);
  PCM_Dist_free(&da);
  PCM_Dist_free(&db);
  PCM_Finalize(world);
  return allbad == 0 ? 0 : 1;
}
