/* heat2d_common.h — mesh, Jacobi step, halo exchange and checksum shared by both versions. */
#ifndef HEAT2D_COMMON_H
#define HEAT2D_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Column layouts of heat2d_pcm (--layout). heat2d_plain always uses block. */
enum { HEAT2D_BLOCK = 1, HEAT2D_CYCLIC = 2, HEAT2D_BLOCK_CYCLIC = 3 };

/* Command-line settings; identical on every rank because every rank parses the same argv. */
typedef struct Heat2dOptions {
  int nx;          /* global columns */
  int ny;          /* global rows */
  int iters;       /* iterations to compute */
  int report;      /* progress line every this many iterations; 0 = never */
  int throttle_us; /* sleep per iteration, to stretch test runs without changing the result */
  const char *throttle_while; /* --throttle-while FILE: sleep only while FILE exists */
  int layout;                 /* HEAT2D_BLOCK, HEAT2D_CYCLIC or HEAT2D_BLOCK_CYCLIC */
  int block;                  /* columns per block of HEAT2D_BLOCK_CYCLIC */
  int commit_every;           /* heat2d_pcm: PCM_Commit every this many iterations; 0 = never */
  const char *trace;          /* --trace FILE: rank 0 appends CSV rows to it; NULL = none */
  const char *dump;           /* --dump FILE: rank 0 writes the final grid to it; NULL = none */
} Heat2dOptions;

/* The trace's progress interval when --report is 0. */
#define HEAT2D_TRACE_EVERY 100

/*
 * The part of the global ny x nx grid one rank holds: columns first_col .. first_col+ncols-1,
 * plus a ghost column on each side (local columns 0 and ncols+1). Column-major, so a column is
 * ny contiguous doubles and the halo exchange sends one contiguous block.
 */
typedef struct Heat2dMesh {
  int nx, ny;
  int first_col, ncols;
  int left, right; /* neighbour ranks, MPI_PROC_NULL where there is none */
  double *cur;     /* (ncols + 2) * ny values: the current iterate, ghosts included */
  double *next;    /* same size: where the Jacobi step writes */
} Heat2dMesh;

/*
 * Progress intervals: the line printed (--report) and the trace row written (--trace) by rank 0.
 * Every rank keeps the interval's start, so that whichever process is rank 0 after a
 * reconfiguration measures the same interval.
 */
typedef struct Heat2dProgress {
  double t_last;    /* heat2d_epoch_seconds() at the interval's start */
  int it_last;      /* iterations completed at the interval's start */
  int every;        /* interval in iterations; 0 = no progress at all */
  int print;        /* print a line per interval (--report N with N > 0) */
  const char *path; /* --trace FILE, or NULL */
  FILE *trace;      /* opened by the process when it first writes as rank 0 */
} Heat2dProgress;

/*
 * Parses argv[1..argc-1]. Returns 0; 1 for --help (usage printed to stdout when report_errors is
 * non-zero: the caller should exit successfully); or -1 after printing a message (when
 * report_errors is non-zero) for an unknown option, a missing or bad value, or a stray argument.
 */
int heat2d_parse_options(int argc, char **argv, int report_errors, Heat2dOptions *opt);

/* The columns rank owns out of nx over nprocs ranks; the first nx % nprocs get one more. */
void heat2d_block(int rank, int nprocs, int nx, int *first_col, int *ncols);

/*
 * Allocates the mesh for columns [first_col, first_col + ncols) and sets the initial condition
 * (top row 100, rest 0) in both buffers, so the fixed boundary is right in whichever buffer is
 * current. Returns 0, or -1 if memory runs out (the mesh is then empty).
 */
int heat2d_mesh_create(Heat2dMesh *m, int nx, int ny, int first_col, int ncols, int rank,
                       int nprocs);

/* Recomputes the neighbours after this rank's rank or the world's size changed. */
void heat2d_mesh_set_rank(Heat2dMesh *m, int rank, int nprocs);

void heat2d_mesh_destroy(Heat2dMesh *m);

/* Number of doubles in one buffer, ghosts included: (ncols + 2) * ny. */
long heat2d_mesh_len(const Heat2dMesh *m);

/*
 * Fills the ghost columns of cur from the neighbours. Collective over comm. Returns MPI_SUCCESS or
 * the failing MPI code (seen only if comm's error handler returns errors instead of aborting).
 */
