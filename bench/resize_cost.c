/* resize_cost.c — benchmark: moving MB MiB of doubles between process counts live, against
 * stopping and restarting at the new count. Every element holds its global index; the array is
 * cut into units of 1024 doubles (8 KiB), block layout. Three ways to move it (MODE):
 *   live  under pcmd: each `pcmctl resize` becomes a PCM_Split or a PCM_Merge (the paper's
 *         calls), until DIR/stop exists. Old rank 0 prints "start" when PCM_Status has returned
 *         the command.
 *   adapt the same with the register-once calls: the array registered, PCM_Adapt every
 *         iteration; a `pcmctl migrate` too (the replacement reports with the others). Old
 *         rank 0 prints "start" with the time it entered the PCM_Adapt call that
 *         carried the command out (it returns PCM_RESHAPED, or PCM_RETIRED to the old world of a
 *         split).
 *   ckpt  a started job registers the array, prints "start", checkpoints it (PCM_Checkpoint:
 *         every rank writes its shard, pcmd commits) and exits; started again with PCM_RESTART=1
 *         (and the same PCM_JOB) at another count, PCM_Resume reads its share from the shards.
 *   raw   plain MPI and POSIX (no pcmd, no HDF5): a started job prints "start", each rank writes
 *         its block to DIR/rank-R.bin (write, fsync; then rank 0 fsyncs DIR) and exits; started
 *         again with PCM_RESTART=1 at another count, each rank preads the ranges it needs.
 * In the new world, once every rank holds its data (a barrier), rank 0 prints "ready"; then every
 * rank checks every element it holds (not timed). Times are CLOCK_REALTIME epochs, since the two
 * ends are printed by different processes:
 *   resize_cost: start EPOCH it IT
 *   resize_cost: ready EPOCH it IT procs N wrong W
 * IT (the iteration of the command; 0 for restarts) pairs the two lines. Exits 1 if any element
 * is wrong. Usage: resize_cost MB live|adapt|ckpt|raw DIR */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pcm.h"

#define UNIT 1024L /* doubles per unit */

static double epoch(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, const char *why) {
  fprintf(stderr, "resize_cost: %s: %s\n", what, why);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void ok(int rc, const char *what) {
  if (rc != PCM_SUCCESS) die(what, PCM_Last_error());
}

static double *alloc(long elements) {
  double *x = malloc((size_t)(elements > 0 ? elements : 1) * sizeof(double));
  if (!x) die("malloc", "out of memory");
  return x;
}

static void start(int it) {
  printf("resize_cost: start %.6f it %d\n", epoch(), it);
  fflush(stdout);
}

/* Fills x[0..n) with first, first + 1, ... (fill), or counts the elements that differ. */
static long span(double *x, long first, long n, int fill) {
  long i, bad = 0;
  for (i = 0; i < n; i++) {
    if (fill)
      x[i] = (double)(first + i);
    else
      bad += x[i] != (double)(first + i);
  }
  return bad;
}

/* span over every segment that rank owns in dist. */
static long walk(double *buf, PCM_Dist dist, int rank, int fill) {
  long nseg, s, first, units, off, bad = 0;
  PCM_Dist_local(dist, rank, &nseg, NULL, NULL);
  for (s = 0; s < nseg; s++) {
    PCM_Dist_segment(dist, rank, s, &first, &units, &off);
    bad += span(buf + off, first * UNIT, units * UNIT, fill);
  }
  return bad;
}

/* The new world's data is in place once every rank has its own: the epoch of that moment. */
static double arrived(MPI_Comm world) {
  MPI_Barrier(world);
  return epoch();
}

/* After arrived(): sums the wrong elements (bad, per rank) and has rank 0 print "ready" with the
 * epoch t. Returns 1 if any element is wrong. Collective over world. */
static int report(MPI_Comm world, double t, int it, long bad) {
  int rank, size;
  long all;
  MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, world);
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (rank == 0) {
    printf("resize_cost: ready %.6f it %d procs %d wrong %ld\n", t, it, size, all);
    fflush(stdout);
  }
  return all != 0;
}

/* A block map of units over size processes and a buffer for rank's part; returns its length. */
static long create(long units, int size, int rank, PCM_Dist *dist, double **buf) {
  long elements;
  ok(PCM_Dist_create(PCM_BLOCK, units, UNIT, 0, 0, size, dist), "PCM_Dist_create");
  PCM_Dist_local(*dist, rank, NULL, NULL, &elements);
  *buf = alloc(elements);
  return elements;
}

