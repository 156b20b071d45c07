/* heat2d_pcm.c — 2-D heat diffusion made malleable with PCM: migrate, split, merge (Figure 6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heat2d_common.h"
#include "pcm.h"

/* One message of the ghost exchange: the column at element `offset` of cur goes to, or comes
 * from, peer. */
typedef struct Msg {
  long offset;
  int peer, tag, send;
} Msg;

/* A ghost filled from this rank's own buffer (element offsets in cur). PCM's maps join adjacent
 * columns of one rank into one segment, so this stays empty with them; it keeps any valid map,
 * coalesced or not, correct. */
typedef struct Copy {
  long from, to;
} Copy;

/*
 * This rank's part of the ny x nx grid, laid out by a PCM_Dist whose units are columns (ny
 * doubles each) with one ghost column around every segment:
 *   [ghost][segment 0][ghost] [ghost][segment 1][ghost] ...
 * cur must come from malloc: PCM_Split takes it over.
 */
typedef struct Grid {
  int nx, ny;
  PCM_Dist dist;
  double *cur, *next;
  long elements, units, nseg; /* buffer length (ghosts included), owned columns, segments */
  long *seg_first, *seg_count, *seg_off; /* per segment: first global column, columns, offset */
  Msg *msg;
  MPI_Request *req;
  MPI_Status *st; /* unused, but MPI_STATUSES_IGNORE trips GCC's -Wstringop-overflow with MPICH */
  int nmsg;
  Copy *copy;
  int ncopy;
} Grid;

/* Everything the loop carries across reconfigurations. */
typedef struct Run {
  Heat2dOptions opt;
  const char *command; /* argv[0], what reconfigurations spawn */
  MPI_Comm world;
  int rank, nprocs;
  int it;        /* the iteration about to be computed */
  int reconfigs; /* reconfigurations this process's world has been through */
  Grid grid;
  Heat2dProgress progress; /* --report and --trace */
} Run;

/* What a reconfiguration left this process to do. */
enum { GO_ON = 0, RETIRE = 1, FAIL = -1 };

/* Prints a failed PCM call with PCM's own message; returns non-zero if rc is a failure. */
static int failed(int rc, const char *what) {
  const char *msg;
  if (rc == PCM_SUCCESS) return 0;
  msg = PCM_Last_error();
  fprintf(stderr, "heat2d: %s: %s\n", what, msg[0] != '\0' ? msg : PCM_Error_string(rc));
  return 1;
}

/*
 * Store, load and allocation are local, but a failure in one process would leave the others
 * waiting in the next collective forever. Every process that could fail locally therefore votes
 * here, so that all of them go on or all of them stop together (and can call the collective
 * PCM_Finalize).
 */
static int all_ok(int ok, MPI_Comm world) {
  if (MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, world) != MPI_SUCCESS) {
    /* PCM's world returns MPI errors; if the vote itself fails, no orderly way out is left. */
    fprintf(stderr, "heat2d: MPI_Allreduce failed\n");
    MPI_Abort(world, 1);
  }
  return ok;
}

static void grid_free_plan(Grid *g) {
  free(g->seg_first);
  free(g->seg_count);
  free(g->seg_off);
  free(g->msg);
  free(g->req);
  free(g->st);
  free(g->copy);
  free(g->next);
  g->seg_first = g->seg_count = g->seg_off = NULL;
  g->msg = NULL;
  g->req = NULL;
  g->st = NULL;
  g->copy = NULL;
  g->next = NULL;
  g->nseg = g->nmsg = g->ncopy = 0;
}

/* Frees everything; also right for a retired process, whose buffer and map PCM took over. */
static void grid_free(Grid *g) {
  grid_free_plan(g);
  free(g->cur);
  g->cur = NULL;
  PCM_Dist_free(&g->dist);
}

/*
 * Checks that a map (from PCM_Dist_create, a reconfiguration or the store) describes this grid
 * over nprocs processes; a stored map from a run with other options must not index our memory.
 */
static int check_map(PCM_Dist dist, int nx, int ny, int nprocs) {
  int size = 0;
  long units = 0, unit_len = 0, halo = 0;
  if (failed(PCM_Dist_info(dist, &size, NULL, &units, &unit_len, NULL, &halo), "PCM_Dist_info")) {
    return -1;
  }
  if (size != nprocs || units != nx || unit_len != ny || halo != 1) {
    fprintf(stderr,
            "heat2d: the map (%d processes, %ld columns of %ld, halo %ld) does not fit the grid "
            "(%d processes, %d columns of %d, halo 1); were the same options given?\n",
            size, units, unit_len, halo, nprocs, nx, ny);
    return -1;
  }
  return 0;
}

