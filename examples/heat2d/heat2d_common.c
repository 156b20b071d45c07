/* heat2d_common.c — mesh, Jacobi step, halo exchange and checksum shared by both versions. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include "heat2d_common.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HEAT2D_TOP 100.0

static const char kUsage[] =
    "usage: heat2d [--nx N] [--ny N] [--iters N] [--report N] [--throttle-us N]\n"
    "              [--throttle-while FILE] [--layout block|cyclic|block-cyclic] [--block B] "
    "[--commit-every N]\n"
    "              [--trace FILE] [--dump FILE] [--help]\n"
    "  --nx N           global columns (default 512)\n"
    "  --ny N           global rows (default 512)\n"
    "  --iters N        iterations (default 2000)\n"
    "  --report N       progress line every N iterations, 0 = never (default 0)\n"
    "  --throttle-us N  sleep N microseconds per iteration on every rank (default 0)\n"
    "  --throttle-while FILE  sleep --throttle-us only while FILE exists (each rank looks\n"
    "                   every iteration): a test stretches the run while it reconfigures the\n"
    "                   job, then removes FILE and the run finishes at full speed\n"
    "  --layout L       how heat2d_pcm deals columns to processes: block, cyclic or block-cyclic\n"
    "                   (default block). heat2d_plain accepts it and ignores it: it always uses\n"
    "                   block, and the result does not depend on the layout\n"
    "  --block B        columns per block of block-cyclic (default 4); ignored otherwise\n"
    "  --commit-every N heat2d_pcm commits a durable checkpoint (PCM_Commit) every N iterations,\n"
    "                   0 = never (default 0); heat2d_plain accepts it and ignores it. With\n"
    "                   PCM_RESTART=1, heat2d_pcm resumes from the newest one\n"
    "  --trace FILE     rank 0 appends CSV rows to FILE (header time_s,iteration,procs,\n"
    "                   ms_per_iter,event when FILE is new or empty): one per progress interval\n"
    "                   (--report N, or every 100 iterations with --report 0; heat2d_pcm also\n"
    "                   ends one early when a reconfiguration begins) with its ms/iteration,\n"
    "                   and one per event, with ms_per_iter empty: start, and in heat2d_pcm\n"
    "                   migrate, split, merge, restart once done, with who asked and why\n"
    "                   (e.g. \"split 1->2 0.210s; policy: h2 has a free slot ...\"; commas\n"
    "                   in the reason become spaces)\n"
    "                   time_s: wall-clock (epoch) seconds at the row, to the microsecond\n"
    "  --dump FILE      rank 0 writes the final grid to FILE: raw native doubles, row-major,\n"
    "                   ny rows of nx values, the hot top row first (both versions write the\n"
    "                   same bytes)\n"
    "  --help           print this and exit\n";

static const char kTraceHeader[] = "time_s,iteration,procs,ms_per_iter,event\n";

static int parse_layout(const char *s, int *out) {
  if (strcmp(s, "block") == 0) {
    *out = HEAT2D_BLOCK;
  } else if (strcmp(s, "cyclic") == 0) {
    *out = HEAT2D_CYCLIC;
  } else if (strcmp(s, "block-cyclic") == 0) {
    *out = HEAT2D_BLOCK_CYCLIC;
  } else {
    return -1;
  }
  return 0;
}

static int parse_int(const char *s, long min, int *out) {
  char *end = NULL;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || errno == ERANGE || v < min || v > INT_MAX) return -1;
  *out = (int)v;
  return 0;
}

int heat2d_parse_options(int argc, char **argv, int report_errors, Heat2dOptions *opt) {
  const struct {
    const char *name;
    int *dst;
    long min;
    const char **str; /* a file name instead of a number */
  } table[] = {{"--nx", &opt->nx, 1, NULL},
               {"--ny", &opt->ny, 1, NULL},
               {"--iters", &opt->iters, 0, NULL},
               {"--report", &opt->report, 0, NULL},
               {"--throttle-us", &opt->throttle_us, 0, NULL},
               {"--layout", &opt->layout, 0, NULL}, /* a name, not a number: see below */
               {"--block", &opt->block, 1, NULL},
               {"--commit-every", &opt->commit_every, 0, NULL},
               {"--throttle-while", NULL, 0, &opt->throttle_while},
               {"--trace", NULL, 0, &opt->trace},
               {"--dump", NULL, 0, &opt->dump}};
  int i;

  opt->nx = 512;
  opt->ny = 512;
  opt->iters = 2000;
  opt->report = 0;
  opt->throttle_us = 0;
  opt->throttle_while = NULL;
  opt->layout = HEAT2D_BLOCK;
  opt->block = 4;
  opt->commit_every = 0;
  opt->trace = NULL;
  opt->dump = NULL;

  for (i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *value = NULL;
    size_t k, n = 0;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      if (report_errors) fputs(kUsage, stdout);
      return 1;
    }
    for (k = 0; k < sizeof table / sizeof table[0]; k++) {
      n = strlen(table[k].name);
      if (strncmp(arg, table[k].name, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) break;
    }
    if (k == sizeof table / sizeof table[0]) {
      if (report_errors) fprintf(stderr, "heat2d: unknown argument '%s'\n%s", arg, kUsage);
      return -1;
    }
    if (arg[n] == '=') {
      value = arg + n + 1;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      if (report_errors) fprintf(stderr, "heat2d: %s needs a value\n%s", table[k].name, kUsage);
      return -1;
    }
    if (table[k].str != NULL) {
      if (value[0] == '\0') {
        if (report_errors) fprintf(stderr, "heat2d: %s needs a file name\n", table[k].name);
        return -1;
      }
      *table[k].str = value;
    } else if (table[k].dst == &opt->layout) {
      if (parse_layout(value, &opt->layout) != 0) {
        if (report_errors) {
          fprintf(stderr, "heat2d: bad value '%s' for --layout (block, cyclic or block-cyclic)\n",
                  value);
        }
        return -1;
      }
    } else if (parse_int(value, table[k].min, table[k].dst) != 0) {
      if (report_errors) {
        fprintf(stderr, "heat2d: bad value '%s' for %s (an integer >= %ld)\n", value, table[k].name,
                table[k].min);
      }
      return -1;
    }
  }
  /* MPI counts and displacements in the final gather are ints. */
  if ((long long)opt->nx * opt->ny > INT_MAX) {
    if (report_errors) fprintf(stderr, "heat2d: grid too large (nx * ny must be <= %d)\n", INT_MAX);
    return -1;
  }
  return 0;
}