/* The end of an iteration of live and adapt: 1 ms of "work", then whether DIR/stop exists (rank 0
 * looks, everyone learns). Collective over world. */
static int iteration_ends(MPI_Comm world, int rank, const char *stop_path) {
  struct timespec ms = {0, 1000000};
  int stop = 0;
  nanosleep(&ms, NULL);
  if (rank == 0) stop = access(stop_path, F_OK) == 0;
  MPI_Bcast(&stop, 1, MPI_INT, 0, world);
  return stop;
}

/* live: runs under pcmd, splitting and merging as told, until DIR/stop exists. */
static int live(MPI_Comm world, long units, const char *dir, const char *self) {
  PCM_Dist dist = NULL;
  double *buf = NULL, t;
  int rank, size, it = 0, s, stop = 0, bad = 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/stop", dir);
  PCM_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (PCM_Process_Status() == PCM_SPLITTED) { /* spawned by a split: receive the data */
    ok(PCM_Split((void **)&buf, PCM_DOUBLE, &dist, &it, &rank, &size, &world, self), "PCM_Split");
    t = arrived(world);
    bad |= report(world, t, it, walk(buf, dist, rank, 0));
    it++; /* the old world has made this iteration's PCM_Status */
  } else {
    create(units, size, rank, &dist, &buf);
    walk(buf, dist, rank, 1);
  }
  for (; !stop; it++) {
    s = PCM_Status(world);
    if (s == PCM_SPLIT || s == PCM_MERGE) {
      if (rank == 0) start(it);
      if (s == PCM_SPLIT)
        ok(PCM_Split((void **)&buf, PCM_DOUBLE, &dist, &it, &rank, &size, &world, self),
           "PCM_Split");
      else
        ok(PCM_Merge((void **)&buf, PCM_DOUBLE, &dist, &it, &rank, &size, &world), "PCM_Merge");
      if (world == MPI_COMM_NULL) return PCM_Exit() == PCM_SUCCESS ? 0 : 1; /* retired */
      t = arrived(world);
      bad |= report(world, t, it, walk(buf, dist, rank, 0));
    } else if (s != PCM_NONE) {
      die("PCM_Status",
          s == PCM_ERROR ? PCM_Last_error() : "a command this benchmark does not expect");
    }
    stop = iteration_ends(world, rank, path);
  }
  free(buf);
  PCM_Dist_free(&dist);
  PCM_Finalize(world);
  return bad;
}

/* adapt: live's moves through the register-once calls; until DIR/stop exists. */
static int adapt(MPI_Comm world, long units, const char *dir) {
  PCM_Dist dist = NULL;
  double *buf = NULL, t0;
  int rank, size, it = 0, s, stop = 0, bad = 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/stop", dir);
  PCM_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (PCM_Process_Status() == PCM_STARTED) {
    create(units, size, rank, &dist, &buf);
    walk(buf, dist, rank, 1);
  }
  ok(PCM_Register_dist("buf", (void **)&buf, PCM_DOUBLE, &dist), "PCM_Register_dist");
  ok(PCM_Register_value("it", &it, PCM_INT, 1), "PCM_Register_value");
  ok(PCM_Resume(&world), "PCM_Resume");
  if (PCM_Process_Status() != PCM_STARTED) { /* spawned by a split or a migration: data here */
    double t = arrived(world);
    PCM_Comm_rank(world, &rank);
    bad |= report(world, t, it, walk(buf, dist, rank, 0));
  }
  for (; !stop; it++) {
    t0 = epoch();
    s = PCM_Adapt(&world);
    if (s == PCM_RESHAPED || s == PCM_RETIRED) {
      if (rank == 0) { /* the old world's rank 0 */
        printf("resize_cost: start %.6f it %d\n", t0, it);
        fflush(stdout);
      }
      if (s == PCM_RETIRED) return PCM_Exit() == PCM_SUCCESS ? 0 : 1;
      double t = arrived(world);
      PCM_Comm_rank(world, &rank);
      bad |= report(world, t, it, walk(buf, dist, rank, 0));
    } else if (s != PCM_NONE) {
      die("PCM_Adapt",
          s == PCM_ERROR ? PCM_Last_error() : "a result this benchmark does not expect");
    }
    stop = iteration_ends(world, rank, path);
  }
  PCM_Finalize(world);
  free(buf);
  PCM_Dist_free(&dist);
  return bad;
}

/* ckpt: register the array, checkpoint it (PCM_Checkpoint: every rank writes its shard) and exit;
 * or, restarted, PCM_Resume reads this run's share at its process count. */
