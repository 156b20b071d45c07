/* mpi_halo.c — MPI test without pcmd (plain MPI_Init): PCM_Halo_exchange fills every ghost of
 * block, cyclic and block-cyclic maps from its owner, and PCM_Dist_gather rebuilds the global
 * array on any root; bad arguments give the same error on every rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcm.h"

static int g_rank, g_size;
static int g_ok = 1; /* this rank has seen no mismatch; only the first one is printed */

static void mismatch(const char *what, long a, long b, long c) {
  if (g_ok)
    fprintf(stdout, "mpi_halo: rank %d of %d: %s (%ld, %ld, %ld)\n", g_rank, g_size, what, a, b, c);
  g_ok = 0;
}

static void expect_rc(int rc, int want, const char *call) {
  if (rc != want) {
    if (g_ok)
      fprintf(stdout, "mpi_halo: rank %d: %s returned %d, expected %d: %s\n", g_rank, call, rc,
              want, PCM_Last_error());
    g_ok = 0;
  }
}

/* Elements are doubles or ints; each holds f(global unit, element), ghosts a sentinel. */
static double value_of(PCM_Datatype type, long unit, long element) {
  return unit * 1000.0 + element + (type == PCM_DOUBLE ? 0.25 : 0.0);
}
#define SENTINEL (-1.0)

static size_t elem_size(PCM_Datatype type) {
  return type == PCM_DOUBLE ? sizeof(double) : sizeof(int);
}
static void put(void *buf, PCM_Datatype type, long i, double v) {
  if (type == PCM_DOUBLE)
    ((double *)buf)[i] = v;
  else
    ((int *)buf)[i] = (int)v;
}
static double get(const void *buf, PCM_Datatype type, long i) {
  return type == PCM_DOUBLE ? ((const double *)buf)[i] : ((const int *)buf)[i];
}

/* One map and width: exchange (twice, with one plan), check every element of this rank's buffer
 * and the plan's entries, then gather on the first and the last rank and check the result. */
