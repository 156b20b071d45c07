/* heat2d_grid.c — heat2d_pcm's grid laid out by a PCM map (any layout), and its reports. */
#include "heat2d_grid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The PCM layout that --layout names. */
static int pcm_layout(const Heat2dOptions *opt) {
  return opt->layout == HEAT2D_CYCLIC         ? PCM_CYCLIC
         : opt->layout == HEAT2D_BLOCK_CYCLIC ? PCM_BLOCK_CYCLIC
                                              : PCM_BLOCK;
}

int heat2d_grid_layout(Heat2dGrid *g, const Heat2dOptions *opt, int rank, int nprocs, int fill) {
  long elements = 0, k;
  if (PCM_Dist_create(pcm_layout(opt), opt->nx, opt->ny, opt->block, 1, nprocs, &g->dist) != 0 ||
      PCM_Dist_local(g->dist, rank, NULL, NULL, &elements) != 0) {
    return -1;
  }
  g->mesh.nx = opt->nx;
  g->mesh.ny = opt->ny;
  if (!fill) return 0;
  g->mesh.cur = calloc((size_t)(elements > 0 ? elements : 1), sizeof(double));
  if (g->mesh.cur == NULL) return -1;
  for (k = 0; k < elements; k += opt->ny) g->mesh.cur[k] = 100.0;
  return 0;
}

/* Whether every rank holds at most one segment, the segments in rank order and the empty ranks
 * last: then plain's two-neighbour exchange is right. The same answer on every rank (it reads
 * the whole map), so that every rank exchanges the same way. */
static int contiguous(PCM_Dist dist, int nprocs, long units) {
  long next = 0, nseg, first, count;
  int r;
  for (r = 0; r < nprocs; r++) {
    if (PCM_Dist_local(dist, r, &nseg, NULL, NULL) != 0 || nseg > 1) return 0;
    if (nseg == 0) continue;
    if (next == units || PCM_Dist_segment(dist, r, 0, &first, &count, NULL) != 0 || first != next)
      return 0;
    next += count;
  }
  return 1;
}

int heat2d_grid_adopt(Heat2dGrid *g, MPI_Comm world) {
  long elements = 0, units = 0, unit_len = 0, k;
  free(g->mesh.next);
  free(g->seg);
  PCM_Halo_free(&g->halo);
  g->mesh.next = NULL;
  g->seg = NULL;
  MPI_Comm_rank(world, &g->rank);
  MPI_Comm_size(world, &g->nprocs);
  if (PCM_Dist_info(g->dist, NULL, NULL, &units, &unit_len, NULL, NULL) != 0 ||
      PCM_Dist_local(g->dist, g->rank, &g->nseg, NULL, &elements) != 0) {
    return -1;
  }
  g->mesh.nx = (int)units; /* a spawned process learns the grid from the map */
  g->mesh.ny = (int)unit_len;
  g->seg = malloc(sizeof(long) * 3 * (size_t)(g->nseg > 0 ? g->nseg : 1));
  /* next starts as a copy of cur: the step never writes the fixed boundary rows. */
  g->mesh.next = malloc(sizeof(double) * (size_t)(elements > 0 ? elements : 1));
  if (g->seg == NULL || g->mesh.next == NULL) return -1;
  if (elements > 0) memcpy(g->mesh.next, g->mesh.cur, sizeof(double) * (size_t)elements);
  for (k = 0; k < g->nseg; k++) {
    if (PCM_Dist_segment(g->dist, g->rank, k, &g->seg[3 * k], &g->seg[3 * k + 1],
                         &g->seg[3 * k + 2]) != 0) {
      return -1;
    }
  }
  g->mesh.first_col = g->nseg > 0 ? (int)g->seg[0] : (int)units;
  g->mesh.ncols = g->nseg > 0 ? (int)g->seg[1] : 0;
  if (contiguous(g->dist, g->nprocs, units)) {
    heat2d_mesh_set_rank(&g->mesh, g->rank, g->nprocs);
    return 0;
  }
  return PCM_Halo_create(g->dist, g->rank, 1, PCM_DOUBLE, &g->halo) == PCM_SUCCESS ? 0 : -1;
}

int heat2d_grid_exchange(Heat2dGrid *g, MPI_Comm world) {
  if (g->halo != NULL)
    return PCM_Halo_exchange(g->halo, g->mesh.cur, world) == PCM_SUCCESS ? 0 : -1;
  return heat2d_exchange(&g->mesh, world) == MPI_SUCCESS ? 0 : -1;
}

void heat2d_grid_step(Heat2dGrid *g) {
  double *tmp;
  long k;
  if (g->halo == NULL) {
    heat2d_step(&g->mesh);
    return;
  }
  for (k = 0; k < g->nseg; k++) {
    heat2d_step_columns(g->mesh.cur + g->seg[3 * k + 2], g->mesh.next + g->seg[3 * k + 2],
                        g->mesh.ny, g->mesh.nx, g->seg[3 * k], g->seg[3 * k + 1]);
  }
  tmp = g->mesh.cur;
  g->mesh.cur = g->mesh.next;
  g->mesh.next = tmp;
}