void heat2d_block(int rank, int nprocs, int nx, int *first_col, int *ncols) {
  int base = nx / nprocs, extra = nx % nprocs;
  *ncols = base + (rank < extra ? 1 : 0);
  *first_col = rank * base + (rank < extra ? rank : extra);
}

long heat2d_mesh_len(const Heat2dMesh *m) { return (long)(m->ncols + 2) * m->ny; }

void heat2d_mesh_set_rank(Heat2dMesh *m, int rank, int nprocs) {
  /* Blocks are contiguous and empty ones (nprocs > nx) come last, so a rank owning columns has a
   * neighbour exactly where its block does not touch the grid's edge. Empty ranks talk to nobody.
   */
  int has_left = m->ncols > 0 && m->first_col > 0 && rank > 0;
  int has_right = m->ncols > 0 && m->first_col + m->ncols < m->nx && rank + 1 < nprocs;
  m->left = has_left ? rank - 1 : MPI_PROC_NULL;
  m->right = has_right ? rank + 1 : MPI_PROC_NULL;
}

int heat2d_mesh_create(Heat2dMesh *m, int nx, int ny, int first_col, int ncols, int rank,
                       int nprocs) {
  size_t len = (size_t)(ncols + 2) * (size_t)ny, j;
  int b;

  memset(m, 0, sizeof *m);
  m->cur = calloc(len, sizeof(double));
  m->next = calloc(len, sizeof(double));
  if (m->cur == NULL || m->next == NULL) {
    heat2d_mesh_destroy(m);
    return -1;
  }
  m->nx = nx;
  m->ny = ny;
  m->first_col = first_col;
  m->ncols = ncols;
  heat2d_mesh_set_rank(m, rank, nprocs);
  /* The step only writes interior cells, so both buffers must carry the fixed boundary. */
  for (b = 0; b < 2; b++) {
    double *buf = b == 0 ? m->cur : m->next;
    for (j = 0; j < (size_t)ncols + 2; j++) buf[j * (size_t)ny] = HEAT2D_TOP;
  }
  return 0;
}