/*
 * Takes up g->dist and g->cur after a start or a reconfiguration: reads this rank's segments,
 * rebuilds next (a copy of cur: the step never writes the fixed boundary rows, so next must carry
 * them too) and the ghost exchange plan. Local. Returns 0 or -1 (reported).
 */
static int grid_adopt(Grid *g, int rank, int nprocs) {
  const int nx = g->nx;
  const long ny = g->ny;
  int *owner = NULL, r, u, ok = 0;
  long *pos = NULL, k, c, nseg, units = 0, first, count, off, total = 0;
  int nmsg = 0, ncopy = 0;

  grid_free_plan(g);
  if (check_map(g->dist, nx, g->ny, nprocs) != 0) return -1;
  if (failed(PCM_Dist_local(g->dist, rank, &g->nseg, &g->units, &g->elements), "PCM_Dist_local")) {
    return -1;
  }
  nseg = g->nseg;
  owner = malloc(sizeof *owner * (size_t)nx);
  pos = malloc(sizeof *pos * (size_t)nx); /* element offset of each of my columns in cur */
  g->seg_first = malloc(sizeof(long) * (size_t)(nseg > 0 ? nseg : 1));
  g->seg_count = malloc(sizeof(long) * (size_t)(nseg > 0 ? nseg : 1));
  g->seg_off = malloc(sizeof(long) * (size_t)(nseg > 0 ? nseg : 1));
  /* A segment has two edges, each with two messages or two copies at most. */
  g->msg = malloc(sizeof *g->msg * (size_t)(4 * nseg + 1));
  g->req = malloc(sizeof *g->req * (size_t)(4 * nseg + 1));
  g->st = malloc(sizeof *g->st * (size_t)(4 * nseg + 1));
  g->copy = malloc(sizeof *g->copy * (size_t)(4 * nseg + 1));
  g->next = malloc(sizeof(double) * (size_t)(g->elements > 0 ? g->elements : 1));
  if (owner == NULL || pos == NULL || g->seg_first == NULL || g->seg_count == NULL ||
      g->seg_off == NULL || g->msg == NULL || g->req == NULL || g->st == NULL || g->copy == NULL ||
      g->next == NULL) {
    fprintf(stderr, "heat2d: rank %d: out of memory for %ld columns\n", rank, g->units);
    goto out;
  }
  if (g->cur == NULL) {
    if (g->elements > 0) {
      fprintf(stderr, "heat2d: rank %d: no buffer for %ld columns\n", rank, g->units);
      goto out;
    }
    /* Owning nothing, but a later PCM_Split still wants a malloc'd buffer to take over. */
    g->cur = malloc(sizeof(double));
    if (g->cur == NULL) goto out;
  }

  /* Every rank learns every owner: the plan needs the neighbours' owners, and a map that misses
   * or repeats a column must be caught before the loop relies on it. */
  for (u = 0; u < nx; u++) owner[u] = -1;
  for (r = 0; r < nprocs; r++) {
    long rseg;
    if (failed(PCM_Dist_local(g->dist, r, &rseg, NULL, NULL), "PCM_Dist_local")) goto out;
    for (k = 0; k < rseg; k++) {
      if (failed(PCM_Dist_segment(g->dist, r, k, &first, &count, &off), "PCM_Dist_segment")) {
        goto out;
      }
      if (first < 0 || count < 1 || first > nx - count) {
        fprintf(stderr, "heat2d: rank %d's segment %ld (%ld, %ld) is outside the grid\n", r, k,
                first, count);
        goto out;
      }
      if (r == rank) {
        /* It is about to index cur: ghosts included, the segment must lie inside the buffer. */
        if (off < ny || off + (count + 1) * ny > g->elements) {
          fprintf(stderr, "heat2d: segment %ld at offset %ld does not fit a buffer of %ld\n", k,
                  off, g->elements);
          goto out;
        }
        g->seg_first[k] = first;
        g->seg_count[k] = count;
        g->seg_off[k] = off;
      }
      for (c = 0; c < count; c++) {
        if (owner[first + c] != -1) {
          fprintf(stderr, "heat2d: the map gives column %ld to both rank %d and rank %d\n",
                  first + c, owner[first + c], r);
          goto out;
        }
        owner[first + c] = r;
        if (r == rank) pos[first + c] = off + c * ny;
      }
      total += count;
    }
  }
  if (total != nx) {
    fprintf(stderr, "heat2d: the map owns %ld of %d columns\n", total, nx);
    goto out;
  }
  for (k = 0; k < nseg; k++) units += g->seg_count[k];
  if (units != g->units) {
    fprintf(stderr, "heat2d: rank %d: PCM_Dist_local says %ld columns, the segments %ld\n", rank,
            g->units, units);
    goto out;
  }

  /* In increasing u, so that the messages between any two ranks in one direction (one tag) are
   * posted in the same order on both sides and match pairwise. */
  for (u = 0; u + 1 < nx; u++) {
    const int a = owner[u], b = owner[u + 1];
    if (a == b) {
      if (a == rank && pos[u + 1] != pos[u] + ny) {
        g->copy[ncopy].from = pos[u];
        g->copy[ncopy++].to = pos[u + 1] - ny;
        g->copy[ncopy].from = pos[u + 1];
        g->copy[ncopy++].to = pos[u] + ny;
      }
    } else if (a == rank) {
      /* Receive u+1 into the right ghost of the segment ending at u; send u rightwards. */
      g->msg[nmsg++] = (Msg){pos[u] + ny, b, 1, 0};
      g->msg[nmsg++] = (Msg){pos[u], b, 0, 1};
    } else if (b == rank) {
      g->msg[nmsg++] = (Msg){pos[u + 1] - ny, a, 0, 0};
      g->msg[nmsg++] = (Msg){pos[u + 1], a, 1, 1};
    }
  }
  g->nmsg = nmsg;
  g->ncopy = ncopy;
  if (g->elements > 0) memcpy(g->next, g->cur, sizeof(double) * (size_t)g->elements);
  ok = 1;
out:
  free(owner);
  free(pos);
  if (!ok) grid_free_plan(g);
  return ok ? 0 : -1;
}