int heat2d_grid_checksum(const Heat2dGrid *g, MPI_Comm world, const char *dump, uint64_t *sum) {
  double *all = NULL;
  int rc;
  *sum = 0;
  if (g->rank == 0) all = malloc(sizeof(double) * (size_t)g->mesh.nx * (size_t)g->mesh.ny);
  /* PCM_Dist_gather agrees on its arguments: no buffer on rank 0 fails it everywhere. */
  rc = PCM_Dist_gather(g->dist, g->mesh.cur, PCM_DOUBLE, 0, world, all) == PCM_SUCCESS ? 0 : -1;
  if (rc == 0 && g->rank == 0 && heat2d_result(all, NULL, g->mesh.nx, g->mesh.ny, dump, sum) != 0)
    rc = -3;
  free(all);
  return rc;
}

void heat2d_grid_free(Heat2dGrid *g) {
  free(g->seg);
  g->seg = NULL;
  PCM_Halo_free(&g->halo);
  heat2d_mesh_destroy(&g->mesh);
  PCM_Dist_free(&g->dist);
}

int heat2d_progress_register(Heat2dProgress *p) {
  int rc = PCM_Register_value("progress.t", &p->t_last, PCM_DOUBLE, 1);
  return rc != PCM_SUCCESS ? rc : PCM_Register_value("progress.it", &p->it_last, PCM_INT, 1);
}

void heat2d_progress_reconfig(Heat2dProgress *p, MPI_Comm world, int it, int reconfigs) {
  static const char *const kWords[] = {"", "migration", "", "split", "merge"};
  char event[512], why[420] = "";
  int kind = 0, before = 0, rank, nprocs;
  double started = heat2d_epoch_seconds(), seconds;
  PCM_Reconfig_last(&kind, &before, &started);
  PCM_Reconfig_reason(why, (int)sizeof why);
  seconds = heat2d_epoch_seconds() - started;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &nprocs);
  if (rank == 0) {
    printf("heat2d: %s %d at iter %d %.3f s (procs %d -> %d)\n",
           kind >= 1 && kind <= 4 ? kWords[kind] : "reconfiguration", reconfigs, it, seconds,
           before, nprocs);
    fflush(stdout);
  }
  /* The trace's event: "split 1->2 0.412s; policy: ..." (who asked and why, as pcmd said). */
  snprintf(event, sizeof event, "%s %d->%d %.3fs%s%s",
           kind == PCM_MIGRATE ? "migrate" : kWords[kind], before, nprocs, seconds,
           why[0] ? "; " : "", why);
  heat2d_progress_reconfigured(p, rank, it, before, nprocs, started, event);
}

void heat2d_progress_start(Heat2dProgress *p, const Heat2dOptions *opt, MPI_Comm world, int it,
                           int reconfigs, int origin) {
  char event[64];
  int rank, nprocs, then = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &nprocs);
  if (origin == PCM_MIGRATED || origin == PCM_SPLITTED) {
    /* The interval in progress came with the registered state. */
    const double t_last = p->t_last;
    const int it_last = p->it_last;
    heat2d_progress_init(p, opt, rank, it, nprocs, NULL);
    p->t_last = t_last;
    p->it_last = it_last;
    heat2d_progress_reconfig(p, world, it, reconfigs);
    return;
  }
  snprintf(event, sizeof event, "start");
  if (origin == PCM_RESTARTED) {
    PCM_Restart_info(NULL, &then);
    if (rank == 0) {
      printf("heat2d: restarted from iteration %d (%d -> %d processes)\n", it, then, nprocs);
      fflush(stdout);
    }
    snprintf(event, sizeof event, "restart %d->%d", then, nprocs);
  }
  heat2d_progress_init(p, opt, rank, it, nprocs, event);
}

int heat2d_retire(Heat2dGrid *g, Heat2dProgress *p) {
  /* The data lives on elsewhere; this process must not touch the world again. The line shows
   * (and the tests check) that a parked process uses next to no CPU. */
  double wall0, cpu0;
  int rc;
  heat2d_progress_close(p);
  heat2d_grid_free(g);
  wall0 = heat2d_wall_seconds();
  cpu0 = heat2d_cpu_seconds();
  rc = PCM_Exit();
  if (rc == PCM_EXIT_STOPPED) {
    /* A signal or `pcmctl stop`: the last version is written; PCM_RESTART=1 resumes from it. */
    printf("heat2d: stopped\n");
    fflush(stdout);
    return PCM_EXIT_STOPPED;
  }
  if (rc != PCM_SUCCESS) {
    fprintf(stderr, "heat2d: PCM_Exit: %s\n", PCM_Last_error());
    return 1;
  }
  printf("heat2d: retired parked %.3f s cpu %.3f s\n", heat2d_wall_seconds() - wall0,
         heat2d_cpu_seconds() - cpu0);
  fflush(stdout);
  return 0;
}
