/* mpi_reshape.c — MPI test and benchmark: a distributed array whose every element encodes its
 * global position goes through whatever splits, merges and migrations pcmd sends; after each,
 * every process checks every element it owns (PCM_Status, or on odd iterations PCM_Status_if_local
 * first). Prints "reshape: ok" from the last world's rank 0.
 * Usage: mpi_reshape UNITS UNIT_LEN LAYOUT(block|cyclic|block-cyclic) ITERS [SLEEP_US].
 * With RESHAPE_STOP_FILE set (for rank 0: spawned processes need not see it), the job also ends
 * at the first iteration where that file exists. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pcm.h"

static double value(long unit, long i) { return (double)unit * 1000003.0 + (double)i; }

/* Walks every element this rank owns: writes its expected value (fill) or counts the elements
 * that differ from it (check). Halos are not touched. */
static long walk(double *buf, PCM_Dist dist, int rank, int fill) {
  long nseg, s, u, i, unit_len, bad = 0;
  PCM_Dist_info(dist, NULL, NULL, NULL, &unit_len, NULL, NULL);
  PCM_Dist_local(dist, rank, &nseg, NULL, NULL);
  for (s = 0; s < nseg; s++) {
    long first, count, off;
    PCM_Dist_segment(dist, rank, s, &first, &count, &off);
    for (u = 0; u < count; u++)
      for (i = 0; i < unit_len; i++) {
        double *e = &buf[off + u * unit_len + i];
        if (fill)
          *e = value(first + u, i);
        else if (*e != value(first + u, i))
          bad++;
      }
  }
  return bad;
}

static long check(double *buf, PCM_Dist dist, int rank) { return walk(buf, dist, rank, 0); }
static void fill(double *buf, PCM_Dist dist, int rank) { walk(buf, dist, rank, 1); }

