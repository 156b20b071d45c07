/* mpi_store_direct.c — the paper's PCM_Store/PCM_Load/PCM_Commit with keys large enough that a
 * rank seeing pcmd's data directory writes them itself (tests/integration/store_direct.sh).
 *   basic N:   each rank stores N doubles under "x" (and small keys through pcmd); rank 1 loads
 *              rank 0's uncommitted "x" bit for bit; versions 10 and 20 are committed; a store
 *              of rank 0 that fails half-way (RLIMIT_FSIZE) keeps its previous data and makes
 *              PCM_Commit refuse on every rank until it is stored again; version 30 is committed.
 *   loop N [FIRST [LAST]]: stores and commits N doubles a rank at every iteration (from FIRST,
 *              default 1) until LAST, or until killed.
 *   async N:   (PCM_STORE_ASYNC=1) versions 10, 20 made behind the application; a background write
 *              of rank 0 that fails (RLIMIT_FSIZE) fails the next PCM_Commit on every rank, naming
 *              its iteration (30); versions 50 and 60 are made (60 settled by PCM_Finalize).
 *   restart:   (PCM_RESTART=1) every rank checks every old rank's keys of the version bit for bit.
 * Prints "store_direct: ..." lines that the script checks; exits 1 on any mismatch. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "pcm.h"

#define DIE(...)                                      \
  do {                                                \
    fprintf(stderr, "store_direct: rank %d: ", rank); \
    fprintf(stderr, __VA_ARGS__);                     \
    fprintf(stderr, " (%s)\n", PCM_Last_error());     \
    PCM_Finalize(MPI_COMM_NULL);                      \
    exit(1);                                          \
  } while (0)

static int rank = -1;

/* The data of (seed, rank): every bit depends on both. */
static void fill(double *x, long n, int seed, int r) {
  for (long i = 0; i < n; i++) {
    unsigned long long v = (unsigned long long)seed * 0x9E3779B97F4A7C15ull ^
                           (unsigned long long)r * 0xC2B2AE3D27D4EB4Full ^ (unsigned long long)i;
    x[i] = (double)(v >> 11) / 1048576.0;
  }
}

static int same(const double *x, long n, int seed, int r) {
  double *want = malloc((size_t)n * sizeof *want);
  fill(want, n, seed, r);
  int ok = memcmp(want, x, (size_t)n * sizeof *x) == 0;
  free(want);
  return ok;
}

static void store_all(double *x, long n, int seed, int it) {
  fill(x, n, seed, rank);
  if (PCM_Store(rank, "x", x, PCM_DOUBLE, n) != PCM_SUCCESS ||
      PCM_Store(rank, "seed", &seed, PCM_INT, 1) != PCM_SUCCESS ||
      PCM_Store(rank, "it", &it, PCM_INT, 1) != PCM_SUCCESS)
    DIE("store of seed %d", seed);
}

static void basic(MPI_Comm world, long n) {
  double *x = malloc((size_t)n * sizeof *x);
  store_all(x, n, 1, 10);
  MPI_Barrier(world);
  /* Another process loads what rank 0 stored, before any commit (the paper's hand-over). */
  if (rank == 1) {
    PCM_Datatype type;
    long count;
    double *y = malloc((size_t)n * sizeof *y);
    if (PCM_Load_count(0, "x", &type, &count) != PCM_SUCCESS || type != PCM_DOUBLE || count != n)
      DIE("load_count of rank 0's x");
    if (PCM_Load(0, "x", y, PCM_DOUBLE, n) != PCM_SUCCESS || !same(y, n, 1, 0))
      DIE("rank 0's uncommitted x differs");
    free(y);
    printf("store_direct: rank 1 loaded rank 0's uncommitted x (%ld doubles) bit for bit\n", n);
  }
  if (PCM_Commit(world, 10) != PCM_SUCCESS) DIE("commit 10");
  store_all(x, n, 2, 20);
  if (PCM_Commit(world, 20) != PCM_SUCCESS) DIE("commit 20");

  /* A store that fails half-way: the file may grow to 1 MiB only. */
  fill(x, n, 3, rank);
  int failed = PCM_SUCCESS;
  if (rank == 0) {
    struct rlimit old, small;
    signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old);
    small = old;
    small.rlim_cur = 1 << 20;
    setrlimit(RLIMIT_FSIZE, &small);
    failed = PCM_Store(rank, "x", x, PCM_DOUBLE, n);
    setrlimit(RLIMIT_FSIZE, &old);
    if (failed == PCM_SUCCESS) DIE("a store larger than RLIMIT_FSIZE succeeded");
    double *y = malloc((size_t)n * sizeof *y);
    if (PCM_Load(0, "x", y, PCM_DOUBLE, n) != PCM_SUCCESS || !same(y, n, 2, 0))
      DIE("the failed store did not keep the previous data");
    free(y);
    printf("store_direct: a failed store (%s) kept the previous data\n", PCM_Error_string(failed));
  } else if (PCM_Store(rank, "x", x, PCM_DOUBLE, n) != PCM_SUCCESS) {
    DIE("store of seed 3");
  }
  int seed = 3, it = 30;
  if (PCM_Store(rank, "seed", &seed, PCM_INT, 1) != PCM_SUCCESS ||
      PCM_Store(rank, "it", &it, PCM_INT, 1) != PCM_SUCCESS)
    DIE("store");
  int rc = PCM_Commit(world, 30);
  if (rc != PCM_ERR_REFUSED) DIE("a commit after a failed store returned %d", rc);
  if (rank == 0) printf("store_direct: the commit after a failed store was refused\n");
  if (rank == 0 && PCM_Store(rank, "x", x, PCM_DOUBLE, n) != PCM_SUCCESS) DIE("store again");
  if (PCM_Commit(world, 30) != PCM_SUCCESS) DIE("commit 30");
  free(x);
  if (rank == 0) printf("store_direct: basic ok\n");
}