static void check_case(int layout, long units, long unit_len, long block, long halo, long width,
                       PCM_Datatype type) {
  PCM_Dist dist = NULL;
  PCM_Halo plan = NULL;
  long nseg = 0, nunits = 0, nelem = 0, i, j, e, entries = 0, entry_units = 0, ghosts = 0;
  void *buf = NULL;
  int rep, r;
  int roots[2];

  expect_rc(PCM_Dist_create(layout, units, unit_len, block, halo, g_size, &dist), PCM_SUCCESS,
            "PCM_Dist_create");
  if (!dist) return; /* the same on every rank: the parameters are */
  expect_rc(PCM_Dist_local(dist, g_rank, &nseg, &nunits, &nelem), PCM_SUCCESS, "PCM_Dist_local");
  /* A rank without units passes NULL, as it may. */
  if (nelem > 0) buf = malloc((size_t)nelem * elem_size(type));
  for (i = 0; i < nelem; ++i) put(buf, type, i, SENTINEL);
  for (i = 0; i < nseg; ++i) {
    long first, count, off;
    PCM_Dist_segment(dist, g_rank, i, &first, &count, &off);
    for (j = 0; j < count; ++j)
      for (e = 0; e < unit_len; ++e)
        put(buf, type, off + j * unit_len + e, value_of(type, first + j, e));
  }

  expect_rc(PCM_Halo_create(dist, g_rank, width, type, &plan), PCM_SUCCESS, "PCM_Halo_create");
  for (rep = 0; rep < 2; ++rep)
    expect_rc(PCM_Halo_exchange(plan, buf, MPI_COMM_WORLD), PCM_SUCCESS, "PCM_Halo_exchange");

  for (i = 0; i < nseg; ++i) {
    long first, count, off;
    PCM_Dist_segment(dist, g_rank, i, &first, &count, &off);
    for (j = -halo; j < count + halo; ++j) {
      long unit = first + j, distance = j < 0 ? -j : j - count + 1;
      int owned = j >= 0 && j < count;
      int filled = !owned && distance <= width && unit >= 0 && unit < units;
      if (filled) ++ghosts;
      for (e = 0; e < unit_len; ++e) {
        double want = owned || filled ? value_of(type, unit, e) : SENTINEL;
        double got = get(buf, type, off + j * unit_len + e);
        if (got != want) {
          char what[160];
          snprintf(what, sizeof what,
                   "layout %d units %ld len %ld block %ld halo %ld width %ld: unit %ld element "
                   "%ld holds %.2f, expected %.2f",
                   layout, units, unit_len, block, halo, width, unit, e, got, want);
          mismatch(what, first, count, off);
          goto entries;
        }
      }
    }
  }
entries:
  expect_rc(PCM_Halo_entries(plan, &entries), PCM_SUCCESS, "PCM_Halo_entries");
  for (i = 0; i < entries; ++i) {
    int peer = -1;
    long ghost = -1, source = -1, n = 0;
    expect_rc(PCM_Halo_entry(plan, i, &peer, &ghost, &source, &n), PCM_SUCCESS, "PCM_Halo_entry");
    if (peer < 0 || peer >= g_size || ghost < 0 || source < 0 || n < 1 ||
        ghost + n * unit_len > nelem)
      mismatch("bad halo entry", i, ghost, n);
    entry_units += n;
  }
  if (entry_units != ghosts)
    mismatch("the entries' units are not the ghosts", entry_units, ghosts, 0);
  expect_rc(PCM_Halo_entry(plan, entries, NULL, NULL, NULL, NULL), PCM_ERR_ARG, "PCM_Halo_entry");

  roots[0] = 0;
  roots[1] = g_size - 1;
  for (r = 0; r < 2; ++r) {
    int root = roots[r];
    void *global = NULL;
    if (g_rank == root) {
      global = malloc((size_t)(units * unit_len) * elem_size(type));
      for (i = 0; i < units * unit_len; ++i) put(global, type, i, SENTINEL);
    }
    expect_rc(PCM_Dist_gather(dist, buf, type, root, MPI_COMM_WORLD, global), PCM_SUCCESS,
              "PCM_Dist_gather");
    if (g_rank == root) {
      for (i = 0; i < units; ++i) {
        for (e = 0; e < unit_len; ++e) {
          if (get(global, type, i * unit_len + e) != value_of(type, i, e)) {
            mismatch("gathered element differs: layout, unit, element", layout, i, e);
            i = units;
            break;
          }
        }
      }
    }
    free(global);
  }

  expect_rc(PCM_Halo_free(&plan), PCM_SUCCESS, "PCM_Halo_free");
  if (plan) mismatch("PCM_Halo_free left the handle set", 0, 0, 0);
  free(buf);
  PCM_Dist_free(&dist);
}