/* The PCM layout that --layout names. */
static int pcm_layout(const Heat2dOptions *opt) {
  return opt->layout == HEAT2D_CYCLIC         ? PCM_CYCLIC
         : opt->layout == HEAT2D_BLOCK_CYCLIC ? PCM_BLOCK_CYCLIC
                                              : PCM_BLOCK;
}

/* The initial grid of a started process: top row 100, the rest 0 (ghosts included). */
static int grid_start(Grid *g, const Heat2dOptions *opt, int rank, int nprocs) {
  long elements = 0, k;
  if (failed(PCM_Dist_create(pcm_layout(opt), opt->nx, opt->ny, opt->block, 1, nprocs, &g->dist),
             "PCM_Dist_create") ||
      failed(PCM_Dist_local(g->dist, rank, NULL, NULL, &elements), "PCM_Dist_local")) {
    return -1;
  }
  g->cur = calloc((size_t)(elements > 0 ? elements : 1), sizeof(double));
  if (g->cur == NULL) {
    fprintf(stderr, "heat2d: rank %d: out of memory for %ld values\n", rank, elements);
    return -1;
  }
  for (k = 0; k < elements; k += opt->ny) g->cur[k] = 100.0;
  return grid_adopt(g, rank, nprocs);
}

/*
 * Fills the ghost columns of cur from their owners. Returns MPI_SUCCESS or the failing MPI code.
 * Not collective as such, but every rank must call it: the plan pairs it with the neighbours.
 */
static int grid_exchange(Grid *g, MPI_Comm world) {
  int k, rc;
  for (k = 0; k < g->nmsg; k++) {
    const Msg *m = &g->msg[k];
    rc = m->send
             ? MPI_Isend(g->cur + m->offset, g->ny, MPI_DOUBLE, m->peer, m->tag, world, &g->req[k])
             : MPI_Irecv(g->cur + m->offset, g->ny, MPI_DOUBLE, m->peer, m->tag, world, &g->req[k]);
    if (rc != MPI_SUCCESS) return rc;
  }
  for (k = 0; k < g->ncopy; k++) {
    memcpy(g->cur + g->copy[k].to, g->cur + g->copy[k].from, sizeof(double) * (size_t)g->ny);
  }
  return MPI_Waitall(g->nmsg, g->req, g->st);
}

static void grid_step(Grid *g) {
  double *tmp;
  long k;
  for (k = 0; k < g->nseg; k++) {
    heat2d_step_columns(g->cur + g->seg_off[k], g->next + g->seg_off[k], g->ny, g->nx,
                        g->seg_first[k], g->seg_count[k]);
  }
  tmp = g->cur;
  g->cur = g->next;
  g->next = tmp;
}

/*
 * As heat2d_checksum, for any map: every rank sends its owned columns in its buffer's (global)
 * order, rank 0 finds each global column in what it gathered through the map and hands the
 * columns to heat2d_result, which hashes (and dumps) them in global order: the same bytes as
 * plain's column-major grid. Collective. Returns 0; -1 on every rank after a local failure
 * (reported); -2 if an MPI call failed; -3 on rank 0 alone if the dump failed (reported).
 */