void heat2d_mesh_destroy(Heat2dMesh *m) {
  free(m->cur);
  free(m->next);
  m->cur = NULL;
  m->next = NULL;
  m->ncols = 0;
}

/* Both directions in one round of nonblocking messages, as heat2d_pcm's exchange does, so that
 * the two programs differ only by PCM (two sequential MPI_Sendrecv cost one more latency per
 * iteration: 40 % of a 64x64 iteration on 2 processes). */
int heat2d_exchange(Heat2dMesh *m, MPI_Comm comm) {
  const size_t ny = (size_t)m->ny, nc = (size_t)m->ncols;
  double *c = m->cur;
  MPI_Request req[4];
  MPI_Status st[4]; /* not MPI_STATUSES_IGNORE: GCC 12 warns about MPICH's (MPI_Status *)1 */
  int rc = MPI_Irecv(c + (nc + 1) * ny, m->ny, MPI_DOUBLE, m->right, 0, comm, &req[0]);
  if (rc == MPI_SUCCESS) rc = MPI_Irecv(c, m->ny, MPI_DOUBLE, m->left, 1, comm, &req[1]);
  if (rc == MPI_SUCCESS) rc = MPI_Isend(c + ny, m->ny, MPI_DOUBLE, m->left, 0, comm, &req[2]);
  if (rc == MPI_SUCCESS) rc = MPI_Isend(c + nc * ny, m->ny, MPI_DOUBLE, m->right, 1, comm, &req[3]);
  if (rc != MPI_SUCCESS) return rc; /* the caller aborts */
  return MPI_Waitall(4, req, st);
}

void heat2d_step_columns(const double *cur, double *next, int ny, int nx, long first, long count) {
  const long lo = first < 1 ? 1 : first; /* global column 0 is fixed */
  const long hi = first + count - 1 > nx - 2 ? nx - 2 : first + count - 1; /* and so is nx-1 */
  long g;
  int i;

  for (g = lo; g <= hi; g++) {
    const double *c = cur + (size_t)(g - first) * (size_t)ny;
    const double *left = c - ny, *right = c + ny;
    double *n = next + (size_t)(g - first) * (size_t)ny;
    for (i = 1; i + 1 < ny; i++) {
      /* One fixed expression order for every cell keeps the result bit-identical for any P and
       * any layout. */
      n[i] = 0.25 * (c[i - 1] + c[i + 1] + left[i] + right[i]);
    }
  }
}

void heat2d_step(Heat2dMesh *m) {
  double *tmp;
  /* Local column j holds global column first_col + j - 1: owned columns start at local 1. */
  heat2d_step_columns(m->cur + m->ny, m->next + m->ny, m->ny, m->nx, m->first_col, m->ncols);
  tmp = m->cur;
  m->cur = m->next;
  m->next = tmp;
}

uint64_t heat2d_fnv1a(uint64_t h, const void *data, size_t nbytes) {
  const unsigned char *p = data;
  size_t k;
  for (k = 0; k < nbytes; k++) {
    h ^= p[k];
    h *= 1099511628211ULL; /* FNV-1a 64-bit prime */
  }
  return h;
}