/* Errors: local ones on one rank, collective ones the same on every rank. */
static void check_errors(void) {
  PCM_Dist dist = NULL, wrong = NULL;
  PCM_Halo plan = NULL;
  long nelem = 0;
  double *buf = NULL;
  double *global = malloc(8 * 2 * sizeof(double));
  int root;

  PCM_Dist_create(PCM_BLOCK, 8, 2, 1, 1, g_size, &dist);
  PCM_Dist_local(dist, g_rank, NULL, NULL, &nelem);
  buf = calloc((size_t)nelem + 1, sizeof(double));

  expect_rc(PCM_Halo_create(dist, g_rank, 2, PCM_DOUBLE, &plan), PCM_ERR_ARG, "PCM_Halo_create");
  if (strstr(PCM_Last_error(), "PCM_Halo_create") == NULL)
    mismatch("PCM_Last_error does not name PCM_Halo_create", 0, 0, 0);
  expect_rc(PCM_Halo_create(dist, g_rank, -1, PCM_DOUBLE, &plan), PCM_ERR_ARG, "PCM_Halo_create");
  expect_rc(PCM_Halo_create(dist, g_size, 1, PCM_DOUBLE, &plan), PCM_ERR_ARG, "PCM_Halo_create");
  expect_rc(PCM_Halo_create(NULL, g_rank, 1, PCM_DOUBLE, &plan), PCM_ERR_ARG, "PCM_Halo_create");
  expect_rc(PCM_Halo_create(dist, g_rank, 1, (PCM_Datatype)99, &plan), PCM_ERR_ARG,
            "PCM_Halo_create");
  expect_rc(PCM_Halo_create(dist, g_rank, 1, PCM_DOUBLE, NULL), PCM_ERR_ARG, "PCM_Halo_create");
  if (plan) mismatch("a failed PCM_Halo_create set the handle", 0, 0, 0);
  expect_rc(PCM_Halo_exchange(NULL, buf, MPI_COMM_WORLD), PCM_ERR_ARG, "PCM_Halo_exchange");
  expect_rc(PCM_Halo_free(NULL), PCM_SUCCESS, "PCM_Halo_free");

  /* Another rank's plan: refused before anything is sent, on every rank. */
  expect_rc(PCM_Halo_create(dist, (g_rank + 1) % g_size, 1, PCM_DOUBLE, &plan), PCM_SUCCESS,
            "PCM_Halo_create");
  expect_rc(PCM_Halo_exchange(plan, buf, MPI_COMM_WORLD), g_size > 1 ? PCM_ERR_ARG : PCM_SUCCESS,
            "PCM_Halo_exchange");
  PCM_Halo_free(&plan);

  expect_rc(PCM_Dist_gather(dist, buf, PCM_DOUBLE, g_size, MPI_COMM_WORLD, global), PCM_ERR_ARG,
            "PCM_Dist_gather");
  expect_rc(PCM_Dist_gather(dist, buf, PCM_DOUBLE, -1, MPI_COMM_WORLD, global), PCM_ERR_ARG,
            "PCM_Dist_gather");
  /* Only rank 0 passes a NULL map: every rank gets the error. */
  expect_rc(PCM_Dist_gather(g_rank == 0 ? NULL : dist, buf, PCM_DOUBLE, 0, MPI_COMM_WORLD, global),
            PCM_ERR_ARG, "PCM_Dist_gather");
  /* Only the root lacks the output. */
  expect_rc(PCM_Dist_gather(dist, buf, PCM_DOUBLE, g_size - 1, MPI_COMM_WORLD,
                            g_rank == g_size - 1 ? NULL : global),
            PCM_ERR_ARG, "PCM_Dist_gather");
  /* The ranks name different roots. */
  if (g_size > 1) {
    root = g_rank == 0 ? 0 : 1;
    expect_rc(PCM_Dist_gather(dist, buf, PCM_DOUBLE, root, MPI_COMM_WORLD, global), PCM_ERR_ARG,
              "PCM_Dist_gather");
  }
  /* A map for another number of ranks. */
  PCM_Dist_create(PCM_BLOCK, 8, 2, 1, 1, g_size + 1, &wrong);
  expect_rc(PCM_Dist_gather(wrong, buf, PCM_DOUBLE, 0, MPI_COMM_WORLD, global), PCM_ERR_ARG,
            "PCM_Dist_gather");
  expect_rc(PCM_Dist_gather(dist, buf, PCM_DOUBLE, 0, MPI_COMM_NULL, global), PCM_ERR_ARG,
            "PCM_Dist_gather");

  PCM_Dist_free(&wrong);
  PCM_Dist_free(&dist);
  free(buf);
  free(global);
}

int main(int argc, char **argv) {
  const int layouts[4] = {PCM_BLOCK, PCM_CYCLIC, PCM_BLOCK_CYCLIC, PCM_BLOCK_CYCLIC};
  const long blocks[4] = {1, 1, 2, 3};
  const long unit_counts[5] = {1, 3, 7, 20, 41};
  const long unit_lens[2] = {1, 3};
  int l, u, n, all = 0;
  long width;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);

  for (l = 0; l < 4; ++l)
    for (u = 0; u < 5; ++u)
      for (n = 0; n < 2; ++n)
        for (width = 1; width <= 2; ++width)
          check_case(layouts[l], unit_counts[u], unit_lens[n], blocks[l], 2, width, PCM_DOUBLE);
  /* Ghost areas wider than the exchange, and another element size. */
  for (l = 0; l < 4; ++l) {
    check_case(layouts[l], 13, 2, blocks[l], 3, 1, PCM_DOUBLE);
    check_case(layouts[l], 13, 2, blocks[l], 2, 2, PCM_INT);
  }
  check_errors();

  MPI_Allreduce(&g_ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (g_rank == 0 && all) printf("mpi_halo: ok\n");
  MPI_Finalize();
  return all ? 0 : 1;
}