static int grid_checksum(const Grid *g, MPI_Comm world, int rank, int nprocs, const char *dump,
                         uint64_t *sum) {
  const long ny = g->ny;
  double *pack = malloc(sizeof(double) * (size_t)(g->units > 0 ? g->units * ny : 1));
  double *all = NULL;
  int *counts = NULL, *displs = NULL, ok, r;
  long *colpos = NULL, k, c, n = 0, nseg = 0, units = 0, first = 0, count = 0;

  *sum = 0;
  ok = pack != NULL;
  if (rank == 0) {
    all = malloc(sizeof(double) * (size_t)g->nx * (size_t)ny);
    counts = malloc(sizeof(int) * (size_t)nprocs);
    displs = malloc(sizeof(int) * (size_t)nprocs);
    colpos = malloc(sizeof(long) * (size_t)g->nx); /* where global column u sits in `all` */
    ok = ok && all != NULL && counts != NULL && displs != NULL && colpos != NULL;
    for (r = 0; ok && r < nprocs; r++) {
      ok = PCM_Dist_local(g->dist, r, &nseg, &units, NULL) == PCM_SUCCESS;
      counts[r] = (int)(units * ny); /* the parser keeps nx * ny within int */
      displs[r] = (int)n;
      for (k = 0; ok && k < nseg; k++) {
        ok = PCM_Dist_segment(g->dist, r, k, &first, &count, NULL) == PCM_SUCCESS;
        for (c = 0; ok && c < count; c++, n += ny) colpos[first + c] = n;
      }
    }
  }
  if (!ok)
    fprintf(stderr, "heat2d: rank %d: out of memory (or a bad map) for the checksum\n", rank);
  if (MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, world) != MPI_SUCCESS) ok = -2;
  if (ok == 1) {
    for (k = 0, n = 0; k < g->nseg; n += g->seg_count[k] * ny, k++) {
      memcpy(pack + n, g->cur + g->seg_off[k], sizeof(double) * (size_t)(g->seg_count[k] * ny));
    }
    if (MPI_Gatherv(pack, (int)(g->units * ny), MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0,
                    world) != MPI_SUCCESS) {
      ok = -2;
    }
  }
  if (ok == 1 && rank == 0 && heat2d_result(all, colpos, g->nx, g->ny, dump, sum) != 0) ok = -3;
  free(pack);
  free(all);
  free(counts);
  free(displs);
  free(colpos);
  return ok == 1 ? 0 : ok == 0 ? -1 : ok;
}

/* What a migrating process leaves for its replacement: loop state, map and whole buffer. */
static int store_state(const Run *r) {
  const int iteration = r->it, reconfigs = r->reconfigs + 1; /* the replacement takes part */
  return failed(PCM_Store(r->rank, "iteration", &iteration, PCM_INT, 1), "PCM_Store(iteration)") ||
         failed(PCM_Store(r->rank, "reconfigs", &reconfigs, PCM_INT, 1), "PCM_Store(reconfigs)") ||
         failed(PCM_Store_dist(r->rank, "dist", r->grid.dist), "PCM_Store_dist(dist)") ||
         failed(PCM_Store(r->rank, "grid", r->grid.cur, PCM_DOUBLE, r->grid.elements),
                "PCM_Store(grid)");
}

/* Rebuilds the mover's state in the process that replaces it. Returns 0 or -1 (reported). */
static int load_state(Run *r) {
  Grid *g = &r->grid;
  long elements = 0;
  if (failed(PCM_Load(r->rank, "iteration", &r->it, PCM_INT, 1), "PCM_Load(iteration)") ||
      failed(PCM_Load(r->rank, "reconfigs", &r->reconfigs, PCM_INT, 1), "PCM_Load(reconfigs)") ||
      failed(PCM_Load_dist(r->rank, "dist", &g->dist), "PCM_Load_dist(dist)")) {
    return -1;
  }
  if (r->it < 0 || r->it > r->opt.iters) {
    fprintf(stderr, "heat2d: rank %d: stored iteration %d is not in [0, %d]\n", r->rank, r->it,
            r->opt.iters);
    return -1;
  }
  /* Checked before it sizes an allocation; grid_adopt checks the rest. */
  if (check_map(g->dist, g->nx, g->ny, r->nprocs) != 0 ||
      failed(PCM_Dist_local(g->dist, r->rank, NULL, NULL, &elements), "PCM_Dist_local")) {
    return -1;
  }
  g->cur = malloc(sizeof(double) * (size_t)(elements > 0 ? elements : 1));
  if (g->cur == NULL) {
    fprintf(stderr, "heat2d: rank %d: out of memory for %ld values\n", r->rank, elements);
    return -1;
  }
  if (failed(PCM_Load(r->rank, "grid", g->cur, PCM_DOUBLE, elements), "PCM_Load(grid)")) return -1;
  return grid_adopt(g, r->rank, r->nprocs);
}