int heat2d_exchange(Heat2dMesh *m, MPI_Comm comm);

/* One Jacobi sweep over the interior from cur into next, then swaps them. Local. */
void heat2d_step(Heat2dMesh *m);

/*
 * The Jacobi update of global columns first .. first+count-1 of an ny x nx grid, which lie one
 * after another (ny doubles each) from cur, with a readable column just before and just after
 * them; results go to the same places from next. Global columns 0 and nx-1 and rows 0 and ny-1
 * are fixed and left alone. Both versions use this one kernel, so their results stay identical.
 */
void heat2d_step_columns(const double *cur, double *next, int ny, int nx, long first, long count);

/* FNV-1a 64-bit: heat2d_fnv1a(HEAT2D_FNV_BASIS, p, n) hashes n bytes; feed on to hash more. */
#define HEAT2D_FNV_BASIS 14695981039346656037ULL
uint64_t heat2d_fnv1a(uint64_t h, const void *data, size_t nbytes);

/* Sleeps opt->throttle_us microseconds (nothing if it is 0, or while opt->throttle_while names
   no file). */
void heat2d_throttle(const Heat2dOptions *opt);

/* Monotonic wall-clock seconds; usable before MPI_Init and after MPI_Finalize, unlike MPI_Wtime. */
double heat2d_wall_seconds(void);

/* Wall-clock seconds since the epoch (CLOCK_REALTIME): comparable between processes on a host. */
double heat2d_epoch_seconds(void);

/* CPU seconds used by this process (all threads) so far. */
double heat2d_cpu_seconds(void);

/*
 * The end of a run on rank 0, which holds the whole grid in `all`: global column u (ny doubles,
 * row 0 first) at all + colpos[u], or at all + u * ny if colpos is NULL. Sets *sum to the FNV-1a
 * 64-bit hash of the grid's bytes in column-major order and, if dump is not NULL, writes the grid
 * to that file as raw native doubles in row-major order: ny rows of nx values, row 0 (the hot
 * top boundary) first. Local. Returns 0, or -1 if the dump could not be written (reported).
 */
int heat2d_result(const double *all, const long *colpos, int nx, int ny, const char *dump,
                  uint64_t *sum);

/*
 * Gathers the owned columns of every rank to rank 0 and returns there the checksum of
 * heat2d_result (0 elsewhere), writing the dump if dump is not NULL. Collective over comm.
 * Returns 0; -1 on every rank if rank 0 could not allocate the global grid; -2 if an MPI call
 * failed, which the other ranks may not have seen (possible only if comm's error handler returns
 * errors); -3 on rank 0 alone if the dump could not be written (the checksum is valid).
 */
int heat2d_checksum(const Heat2dMesh *m, MPI_Comm comm, const char *dump, uint64_t *sum);

/*
 * Sets up progress from the options (--report, --trace) and starts the first interval at
 * iteration it. With --trace, rank 0 writes the row of the event `start` (the caller passes
 * event NULL in a process that joins a running job and writes its own event).
 */
void heat2d_progress_init(Heat2dProgress *p, const Heat2dOptions *opt, int rank, int it, int nprocs,
                          const char *event);

/*
 * At the end of an interval (it_done, the iterations completed, a multiple of the interval):
 * rank 0 prints the progress line and appends the trace row; every rank starts the next
 * interval. Costs one test elsewhere.
 */
void heat2d_progress(Heat2dProgress *p, int rank, int it_done, int iters, int nprocs);

/*
 * After a reconfiguration from `before` to nprocs processes (begun at wall-clock time `started`,
 * epoch seconds) completed at iteration it: rank 0 appends the row of the interval cut at
 * `started` (if it holds any iteration), then the event's row (one word, then details without
 * commas, e.g. "split 1->2 0.210s"); every process starts a new interval at it, so that intervals
 * measure computing only.
 */
void heat2d_progress_reconfigured(Heat2dProgress *p, int rank, int it, int before, int nprocs,
                                  double started, const char *event);

/* Closes this process's trace file, if it opened one. */
void heat2d_progress_close(Heat2dProgress *p);

/*
 * Prints the summary and checksum lines (call on rank 0 only): seconds is the loop's wall time and
 * computed the number of iterations this process ran in it.
 */
void heat2d_print_result(int iters, int nprocs, double seconds, int computed, uint64_t sum);

#endif /* HEAT2D_COMMON_H */
