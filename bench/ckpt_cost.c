/* ckpt_cost.c — benchmark: write a checkpoint of MB MiB of doubles spread over the processes, or,
 * in a run started with PCM_RESTART=1, read it back; prints the time and throughput from rank 0.
 * Usage: ckpt_cost MB [shards|store|wait] [VERSIONS] [GAP]
 *   shards (default): PCM_Register_dist + PCM_Checkpoint; the restart is PCM_Resume (each rank
 *                     reads its share from the shards, verifying every chunk it touches);
 *                     VERSIONS (1) versions are written one after the other, each timed;
 *                     with CKPT_RAW_DIR set, each is paired with the baseline: every rank
 *                     write()s its share to a raw file there and fsyncs it; the restart
 *                     then also read()s the raw files back into new memory;
 *   store [GAP]:      the paper's PCM_Store of each rank's share + PCM_Commit (VERSIONS
 *                     versions, each timed, GAP (0) seconds of computing between them: passes
 *                     reading the array, PCM_Status at the top of each), and PCM_Load back: the
 * ranks write the keys themselves where they see pcmd's data directory, every byte goes through
 *                     pcmd with PCM_CHECKPOINT_DIRECT=0;
 *   wait GAP:         what the application waits for: VERSIONS versions, each PCM_Checkpoint call
 *                     timed, with GAP seconds of computing (iterations of one pass over the
 *                     array, each beginning with PCM_Adapt) between them,
 *                     and the last version's PCM_Checkpoint_wait; background or not as
 *                     PCM_CHECKPOINT_ASYNC says. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pcm.h"

#define UNIT 1024L /* doubles per unit of the map */

static int fail(const char *what) {
  fprintf(stderr, "ckpt_cost: %s: %s\n", what, PCM_Last_error());
  return 1;
}

/* Every element of this rank's share holds its global index. */
static int check(PCM_Dist dist, const double *x, int rank) {
  long nseg, s, first, units, offset, k;
  PCM_Dist_local(dist, rank, &nseg, NULL, NULL);
  for (s = 0; s < nseg; s++) {
    PCM_Dist_segment(dist, rank, s, &first, &units, &offset);
    for (k = 0; k < units * UNIT; k++)
      if (x[offset + k] != (double)(first * UNIT + k)) return 0;
  }
  return 1;
}

/* The application computes between versions: passes reading its array (x, n elements), each
 * beginning with PCM_Adapt (adapt) or PCM_Status as an instrumented solver's iteration does,
 * until gap seconds have gone by on rank 0's clock (every rank makes the same passes). Adds to
 * *sum; -1 if the PCM call failed. */
static int compute(MPI_Comm *world, double gap, int adapt, const double *x, long n, double *sum) {
  double t0 = MPI_Wtime();
  for (;;) {
    int go = MPI_Wtime() - t0 < gap;
    MPI_Bcast(&go, 1, MPI_INT, 0, *world);
    if (!go) return 0;
    if ((adapt ? PCM_Adapt(world) : PCM_Status(*world)) < 0) {
      fail(adapt ? "PCM_Adapt" : "PCM_Status");
      return -1;
    }
    for (long k = 0; k < n; k++) *sum += x[k];
  }
}

static int run_store(MPI_Comm world, long mb, int rank, int size, int versions, double gap) {
  long n = mb * 1024 * 1024 / 8 / size, k;
  double *x = malloc((size_t)n * sizeof(double)), t0, t1, t2, sum = 0;
  int v;
  if (PCM_Process_Status() == PCM_RESTARTED) {
    MPI_Barrier(world);
    t0 = MPI_Wtime();
    if (PCM_Load(rank, "x", x, PCM_DOUBLE, n) != PCM_SUCCESS) return fail("PCM_Load");
    MPI_Barrier(world);
    t1 = MPI_Wtime();
    for (k = 0; k < n; k++)
      if (x[k] != (double)(rank * n + k)) {
        fprintf(stderr, "ckpt_cost: wrong data\n");
        return 1;
      }
    if (rank == 0)
      printf("ckpt_cost: read %ld MiB with %d processes (store): %.3f s, %.3f GB/s\n", mb, size,
             t1 - t0, (double)n * size * 8 / (t1 - t0) / 1e9);
  } else {
    for (k = 0; k < n; k++) x[k] = (double)(rank * n + k);
    for (v = 1; v <= versions; v++) {
      MPI_Barrier(world);
      t0 = MPI_Wtime();
      if (PCM_Store(rank, "x", x, PCM_DOUBLE, n) != PCM_SUCCESS) return fail("PCM_Store");
      MPI_Barrier(world);
      t1 = MPI_Wtime();
      if (PCM_Commit(world, v) != PCM_SUCCESS) return fail("PCM_Commit");
      t2 = MPI_Wtime();
      if (rank == 0)
        printf(
            "ckpt_cost: wrote %ld MiB with %d processes (store): %.3f s (store %.3f s + commit "
            "%.3f s), %.3f GB/s\n",
            mb, size, t2 - t0, t1 - t0, t2 - t1, (double)n * size * 8 / (t2 - t0) / 1e9);
      if (compute(&world, gap, 0, x, n, &sum) < 0) return 1;
    }
    if (rank == 0 && gap > 0) printf("ckpt_cost: (sum %g)\n", sum > 0 ? 1.0 : 0.0);
  }
  free(x);
  return 0;
}