/*
 * --commit-every: makes the grid as it stands before iteration r->it a durable version in pcmd
 * (rank 0 adds the map and the reconfiguration count), so that a restart computes r->it next.
 * Collective. Returns 0, or -1 on every process (reported).
 */
static int commit(const Run *r) {
  int ok = 1;
  if (r->rank == 0) {
    ok = !failed(PCM_Store_dist(0, "dist", r->grid.dist), "PCM_Store_dist(dist)") &&
         !failed(PCM_Store(0, "reconfigs", &r->reconfigs, PCM_INT, 1), "PCM_Store(reconfigs)");
  }
  ok = ok && !failed(PCM_Store(r->rank, "grid", r->grid.cur, PCM_DOUBLE, r->grid.elements),
                     "PCM_Store(grid)");
  if (!all_ok(ok, r->world)) return -1;
  /* Collective and the same code everywhere: no vote needed after it. */
  return failed(PCM_Commit(r->world, r->it), "PCM_Commit") ? -1 : 0;
}

/*
 * A process of a job restarted (PCM_RESTART=1) from its newest committed version: lays the grid
 * out by the command line's layout over this run's processes, whatever count and map the version
 * was committed with, and takes up the iteration and reconfiguration count. Local; returns 0 or
 * -1 (reported), to be voted on. *then gets the version's process count.
 */
static int restart(Run *r, int *then) {
  Grid *g = &r->grid;
  PCM_Dist old = NULL;
  long elements = 0;
  int rc = -1;
  if (failed(PCM_Restart_info(&r->it, then), "PCM_Restart_info") ||
      failed(PCM_Load(0, "reconfigs", &r->reconfigs, PCM_INT, 1), "PCM_Load(reconfigs)") ||
      failed(PCM_Load_dist(0, "dist", &old), "PCM_Load_dist(dist)")) {
    goto out;
  }
  if (r->it < 0 || r->it > r->opt.iters) {
    fprintf(stderr, "heat2d: rank %d: the version's iteration %d is not in [0, %d]\n", r->rank,
            r->it, r->opt.iters);
    goto out;
  }
  /* The stored map must describe this grid (same --nx and --ny) before it indexes the store. */
  if (check_map(old, g->nx, g->ny, *then) != 0 ||
      failed(PCM_Dist_create(pcm_layout(&r->opt), r->opt.nx, r->opt.ny, r->opt.block, 1, r->nprocs,
                             &g->dist),
             "PCM_Dist_create") ||
      failed(PCM_Dist_local(g->dist, r->rank, NULL, NULL, &elements), "PCM_Dist_local")) {
    goto out;
  }
  /* Zeroed: PCM_Load_redistribute leaves the ghosts alone, and the first exchange fills them. */
  g->cur = calloc((size_t)(elements > 0 ? elements : 1), sizeof(double));
  if (g->cur == NULL) {
    fprintf(stderr, "heat2d: rank %d: out of memory for %ld values\n", r->rank, elements);
    goto out;
  }
  if (failed(PCM_Load_redistribute("grid", PCM_DOUBLE, old, g->dist, r->rank, g->cur),
             "PCM_Load_redistribute(grid)")) {
    goto out;
  }
  rc = grid_adopt(g, r->rank, r->nprocs);
out:
  PCM_Dist_free(&old);
  return rc;
}

/* The trace's name for a reconfiguration (or restart) from `from` to `to` processes. */
static void event_name(char event[64], const char *kind, int from, int to, double seconds) {
  snprintf(event, 64, "%s %d->%d %.3fs", kind, from, to, seconds);
}

/*
 * After a reconfiguration that took `seconds` (as this process saw it), in every process of the
 * new world: rank 0 writes the trace's event row, and every process starts a new progress
 * interval.
 */
static void trace_event(Run *r, const char *kind, int procs_before, double seconds) {
  char event[64];
  event_name(event, kind, procs_before, r->nprocs, seconds);
  heat2d_progress_event(&r->progress, r->rank, r->it, r->nprocs, event);
}