static int ckpt(MPI_Comm world, long units) {
  PCM_Dist dist = NULL;
  double *buf = NULL, t;
  int rank, size, bad = 0;
  const int restarted = PCM_Process_Status() == PCM_RESTARTED;
  PCM_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (!restarted) {
    create(units, size, rank, &dist, &buf);
    walk(buf, dist, rank, 1);
  }
  ok(PCM_Register_dist("buf", (void **)&buf, PCM_DOUBLE, &dist), "PCM_Register_dist");
  if (restarted) {
    ok(PCM_Resume(&world), "PCM_Resume");
    t = arrived(world);
    bad = report(world, t, 0, walk(buf, dist, rank, 0));
  } else {
    ok(PCM_Resume(&world), "PCM_Resume");
    MPI_Barrier(world);
    if (rank == 0) start(0);
    ok(PCM_Checkpoint(world, 1), "PCM_Checkpoint");
  }
  free(buf);
  PCM_Dist_free(&dist);
  PCM_Finalize(world);
  return bad;
}

/* The block of n elements that rank r of p holds in raw mode: [*first, *first + *count). */
static void block(long n, int r, int p, long *first, long *count) {
  *first = n * r / p;
  *count = n * (r + 1) / p - *first;
}

/* pread (reading) or pwrite all len bytes at offset off of path; dies on any failure. */
static void file_io(const char *path, char *p, size_t len, off_t off, int reading) {
  int fd = open(path, reading ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die(path, "cannot open");
  while (len > 0) {
    ssize_t k = reading ? pread(fd, p, len, off) : pwrite(fd, p, len, off);
    if (k <= 0) die(path, reading ? "short read" : "write failed");
    p += k, len -= (size_t)k, off += k;
  }
  if ((!reading && fsync(fd) != 0) || close(fd) != 0) die(path, "fsync or close failed");
}

/* The file of rank r's block in raw mode (a static buffer). */
static const char *rank_file(const char *dir, int r) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/rank-%d.bin", dir, r);
  return path;
}

/* raw: write this rank's block and exit; or, restarted, read the ranges this rank needs from
 * the files of the run before (their number is its process count). */
static int raw(long n, const char *dir, int restart) {
  int rank, size, q, old, bad = 0;
  long first, count, qfirst, qn;
  double *buf, t;
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  block(n, rank, size, &first, &count);
  buf = alloc(count);
  if (restart) {
    for (old = 0; access(rank_file(dir, old), R_OK) == 0;) old++;
    if (old == 0) die(dir, "no rank-R.bin files to restart from");
    for (q = 0; q < old; q++) { /* the part of old rank q's block that this rank holds now */
      long lo, hi;
      block(n, q, old, &qfirst, &qn);
      lo = first > qfirst ? first : qfirst;
      hi = first + count < qfirst + qn ? first + count : qfirst + qn;
      if (lo < hi)
        file_io(rank_file(dir, q), (char *)(buf + (lo - first)), (size_t)(hi - lo) * sizeof(double),
                (off_t)(lo - qfirst) * (off_t)sizeof(double), 1);
    }
    t = arrived(MPI_COMM_WORLD);
    bad = report(MPI_COMM_WORLD, t, 0, span(buf, first, count, 0));
  } else {
    span(buf, first, count, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) start(0);
    file_io(rank_file(dir, rank), (char *)buf, (size_t)count * sizeof(double), 0, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { /* make the files' names durable too */
      int fd = open(dir, O_RDONLY);
      if (fd < 0 || fsync(fd) != 0 || close(fd) != 0) die(dir, "cannot fsync the directory");
    }
  }
  free(buf);
  MPI_Finalize();
  return bad;
}

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  long mb = argc == 4 ? atol(argv[1]) : 0, units = mb * 1024 * 1024 / (long)sizeof(double) / UNIT;
  const char *restart = getenv("PCM_RESTART");
  if (mb <= 0 || (strcmp(argv[2], "live") && strcmp(argv[2], "adapt") && strcmp(argv[2], "ckpt") &&
                  strcmp(argv[2], "raw"))) {
    fprintf(stderr, "usage: resize_cost MB live|adapt|ckpt|raw DIR\n");
    return 2;
  }
  if (strcmp(argv[2], "raw") == 0)
    return raw(units * UNIT, argv[3], restart && strcmp(restart, "1") == 0);
  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "resize_cost: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  if (strcmp(argv[2], "adapt") == 0) return adapt(world, units, argv[3]);
  return strcmp(argv[2], "live") == 0 ? live(world, units, argv[3], argv[0]) : ckpt(world, units);
}