void heat2d_throttle(const Heat2dOptions *opt) {
  struct timespec ts;
  int us = opt->throttle_us;
  if (us <= 0 || (opt->throttle_while != NULL && access(opt->throttle_while, F_OK) != 0)) return;
  ts.tv_sec = us / 1000000;
  ts.tv_nsec = (long)(us % 1000000) * 1000L;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

double heat2d_wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double heat2d_epoch_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double heat2d_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int heat2d_result(const double *all, const long *colpos, int nx, int ny, const char *dump,
                  uint64_t *sum) {
  const size_t col_bytes = sizeof(double) * (size_t)ny;
  uint64_t h = HEAT2D_FNV_BASIS;
  double *row;
  FILE *f;
  int u, i, ok;

  /* Column by column in global order: the bytes of the column-major grid, whatever the map. */
  for (u = 0; u < nx; u++)
    h = heat2d_fnv1a(h, all + (colpos ? colpos[u] : (long)u * ny), col_bytes);
  *sum = h;
  if (dump == NULL) return 0;

  row = malloc(sizeof(double) * (size_t)nx);
  f = row != NULL ? fopen(dump, "wb") : NULL;
  ok = f != NULL;
  for (i = 0; ok && i < ny; i++) {
    for (u = 0; u < nx; u++) row[u] = all[(colpos ? colpos[u] : (long)u * ny) + i];
    ok = fwrite(row, sizeof(double), (size_t)nx, f) == (size_t)nx;
  }
  if (f != NULL && fclose(f) != 0) ok = 0;
  if (!ok) {
    fprintf(stderr, "heat2d: --dump %s: %s\n", dump,
            row != NULL ? strerror(errno) : "out of memory");
  }
  free(row);
  return ok ? 0 : -1;
}

int heat2d_checksum(const Heat2dMesh *m, MPI_Comm comm, const char *dump, uint64_t *sum) {
  int rank, nprocs, r, ok = 1;
  int mine[2];
  int *meta = NULL;
  double *grid = NULL;

  *sum = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nprocs);
  if (rank == 0) {
    /* meta: (displacement, count) per rank as gathered, then counts, then displacements. */
    meta = malloc(sizeof(int) * 4 * (size_t)nprocs);
    /* calloc: a hole in the distribution then hashes as zeros instead of garbage. */
    grid = calloc((size_t)m->nx * (size_t)m->ny, sizeof(double));
    ok = meta != NULL && grid != NULL;
  }
  /* Tell everyone, so that a failed allocation on rank 0 fails the call on every rank. */
  if (MPI_Bcast(&ok, 1, MPI_INT, 0, comm) != MPI_SUCCESS) ok = -2;
  if (ok != 1) {
    free(meta);
    free(grid);
    return ok == 0 ? -1 : -2;
  }

  mine[0] = m->first_col * m->ny;
  mine[1] = m->ncols * m->ny;
  if (MPI_Gather(mine, 2, MPI_INT, meta, 2, MPI_INT, 0, comm) != MPI_SUCCESS) ok = 0;
  if (ok && rank == 0) {
    for (r = 0; r < nprocs; r++) {
      meta[2 * nprocs + r] = meta[2 * r + 1];
      meta[3 * nprocs + r] = meta[2 * r];
    }
  }
  if (ok && MPI_Gatherv(m->cur + m->ny, mine[1], MPI_DOUBLE, grid, meta + 2 * nprocs,
                        meta + 3 * nprocs, MPI_DOUBLE, 0, comm) != MPI_SUCCESS) {
    ok = 0;
  }

  if (ok && rank == 0 && heat2d_result(grid, NULL, m->nx, m->ny, dump, sum) != 0) ok = -3;
  free(meta);
  free(grid);
  return ok == 1 ? 0 : ok == -3 ? -3 : -2;
}