/* PCM_MIGRATE / PCM_RECONFIGURE: one process moves; ranks and the map stay as they are. */
static int migrate(Run *r, int s) {
  double t;
  int rc, ok = 1;
  if (s == PCM_MIGRATE) ok = store_state(r) == 0;
  if (!all_ok(ok, r->world)) return FAIL;
  t = heat2d_wall_seconds();
  rc = PCM_Reconfigure(&r->world, r->command);
  if (rc == PCM_ERR_SPAWN) {
    /* The old world is intact and every process got the same code: keep computing in it. */
    if (r->rank == 0) failed(rc, "PCM_Reconfigure (continuing without migrating)");
    return GO_ON;
  }
  if (failed(rc, "PCM_Reconfigure")) return FAIL;
  if (r->world == MPI_COMM_NULL) return RETIRE;
  ok = !failed(PCM_Comm_rank(r->world, &r->rank), "PCM_Comm_rank");
  MPI_Comm_size(r->world, &r->nprocs);
  /* The plan would survive a migration (same ranks, same map); rebuilding keeps one path. */
  ok = ok && grid_adopt(&r->grid, r->rank, r->nprocs) == 0;
  r->reconfigs++;
  /* Pairs with the replacement's start-up vote; includes waiting for it to load its state, which
   * is part of the cost. */
  if (!all_ok(ok, r->world)) return FAIL;
  t = heat2d_wall_seconds() - t;
  if (r->rank == 0) {
    printf("heat2d: migration %d at iter %d %.3f s\n", r->reconfigs, r->it, t);
    fflush(stdout);
  }
  trace_event(r, "migrate", r->nprocs, t);
  return GO_ON;
}

/*
 * PCM_SPLIT in a process of the old world: the data moves to a newly spawned world and this
 * process retires. The new processes learn the reconfiguration count and the old size from
 * rank 0's store (PCM_Split carries only data, map and iteration).
 */
static int split(Run *r) {
  const int procs_before = r->nprocs, n = r->reconfigs + 1;
  void *buf = r->grid.cur;
  int rc, ok = 1, resume = r->it, rank = -1, size = 0;
  double t;
  if (r->rank == 0) {
    ok = !failed(PCM_Store(0, "reconfigs", &n, PCM_INT, 1), "PCM_Store(reconfigs)") &&
         !failed(PCM_Store(0, "procs", &procs_before, PCM_INT, 1), "PCM_Store(procs)");
  }
  if (!all_ok(ok, r->world)) return FAIL;
  t = heat2d_wall_seconds();
  rc = PCM_Split(&buf, PCM_DOUBLE, &r->grid.dist, &resume, &rank, &size, &r->world, r->command);
  /* PCM owns the buffer now: it freed it (NULL) or, after a spawn failure, left it as it was. */
  r->grid.cur = buf;
  if (rc == PCM_ERR_SPAWN) {
    if (r->rank == 0) failed(rc, "PCM_Split (continuing without splitting)");
    return GO_ON;
  }
  if (failed(rc, "PCM_Split")) return FAIL;
  if (r->world == MPI_COMM_NULL) return RETIRE;
  r->rank = rank;
  r->nprocs = size;
  /* PCM retires every old process today; should one stay, it joins the new processes' start-up
   * vote like a survivor of a merge. */
  ok = resume == r->it && grid_adopt(&r->grid, r->rank, r->nprocs) == 0;
  r->reconfigs = n;
  if (!all_ok(ok, r->world)) return FAIL;
  t = heat2d_wall_seconds() - t;
  if (r->rank == 0) {
    printf("heat2d: split %d at iter %d %.3f s (procs %d -> %d)\n", n, r->it, t, procs_before,
           r->nprocs);
    fflush(stdout);
  }
  trace_event(r, "split", procs_before, t);
  return GO_ON;
}

/* PCM_MERGE: the data moves inside the world; survivors carry on, the others retire. */
static int merge(Run *r) {
  const int procs_before = r->nprocs;
  void *buf = r->grid.cur;
  long cnt = -1;
  int rc, ok, mrank = -2, resume = r->it, rank = -1, size = 0;
  /* T: from this survivor's entry into the merge to the end of the vote after it. */
  double t = heat2d_wall_seconds();
  /* Informational (PCM_Merge allocates): only used below to check PCM_Merge's result. */
  ok = !failed(PCM_Merge_datacnts(r->grid.dist, &cnt, &mrank, r->world), "PCM_Merge_datacnts");
  if (!all_ok(ok, r->world)) return FAIL;
  rc = PCM_Merge(&buf, PCM_DOUBLE, &r->grid.dist, &resume, &rank, &size, &r->world);
  r->grid.cur = buf;
  if (failed(rc, "PCM_Merge")) return FAIL;
  if (r->world == MPI_COMM_NULL) {
    if (cnt != 0 || mrank != -1) {
      fprintf(stderr,
              "heat2d: left in a merge that PCM_Merge_datacnts said keeps %ld values "
              "at rank %d\n",
              cnt, mrank);
    }
    return RETIRE;
  }
  r->rank = rank;
  r->nprocs = size;
  ok = grid_adopt(&r->grid, r->rank, r->nprocs) == 0;
  if (ok && (cnt != r->grid.elements || mrank != r->rank || resume != r->it)) {
    fprintf(stderr,
            "heat2d: PCM_Merge gave rank %d, %ld values, iteration %d; PCM_Merge_datacnts "
            "promised rank %d, %ld values (iteration %d)\n",
            r->rank, r->grid.elements, resume, mrank, cnt, r->it);
    ok = 0;
  }
  r->reconfigs++; /* every survivor took part */
  if (!all_ok(ok, r->world)) return FAIL;
  t = heat2d_wall_seconds() - t;
  if (r->rank == 0) {
    printf("heat2d: merge %d at iter %d %.3f s (procs %d -> %d)\n", r->reconfigs, r->it, t,
           procs_before, r->nprocs);
    fflush(stdout);
  }
  trace_event(r, "merge", procs_before, t);
  return GO_ON;
}