/* The raw-file baseline: this rank's bytes into (or from) CKPT_RAW_DIR/raw.RANK with plain
 * write()+fsync (or read() into new memory). Returns the seconds taken by the slowest rank, or
 * -1 when CKPT_RAW_DIR is not set. */
static double raw_io(MPI_Comm world, int rank, const char *data, size_t n, int writing) {
  const char *dir = getenv("CKPT_RAW_DIR");
  char path[4096];
  double t0, t;
  char *into = NULL;
  size_t done = 0;
  int fd;
  if (!dir) return -1;
  snprintf(path, sizeof path, "%s/raw.%d", dir, rank);
  MPI_Barrier(world);
  t0 = MPI_Wtime();
  fd = writing ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600) : open(path, O_RDONLY);
  if (fd >= 0) {
    if (!writing) into = malloc(n);
    while (done < n) {
      ssize_t k = writing ? write(fd, data + done, n - done) : read(fd, into + done, n - done);
      if (k <= 0) break;
      done += (size_t)k;
    }
    if (writing) fsync(fd);
    close(fd);
  }
  t = MPI_Wtime() - t0;
  free(into);
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, world);
  return done == n ? t : -1;
}

static int run_shards(MPI_Comm *world, long mb, int versions) {
  long units = mb * 1024 * 1024 / 8 / UNIT, nseg, s, first, nunits, offset, k, elements;
  int rank, size, it = 0;
  double *x = NULL, t0, t1, raw;
  PCM_Dist dist = NULL;
  MPI_Comm_rank(*world, &rank);
  MPI_Comm_size(*world, &size);
  if (PCM_Process_Status() == PCM_STARTED) {
    if (PCM_Dist_create(PCM_BLOCK, units, UNIT, 1, 0, size, &dist) != PCM_SUCCESS)
      return fail("PCM_Dist_create");
    PCM_Dist_local(dist, rank, &nseg, NULL, &elements);
    x = malloc((size_t)elements * sizeof(double));
    for (s = 0; s < nseg; s++) {
      PCM_Dist_segment(dist, rank, s, &first, &nunits, &offset);
      for (k = 0; k < nunits * UNIT; k++) x[offset + k] = (double)(first * UNIT + k);
    }
  }
  if (PCM_Register_dist("x", (void **)&x, PCM_DOUBLE, &dist) != PCM_SUCCESS ||
      PCM_Register_value("it", &it, PCM_INT, 1) != PCM_SUCCESS)
    return fail("PCM_Register");
  if (PCM_Process_Status() == PCM_RESTARTED) {
    MPI_Barrier(*world);
    t0 = MPI_Wtime();
    if (PCM_Resume(world) != PCM_SUCCESS) return fail("PCM_Resume");
    MPI_Barrier(*world);
    t1 = MPI_Wtime();
    if (it < 1 || !check(dist, x, rank)) {
      fprintf(stderr, "ckpt_cost: wrong data\n");
      return 1;
    }
    PCM_Dist_local(dist, rank, NULL, NULL, &elements);
    raw = raw_io(*world, rank, NULL, (size_t)elements * sizeof(double), 0);
    if (rank == 0)
      printf(
          "ckpt_cost: read %ld MiB with %d processes (shards): %.4f s, %.3f GB/s; raw read() "
          "%.3f s\n",
          mb, size, t1 - t0, (double)units * UNIT * 8 / (t1 - t0) / 1e9, raw);
  } else {
    if (PCM_Resume(world) != PCM_SUCCESS) return fail("PCM_Resume");
    for (it = 1; it <= versions; it++) {
      MPI_Barrier(*world);
      t0 = MPI_Wtime();
      if (PCM_Checkpoint(*world, it) != PCM_SUCCESS) return fail("PCM_Checkpoint");
      t1 = MPI_Wtime();
      PCM_Dist_local(dist, rank, NULL, NULL, &elements);
      raw = raw_io(*world, rank, (const char *)x, (size_t)elements * sizeof(double), 1);
      if (rank == 0)
        printf(
            "ckpt_cost: wrote %ld MiB with %d processes (shards): %.4f s, %.3f GB/s; raw "
            "write()+fsync %.3f s\n",
            mb, size, t1 - t0, (double)units * UNIT * 8 / (t1 - t0) / 1e9, raw);
    }
  }
  free(x);
  PCM_Dist_free(&dist);
  return 0;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int run_wait(MPI_Comm *world, long mb, int versions, double gap) {
  long units = mb * 1024 * 1024 / 8 / UNIT, elements, k;
  int rank, size, it = 0, v;
  double *x = NULL, *waits = malloc((size_t)versions * sizeof(double)), t0, t1, sum = 0, last;
  PCM_Dist dist = NULL;
  const char *async = getenv("PCM_CHECKPOINT_ASYNC");
  MPI_Comm_rank(*world, &rank);
  MPI_Comm_size(*world, &size);
  if (PCM_Dist_create(PCM_BLOCK, units, UNIT, 1, 0, size, &dist) != PCM_SUCCESS)
    return fail("PCM_Dist_create");
  PCM_Dist_local(dist, rank, NULL, NULL, &elements);
  x = malloc((size_t)elements * sizeof(double));
  for (k = 0; k < elements; k++) x[k] = (double)k;
  if (PCM_Register_dist("x", (void **)&x, PCM_DOUBLE, &dist) != PCM_SUCCESS ||
      PCM_Register_value("it", &it, PCM_INT, 1) != PCM_SUCCESS || PCM_Resume(world) != PCM_SUCCESS)
    return fail("PCM_Register");
  for (v = 0; v < versions; v++) {
    it = v + 1;
    MPI_Barrier(*world);
    t0 = MPI_Wtime();
    if (PCM_Checkpoint(*world, it) != PCM_SUCCESS) return fail("PCM_Checkpoint");
    t1 = MPI_Wtime() - t0;
    MPI_Allreduce(&t1, &waits[v], 1, MPI_DOUBLE, MPI_MAX, *world);
    if (compute(world, gap, 1, x, elements, &sum) < 0) return 1;
  }
  MPI_Barrier(*world);
  t0 = MPI_Wtime();
  if (PCM_Checkpoint_wait(*world) != PCM_SUCCESS) return fail("PCM_Checkpoint_wait");
  t1 = MPI_Wtime() - t0;
  MPI_Allreduce(&t1, &last, 1, MPI_DOUBLE, MPI_MAX, *world);
  if (rank == 0) {
    printf("ckpt_cost: waits %ld MiB with %d processes (%s):", mb, size,
           async && strcmp(async, "0") == 0 ? "sync" : "async");
    for (v = 0; v < versions; v++) printf(" %.4f", waits[v]);
    qsort(waits, (size_t)versions, sizeof *waits, compare_doubles);
    printf("; median %.4f s; last wait %.4f s (sum %g)\n", waits[versions / 2], last,
           sum > 0 ? 1.0 : 0.0);
  }
  free(waits);
  free(x);
  PCM_Dist_free(&dist);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank, size, rc;
  long mb = argc > 1 ? atol(argv[1]) : 64;
  const char *path = argc > 2 ? argv[2] : "shards";
  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "ckpt_cost: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (strcmp(path, "store") == 0)
    rc = run_store(world, mb, rank, size, argc > 3 ? atoi(argv[3]) : 1,
                   argc > 4 ? atof(argv[4]) : 0);
  else if (strcmp(path, "wait") == 0)
    rc = run_wait(&world, mb, argc > 3 ? atoi(argv[3]) : 5, argc > 4 ? atof(argv[4]) : 2.0);
  else
    rc = run_shards(&world, mb, argc > 3 ? atoi(argv[3]) : 1);
  PCM_Finalize(world);
  return rc;
}