/* Appends one row to the trace (rank 0); ms < 0 leaves ms_per_iter empty (an event row). */
/* A trace row at wall-clock time `at` (epoch seconds). */
static void trace_row(Heat2dProgress *p, double at, int it, int nprocs, double ms,
                      const char *event) {
  const char *c;
  if (p->path == NULL) return;
  if (p->trace == NULL) {
    /* Appending: after a reconfiguration rank 0 may be another process, which carries on the
     * file that the processes before it wrote. */
    p->trace = fopen(p->path, "a");
    if (p->trace == NULL) {
      fprintf(stderr, "heat2d: --trace %s: %s (this process writes no trace)\n", p->path,
              strerror(errno));
      p->path = NULL;
      return;
    }
    if (fseek(p->trace, 0, SEEK_END) == 0 && ftell(p->trace) == 0) fputs(kTraceHeader, p->trace);
  }
  fprintf(p->trace, "%.6f,%d,%d,", at, it, nprocs);
  if (ms >= 0) fprintf(p->trace, "%.6f", ms);
  fputc(',', p->trace);
  for (c = event != NULL ? event : ""; *c != '\0'; c++) {
    fputc(*c == ',' || *c == '\n' || *c == '\r' || *c == '"' ? ' ' : *c, p->trace); /* CSV-safe */
  }
  fputc('\n', p->trace);
  if (fflush(p->trace) != 0) {
    fprintf(stderr, "heat2d: --trace %s: %s\n", p->path, strerror(errno));
  }
}

void heat2d_progress_init(Heat2dProgress *p, const Heat2dOptions *opt, int rank, int it, int nprocs,
                          const char *event) {
  p->print = opt->report > 0;
  p->every = opt->report > 0 ? opt->report : opt->trace != NULL ? HEAT2D_TRACE_EVERY : 0;
  p->path = opt->trace;
  p->trace = NULL;
  p->t_last = heat2d_epoch_seconds();
  p->it_last = it;
  if (event != NULL && rank == 0) trace_row(p, p->t_last, it, nprocs, -1.0, event);
}

void heat2d_progress(Heat2dProgress *p, int rank, int it_done, int iters, int nprocs) {
  double now, ms;
  int n;
  if (p->every <= 0 || it_done % p->every != 0) return;
  now = heat2d_epoch_seconds();
  n = it_done - p->it_last;
  if (rank == 0 && n > 0) {
    ms = (now - p->t_last) * 1e3 / n;
    if (p->print) {
      printf("heat2d: iter %d/%d procs %d %.4f ms/iter\n", it_done, iters, nprocs, ms);
      fflush(stdout);
    }
    trace_row(p, now, it_done, nprocs, ms, NULL);
  }
  p->t_last = now;
  p->it_last = it_done;
}

void heat2d_progress_reconfigured(Heat2dProgress *p, int rank, int it, int before, int nprocs,
                                  double started, const char *event) {
  if (rank == 0 && it > p->it_last && started > p->t_last) {
    trace_row(p, started, it, before, (started - p->t_last) * 1e3 / (it - p->it_last), NULL);
  }
  p->t_last = heat2d_epoch_seconds();
  p->it_last = it;
  if (rank == 0) trace_row(p, p->t_last, it, nprocs, -1.0, event);
}

void heat2d_progress_close(Heat2dProgress *p) {
  if (p->trace != NULL) fclose(p->trace);
  p->trace = NULL;
}

void heat2d_print_result(int iters, int nprocs, double seconds, int computed, uint64_t sum) {
  printf("heat2d: done iters %d procs %d time %.3f s %.4f ms/iter\n", iters, nprocs, seconds,
         computed > 0 ? seconds * 1e3 / computed : 0.0);
  printf("checksum %016llx\n", (unsigned long long)sum);
  fflush(stdout);
}