/*
 * A process spawned by a split: receives data, map and iteration, then the counters. Returns FAIL
 * if PCM_Split failed (on every process alike), else 0 with *ok saying whether the rest went well
 * here (to be voted on).
 */
static int join_split(Run *r, int *procs_before, int *ok) {
  void *buf = NULL;
  r->grid.dist = NULL;
  if (failed(PCM_Split(&buf, PCM_DOUBLE, &r->grid.dist, &r->it, &r->rank, &r->nprocs, &r->world,
                       r->command),
             "PCM_Split (new process)")) {
    free(buf);
    return FAIL;
  }
  r->grid.cur = buf;
  *ok = !failed(PCM_Load(0, "reconfigs", &r->reconfigs, PCM_INT, 1), "PCM_Load(reconfigs)") &&
        !failed(PCM_Load(0, "procs", procs_before, PCM_INT, 1), "PCM_Load(procs)");
  if (*ok && (r->it < 0 || r->it > r->opt.iters)) {
    fprintf(stderr, "heat2d: rank %d: split resumes at iteration %d, not in [0, %d]\n", r->rank,
            r->it, r->opt.iters);
    *ok = 0;
  }
  *ok = *ok && grid_adopt(&r->grid, r->rank, r->nprocs) == 0;
  return 0;
}