#define DIE(what)                                                                \
  do {                                                                           \
    fprintf(stderr, "reshape: rank %d: %s: %s\n", rank, what, PCM_Last_error()); \
    return 1;                                                                    \
  } while (0)

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = -1, size, it = 0, iters, layout, s, reconfigs = 0, probed = 0, restarted_from = -1;
  long units, unit_len, elements, bad, allbad;
  long sleep_us;
  double *buf = NULL;
  PCM_Dist dist = NULL;
  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "reshape: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  if (argc < 5) {
    fprintf(stderr, "usage: mpi_reshape UNITS UNIT_LEN LAYOUT ITERS [SLEEP_US]\n");
    PCM_Finalize(world);
    return 2;
  }
  units = atol(argv[1]);
  unit_len = atol(argv[2]);
  layout = strcmp(argv[3], "cyclic") == 0         ? PCM_CYCLIC
           : strcmp(argv[3], "block-cyclic") == 0 ? PCM_BLOCK_CYCLIC
                                                  : PCM_BLOCK;
  iters = atoi(argv[4]);
  sleep_us = argc > 5 ? atol(argv[5]) : 1000;
  PCM_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);

  if (PCM_Process_Status() == PCM_STARTED) {
    if (PCM_Dist_create(layout, units, unit_len, 3, 1, size, &dist) != PCM_SUCCESS) DIE("dist");
    PCM_Dist_local(dist, rank, NULL, NULL, &elements);
    buf = malloc((size_t)(elements > 0 ? elements : 1) * sizeof(double));
    fill(buf, dist, rank);
  } else if (PCM_Process_Status() == PCM_SPLITTED) {
    /* Fault test: a new process dies before it has joined the data exchange. */
    if (getenv("RESHAPE_DIE_IF_SPLITTED")) raise(SIGKILL);
    if (PCM_Split((void **)&buf, PCM_DOUBLE, &dist, &it, &rank, &size, &world, argv[0]) !=
        PCM_SUCCESS)
      DIE("PCM_Split (new process)");
    if (PCM_Load(0, "reconfigs", &reconfigs, PCM_INT, 1) != PCM_SUCCESS) DIE("load reconfigs");
  } else if (PCM_Process_Status() == PCM_RESTARTED) {
    /* From the newest committed version, at whatever process count this run has. */
    PCM_Dist old = NULL;
    int then, old_layout;
    long u, ul, blk, halo;
    if (PCM_Restart_info(&it, &then) != PCM_SUCCESS ||
        PCM_Load_dist(0, "dist", &old) != PCM_SUCCESS)
      DIE("restart info");
    restarted_from = it;
    PCM_Dist_info(old, NULL, &old_layout, &u, &ul, &blk, &halo);
    if (PCM_Dist_create(old_layout == PCM_IRREGULAR ? PCM_BLOCK : old_layout, u, ul, blk, halo,
                        size, &dist) != PCM_SUCCESS)
      DIE("dist");
    PCM_Dist_local(dist, rank, NULL, NULL, &elements);
    buf = malloc((size_t)(elements > 0 ? elements : 1) * sizeof(double));
    if (PCM_Load_redistribute("buf", PCM_DOUBLE, old, dist, rank, buf) != PCM_SUCCESS)
      DIE("PCM_Load_redistribute");
    PCM_Dist_free(&old);
    bad = check(buf, dist, rank);
    MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, world);
    if (rank == 0)
      printf("reshape: restarted from iteration %d (%d -> %d processes), %ld wrong\n", it, then,
             size, allbad);
    fflush(stdout);
  } else { /* migrated */
    if (PCM_Load_dist(rank, "dist", &dist) != PCM_SUCCESS) DIE("load dist");
    PCM_Dist_local(dist, rank, NULL, NULL, &elements);
    buf = malloc((size_t)(elements > 0 ? elements : 1) * sizeof(double));
    if (PCM_Load(rank, "buf", buf, PCM_DOUBLE, elements) != PCM_SUCCESS ||
        PCM_Load(rank, "it", &it, PCM_INT, 1) != PCM_SUCCESS ||
        PCM_Load(rank, "reconfigs", &reconfigs, PCM_INT, 1) != PCM_SUCCESS)
      DIE("load state");
  }
  bad = check(buf, dist, rank);
  MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, world);
  if (allbad) {
    if (rank == 0) fprintf(stderr, "reshape: FAIL: %ld wrong elements at start\n", allbad);
    return 1;
  }

  const long commit_every =
      getenv("RESHAPE_COMMIT_EVERY") ? atol(getenv("RESHAPE_COMMIT_EVERY")) : 0;
  for (; it < iters; it++) {
    double t0 = MPI_Wtime(), spawn, data, rebuild;
    /* A restart (pcmctl run's relaunch keeps RESHAPE_COMMIT_EVERY) has its first version. */
    if (commit_every > 0 && it > 0 && it % commit_every == 0 && it != restarted_from) {
      PCM_Dist_local(dist, rank, NULL, NULL, &elements);
      if ((rank == 0 && PCM_Store_dist(0, "dist", dist) != PCM_SUCCESS) ||
          PCM_Store(rank, "buf", buf, PCM_DOUBLE, elements) != PCM_SUCCESS ||
          PCM_Commit(world, it) != PCM_SUCCESS)
        DIE("commit");
      if (rank == 0) printf("reshape: committed iteration %d\n", it);
      fflush(stdout);
    }
    const char *what = NULL;
    int before = size, rank_before = rank;
    /* Every other iteration as a binding calls it: PCM_Status_if_local first, PCM_Status where
     * the call is not local; a wrong answer would miss or repeat a command, or part the ranks'
     * windows. */
    s = it % 2 ? PCM_Status_if_local(world) : PCM_NOT_LOCAL;
    if (s == PCM_NOT_LOCAL) s = PCM_Status(world);
    if (s == PCM_ERROR) DIE("PCM_Status");
    if (PCM_Process_Status() == PCM_RESTARTED && !probed) {
      /* After set-up a restarted process reads what it stores, not the version it came from. */
      int now = it, back = -1;
      probed = 1;
      if (PCM_Store(rank, "probe", &now, PCM_INT, 1) != PCM_SUCCESS ||
          PCM_Load(rank, "probe", &back, PCM_INT, 1) != PCM_SUCCESS || back != now) {
        fprintf(stderr, "reshape: FAIL: a restarted process read %d, not what it stored (%d): %s\n",
                back, now, PCM_Last_error());
        return 1;
      }
    }
    if (s == PCM_MIGRATE) {
      PCM_Dist_local(dist, rank, NULL, NULL, &elements);
      int n = reconfigs + 1;
      if (PCM_Store_dist(rank, "dist", dist) != PCM_SUCCESS ||
          PCM_Store(rank, "buf", buf, PCM_DOUBLE, elements) != PCM_SUCCESS ||
          PCM_Store(rank, "it", &it, PCM_INT, 1) != PCM_SUCCESS ||
          PCM_Store(rank, "reconfigs", &n, PCM_INT, 1) != PCM_SUCCESS)
        DIE("store state");
    }
    if (s == PCM_MIGRATE || s == PCM_RECONFIGURE) {
      if (PCM_Reconfigure(&world, argv[0]) != PCM_SUCCESS) DIE("PCM_Reconfigure");
      what = "migrate";
    } else if (s == PCM_SPLIT) {
      int n = reconfigs + 1;
      if (rank == 0 && PCM_Store(0, "reconfigs", &n, PCM_INT, 1) != PCM_SUCCESS) DIE("store");
      /* Fault test: spawning a program that does not exist must be refused with every process
       * keeping its world and data. */
      const char *spawn =
          getenv("RESHAPE_SPAWN_COMMAND") ? getenv("RESHAPE_SPAWN_COMMAND") : argv[0];
      int rc = PCM_Split((void **)&buf, PCM_DOUBLE, &dist, &it, &rank, &size, &world, spawn);
      if (rc == PCM_ERR_SPAWN) {
        if (rank == 0) printf("reshape: split refused at iter %d: %s\n", it, PCM_Last_error());
        fflush(stdout);
        bad = check(buf, dist, rank);
        MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, world);
        if (allbad) return 1;
        continue;
      }
      if (rc != PCM_SUCCESS) DIE("PCM_Split");
      what = "split";
    } else if (s == PCM_MERGE) {
      long cnt;
      int mrank;
      if (PCM_Merge_datacnts(dist, &cnt, &mrank, world) != PCM_SUCCESS) DIE("PCM_Merge_datacnts");
      if (PCM_Merge((void **)&buf, PCM_DOUBLE, &dist, &it, &rank, &size, &world) != PCM_SUCCESS)
        DIE("PCM_Merge");
      if (world != MPI_COMM_NULL) {
        PCM_Dist_local(dist, rank, NULL, NULL, &elements);
        if (elements != cnt || rank != mrank) {
          fprintf(stderr, "reshape: FAIL: datacnts said %ld/%d, got %ld/%d\n", cnt, mrank, elements,
                  rank);
          return 1;
        }
      }
      what = "merge";
    }
    if (what && world == MPI_COMM_NULL) { /* retired */
      if (s == PCM_SPLIT && rank_before == 0) {
        PCM_Reconfig_times(&spawn, &data, &rebuild);
        printf(
            "reshape: split at iter %d procs %d -> new world: %.4f s (old rank 0: spawn %.4f data "
            "%.4f)\n",
            it, before, MPI_Wtime() - t0, spawn, data);
        fflush(stdout);
      }
      return PCM_Exit();
    }
    if (what) {
      reconfigs++;
      PCM_Comm_rank(world, &rank);
      MPI_Comm_size(world, &size);
      PCM_Reconfig_times(&spawn, &data, &rebuild);
      bad = check(buf, dist, rank);
      MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, world);
      if (rank == 0)
        printf(
            "reshape: %s at iter %d procs %d -> %d: %.4f s (rank 0: spawn %.4f data %.4f rebuild "
            "%.4f), %ld wrong\n",
            what, it, before, size, MPI_Wtime() - t0, spawn, data, rebuild, allbad);
      fflush(stdout);
      if (allbad) return 1;
    }
    if (sleep_us > 0) {
      struct timespec ts = {sleep_us / 1000000, (sleep_us % 1000000) * 1000};
      nanosleep(&ts, NULL);
    }
    MPI_Barrier(world);
    int stop =
        rank == 0 && getenv("RESHAPE_STOP_FILE") && access(getenv("RESHAPE_STOP_FILE"), F_OK) == 0;
    MPI_Bcast(&stop, 1, MPI_INT, 0, world);
    if (stop) break;
  }
  bad = check(buf, dist, rank);
  MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, world);
  if (rank == 0)
    printf("reshape: %s: %d reconfigurations, %d processes, %ld wrong\n", allbad ? "FAILED" : "ok",
           reconfigs, size, allbad);
  free(buf);
  PCM_Dist_free(&dist);
  PCM_Finalize(world);
  return allbad ? 1 : 0;
}