static void loop(MPI_Comm world, long n, int first, int last) {
  double *x = malloc((size_t)n * sizeof *x);
  for (int it = first; last <= 0 || it <= last; it++) {
    PCM_Status(world);
    store_all(x, n, it, it);
    if (PCM_Commit(world, it) != PCM_SUCCESS) DIE("commit %d", it);
  }
  free(x);
}

/* PCM_STORE_ASYNC=1: stores kept by the process, commits made behind it; a write that fails in
 * the background (rank 0's file may grow to 1 MiB only) fails the next PCM_Commit on every rank;
 * the key stored again, the job goes on; PCM_Finalize settles the last commit. */
static void async(MPI_Comm world, long n) {
  double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  store_all(x, n, 1, 10);
  /* A process's own load sees its newest store at once (kept in its memory). */
  if (PCM_Load(rank, "x", y, PCM_DOUBLE, n) != PCM_SUCCESS || !same(y, n, 1, rank))
    DIE("load of the kept x");
  if (PCM_Commit(world, 10) != PCM_SUCCESS) DIE("commit 10");
  store_all(x, n, 2, 20);
  if (PCM_Commit(world, 20) != PCM_SUCCESS) DIE("commit 20");
  struct rlimit old, small;
  getrlimit(RLIMIT_FSIZE, &old);
  store_all(x, n, 3, 30);
  if (rank == 0) { /* the background write of x fails */
    signal(SIGXFSZ, SIG_IGN);
    small = old;
    small.rlim_cur = 1 << 20;
    setrlimit(RLIMIT_FSIZE, &small);
  }
  if (PCM_Commit(world, 30) != PCM_SUCCESS) DIE("commit 30 (behind)");
  store_all(x, n, 4, 40);
  int rc = PCM_Commit(world, 40); /* reports 30's failure, starts nothing */
  if (rank == 0) setrlimit(RLIMIT_FSIZE, &old);
  if (rc != PCM_ERR_INTERNAL && rc != PCM_ERR_REFUSED && rc != PCM_ERR_NOSPACE)
    DIE("the commit after a failed background write returned %d", rc);
  if (!strstr(PCM_Last_error(), "iteration 30")) DIE("the error does not name iteration 30");
  if (rank == 0)
    printf("store_direct: a failed background write failed the next commit: %s\n",
           PCM_Last_error());
  store_all(x, n, 5, 50);
  if (PCM_Commit(world, 50) != PCM_SUCCESS) DIE("commit 50");
  store_all(x, n, 6, 60);
  if (PCM_Commit(world, 60) != PCM_SUCCESS) DIE("commit 60");
  free(x);
  free(y);
  if (rank == 0) printf("store_direct: async ok\n");
}

static void restarted(MPI_Comm world) {
  int iteration, nprocs;
  if (PCM_Restart_info(&iteration, &nprocs) != PCM_SUCCESS) DIE("restart info");
  long wrong = 0;
  for (int q = 0; q < nprocs; q++) {
    int seed, it;
    PCM_Datatype type;
    long n;
    if (PCM_Load(q, "seed", &seed, PCM_INT, 1) != PCM_SUCCESS ||
        PCM_Load(q, "it", &it, PCM_INT, 1) != PCM_SUCCESS ||
        PCM_Load_count(q, "x", &type, &n) != PCM_SUCCESS || type != PCM_DOUBLE)
      DIE("load of rank %d's keys", q);
    double *x = malloc((size_t)n * sizeof *x);
    if (PCM_Load(q, "x", x, PCM_DOUBLE, n) != PCM_SUCCESS) DIE("load of rank %d's x", q);
    wrong += (it != iteration) + !same(x, n, seed, q);
    free(x);
  }
  long all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, world);
  int size;
  MPI_Comm_size(world, &size);
  if (rank == 0)
    printf("store_direct: restarted from iteration %d (%d -> %d processes), %ld wrong\n", iteration,
           nprocs, size, all);
}

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  if (argc < 2) {
    fprintf(stderr, "usage: %s basic N | loop N [FIRST [LAST]] | async N | restart\n", argv[0]);
    return 2;
  }
  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) DIE("init");
  PCM_Comm_rank(world, &rank);
  long n = argc > 2 ? atol(argv[2]) : 0;
  if (strcmp(argv[1], "basic") == 0) {
    basic(world, n);
  } else if (strcmp(argv[1], "loop") == 0) {
    loop(world, n, argc > 3 ? atoi(argv[3]) : 1, argc > 4 ? atoi(argv[4]) : 0);
  } else if (strcmp(argv[1], "async") == 0) {
    async(world, n);
  } else if (PCM_Process_Status() == PCM_RESTARTED) {
    restarted(world);
  } else {
    DIE("not restarted");
  }
  PCM_Finalize(world);
  return 0;
}