int main(int argc, char **argv) {
  Run run;
  int s, rc, ok = 0, start_it, procs_before = 0, then = 0, outcome = GO_ON;
  int restarted_at = -1; /* a restarted run does not commit again the version it came from */
  uint64_t sum;
  double t0, seconds, joined, t_start = heat2d_wall_seconds();
  char event[64] = "start"; /* the trace's first row from this process */

  memset(&run, 0, sizeof run); /* so that the failure path may free the grid */
  run.world = MPI_COMM_NULL;
  run.command = argv[0];
  if (failed(MPI_PCM_Init(&argc, &argv), "MPI_PCM_Init")) {
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  /* Parse before PCM_Init so that a mistyped command line never registers a job with pcmd. */
  MPI_Comm_rank(MPI_COMM_WORLD, &run.rank);
  rc = heat2d_parse_options(argc, argv, run.rank == 0, &run.opt);
  if (rc != 0) {
    PCM_Finalize(MPI_COMM_NULL);
    return rc > 0 ? 0 : 2; /* rc > 0: --help */
  }
  run.grid.nx = run.opt.nx;
  run.grid.ny = run.opt.ny;
  run.world = MPI_COMM_WORLD;
  if (failed(PCM_Init(&run.world), "PCM_Init")) {
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }

  s = PCM_Process_Status();
  if (s == PCM_STARTED) {
    MPI_Comm_rank(run.world, &run.rank);
    MPI_Comm_size(run.world, &run.nprocs);
    ok = grid_start(&run.grid, &run.opt, run.rank, run.nprocs) == 0;
  } else if (s == PCM_MIGRATED) {
    MPI_Comm_size(run.world, &run.nprocs);
    ok = !failed(PCM_Comm_rank(run.world, &run.rank), "PCM_Comm_rank") && load_state(&run) == 0;
  } else if (s == PCM_RESTARTED) {
    MPI_Comm_rank(run.world, &run.rank);
    MPI_Comm_size(run.world, &run.nprocs);
    ok = restart(&run, &then) == 0;
  } else if (s == PCM_SPLITTED) {
    /* Must come right after PCM_Init: the old world waits in PCM_Split. PCM_Split is collective
     * and fails alike everywhere, so a failure goes straight to the exit. */
    if (join_split(&run, &procs_before, &ok) == FAIL) goto fail;
  } else {
    fprintf(stderr, "heat2d: unexpected process status %d\n", s);
    ok = 0;
  }
  /* A migrated process votes together with the survivors' vote right after PCM_Reconfigure;
   * the processes of a split vote among themselves (the old ones have retired). */
  if (!all_ok(ok, run.world)) goto fail;
  joined = heat2d_wall_seconds() - t_start;
  if (s == PCM_RESTARTED) {
    if (run.rank == 0) {
      printf("heat2d: restarted from iteration %d (%d -> %d processes)\n", run.it, then,
             run.nprocs);
      fflush(stdout);
    }
    event_name(event, "restart", then, run.nprocs, joined);
  } else if (s != PCM_STARTED) {
    /* The old rank 0 has retired (or was never in this world), so a new process reports; its
     * view of the cost is from its own start (before MPI_Init) to here, which includes joining
     * the world and receiving the data but not the old world's spawn call before it started. */
    if (s == PCM_MIGRATED) {
      procs_before = run.nprocs;
      if (run.rank == 0) {
        printf("heat2d: migration %d at iter %d %.3f s (new rank 0)\n", run.reconfigs, run.it,
               joined);
      }
    } else if (run.rank == 0) {
      printf("heat2d: split %d at iter %d %.3f s (procs %d -> %d)\n", run.reconfigs, run.it, joined,
             procs_before, run.nprocs);
    }
    fflush(stdout);
    event_name(event, s == PCM_MIGRATED ? "migrate" : "split", procs_before, run.nprocs, joined);
  }

  start_it = run.it;
  if (PCM_Process_Status() == PCM_RESTARTED) restarted_at = run.it;
  t0 = MPI_Wtime();
  /* In a migration that rank 0 survived, rank 0 has written the event already (trace_event). */
  heat2d_progress_init(&run.progress, &run.opt, run.rank, run.it, run.nprocs, event);
  for (; run.it < run.opt.iters; run.it++) {
    s = PCM_Status(run.world);
    if (s == PCM_ERROR) {
      /* PCM_Status is collective and fails on every process alike. */
      fprintf(stderr, "heat2d: PCM_Status: %s\n", PCM_Last_error());
      goto fail;
    }
    outcome = GO_ON;
    if (s != PCM_NONE) heat2d_progress_cut(&run.progress, run.rank, run.it, run.nprocs);
    if (s == PCM_MIGRATE || s == PCM_RECONFIGURE) {
      outcome = migrate(&run, s);
    } else if (s == PCM_SPLIT) {
      outcome = split(&run);
    } else if (s == PCM_MERGE) {
      outcome = merge(&run);
    }
    if (outcome == FAIL) goto fail;
    if (outcome == RETIRE) break;
    if (run.opt.commit_every > 0 && run.it > 0 && run.it % run.opt.commit_every == 0 &&
        run.it != restarted_at && commit(&run) != 0) {
      goto fail;
    }
    if (grid_exchange(&run.grid, run.world) != MPI_SUCCESS) {
      /* The neighbours may be anywhere in the exchange: no collective way out is left. */
      fprintf(stderr, "heat2d: rank %d: halo exchange failed\n", run.rank);
      MPI_Abort(run.world, 1);
    }
    grid_step(&run.grid);
    heat2d_throttle(run.opt.throttle_us);
    heat2d_progress(&run.progress, run.rank, run.it + 1, run.opt.iters, run.nprocs);
  }
  seconds = MPI_Wtime() - t0;
  heat2d_progress_close(&run.progress);

  if (outcome == RETIRE) {
    /* The data lives on elsewhere; this process must not touch the world again. The line shows
     * (and the tests check) that a parked process uses next to no CPU. */
    double wall0, cpu0;
    grid_free(&run.grid);
    wall0 = heat2d_wall_seconds();
    cpu0 = heat2d_cpu_seconds();
    if (failed(PCM_Exit(), "PCM_Exit")) return 1;
    printf("heat2d: retired parked %.3f s cpu %.3f s\n", heat2d_wall_seconds() - wall0,
           heat2d_cpu_seconds() - cpu0);
    fflush(stdout);
    return 0;
  }

  rc = grid_checksum(&run.grid, run.world, run.rank, run.nprocs, run.opt.dump, &sum);
  if (rc == -2) {
    fprintf(stderr, "heat2d: rank %d: gathering the grid failed\n", run.rank);
    MPI_Abort(run.world, 1);
  }
  if (rc == -1) goto fail;
  if (run.rank == 0) {
    heat2d_print_result(run.opt.iters, run.nprocs, seconds, run.opt.iters - start_it, sum);
    printf("reconfigurations %d\n", run.reconfigs);
    fflush(stdout);
  }
  grid_free(&run.grid);
  if (failed(PCM_Finalize(run.world), "PCM_Finalize")) return 1;
  return rc == 0 ? 0 : 1; /* -3: rank 0 could not write the dump (reported) */

fail:
  /* Every path here is taken by all processes of the world together, so finalizing is safe. */
  heat2d_progress_close(&run.progress);
  grid_free(&run.grid);
  PCM_Finalize(run.world);
  return 1;
}
