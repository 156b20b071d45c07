/* heat2d_pcm.c — 2-D heat diffusion made malleable with PCM (the paper's Figure 6). */
#include <stdio.h>

#include "heat2d_common.h"
#include "pcm.h"

/* What a moving process leaves behind for the process that replaces it. */
typedef struct State {
  int iteration; /* the iteration about to be computed */
  int reconfigs; /* reconfigurations this rank position has been through */
} State;

/* Prints a failed PCM call with PCM's own message; returns non-zero if rc is a failure. */
static int failed(int rc, const char *what) {
  const char *msg;
  if (rc == PCM_SUCCESS) return 0;
  msg = PCM_Last_error();
  fprintf(stderr, "heat2d: %s: %s\n", what, msg[0] != '\0' ? msg : PCM_Error_string(rc));
  return 1;
}

/*
 * Store and load are local, but a failure in one process would leave the others waiting in the
 * next collective forever. Every process that could fail locally therefore votes here, so that
 * all of them go on or all of them stop together (and can call the collective PCM_Finalize).
 */
static int all_ok(int ok, MPI_Comm world) {
  if (MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, world) != MPI_SUCCESS) {
    /* PCM's world returns MPI errors; if the vote itself fails, no orderly way out is left. */
    fprintf(stderr, "heat2d: MPI_Allreduce failed\n");
    MPI_Abort(world, 1);
  }
  return ok;
}

static int store_state(int rank, const State *st, const Heat2dMesh *m) {
  return failed(PCM_Store(rank, "iteration", &st->iteration, PCM_INT, 1), "PCM_Store(iteration)") ||
         failed(PCM_Store(rank, "reconfigs", &st->reconfigs, PCM_INT, 1), "PCM_Store(reconfigs)") ||
         failed(PCM_Store(rank, "ncols", &m->ncols, PCM_INT, 1), "PCM_Store(ncols)") ||
         failed(PCM_Store(rank, "first_col", &m->first_col, PCM_INT, 1), "PCM_Store(first_col)") ||
         failed(PCM_Store(rank, "grid", m->cur, PCM_DOUBLE, heat2d_mesh_len(m)), "PCM_Store(grid)");
}

/* Rebuilds the mover's state in the process that replaces it. Returns 0 or -1 (reported). */
static int load_state(int rank, int nprocs, const Heat2dOptions *opt, State *st, Heat2dMesh *m) {
  int ncols, first_col;
  if (failed(PCM_Load(rank, "iteration", &st->iteration, PCM_INT, 1), "PCM_Load(iteration)") ||
      failed(PCM_Load(rank, "reconfigs", &st->reconfigs, PCM_INT, 1), "PCM_Load(reconfigs)") ||
      failed(PCM_Load(rank, "ncols", &ncols, PCM_INT, 1), "PCM_Load(ncols)") ||
      failed(PCM_Load(rank, "first_col", &first_col, PCM_INT, 1), "PCM_Load(first_col)")) {
    return -1;
  }
  /* The values size an allocation and index the grid: do not trust them blindly. */
  if (ncols < 0 || first_col < 0 || first_col > opt->nx - ncols || st->iteration < 0 ||
      st->iteration > opt->iters) {
    fprintf(stderr,
            "heat2d: rank %d: stored state does not fit the grid (iteration %d, first_col %d, "
            "ncols %d, nx %d); were the same options given?\n",
            rank, st->iteration, first_col, ncols, opt->nx);
    return -1;
  }
  if (heat2d_mesh_create(m, opt->nx, opt->ny, first_col, ncols, rank, nprocs) != 0) {
    fprintf(stderr, "heat2d: rank %d: out of memory for %d columns\n", rank, ncols);
    return -1;
  }
  /* Only cur is loaded: next already holds the fixed boundary, which is all the step relies on. */
  if (failed(PCM_Load(rank, "grid", m->cur, PCM_DOUBLE, heat2d_mesh_len(m)), "PCM_Load(grid)")) {
    heat2d_mesh_destroy(m);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  Heat2dOptions opt;
  Heat2dMesh mesh = {.cur = NULL, .next = NULL}; /* so that the failure path may free it */
  Heat2dProgress progress;
  State st = {0, 0};
  MPI_Comm world;
  int rank, nprocs, it, s, rc, ok, first_col, ncols, retired = 0, warned = 0;
  uint64_t sum;
  double t0, seconds, t_start = heat2d_wall_seconds(), t_reconf;

  if (failed(MPI_PCM_Init(&argc, &argv), "MPI_PCM_Init")) {
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  /* Parse before PCM_Init so that a mistyped command line never registers a job with pcmd. */
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (heat2d_parse_options(argc, argv, rank == 0, &opt) != 0) {
    PCM_Finalize(MPI_COMM_NULL);
    return 2;
  }
  world = MPI_COMM_WORLD;
  if (failed(PCM_Init(&world), "PCM_Init")) {
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &nprocs);

  s = PCM_Process_Status();
  if (s == PCM_STARTED) {
    heat2d_block(rank, nprocs, opt.nx, &first_col, &ncols);
    ok = heat2d_mesh_create(&mesh, opt.nx, opt.ny, first_col, ncols, rank, nprocs) == 0;
    if (!ok) fprintf(stderr, "heat2d: rank %d: out of memory for %d columns\n", rank, ncols);
  } else if (s == PCM_MIGRATED) {
    ok = !failed(PCM_Comm_rank(world, &rank), "PCM_Comm_rank") &&
         load_state(rank, nprocs, &opt, &st, &mesh) == 0;
  } else {
    fprintf(stderr, "heat2d: unsupported process status %d (only migration is supported)\n", s);
    ok = 0;
  }
  /* A migrated process votes together with the survivors' vote right after PCM_Reconfigure. */
  if (!all_ok(ok, world)) goto fail;
  if (s == PCM_MIGRATED && rank == 0) {
    /* The old rank 0 has retired, so the replacement reports; its view is its own start-up. */
    printf("heat2d: migration %d at iter %d %.3f s (new rank 0)\n", st.reconfigs, st.iteration,
           heat2d_wall_seconds() - t_start);
    fflush(stdout);
  }

  t0 = MPI_Wtime();
  heat2d_progress_start(&progress, st.iteration);
  for (it = st.iteration; it < opt.iters; it++) {
    s = PCM_Status(world);
    if (s == PCM_ERROR) {
      /* PCM_Status is collective and fails on every process alike. */
      fprintf(stderr, "heat2d: PCM_Status: %s\n", PCM_Last_error());
      goto fail;
    }
    if (s == PCM_SPLIT || s == PCM_MERGE) {
      /* This example only migrates; the job keeps its shape and goes on. */
      if (rank == 0 && !warned) fprintf(stderr, "heat2d: ignoring split/merge (not supported)\n");
      warned = 1;
    }
    if (s == PCM_MIGRATE || s == PCM_RECONFIGURE) {
      ok = 1;
      if (s == PCM_MIGRATE) {
        /* The replacement resumes at this iteration and has taken part in this reconfiguration. */
        State mine;
        mine.iteration = it;
        mine.reconfigs = st.reconfigs + 1;
        ok = store_state(rank, &mine, &mesh) == 0;
      }
      if (!all_ok(ok, world)) goto fail;
      t_reconf = heat2d_wall_seconds();
      rc = PCM_Reconfigure(&world, argv[0]);
      if (rc == PCM_ERR_SPAWN) {
        /* The old world is intact and every process got the same code: keep computing in it. */
        if (rank == 0) failed(rc, "PCM_Reconfigure (continuing without migrating)");
      } else if (failed(rc, "PCM_Reconfigure")) {
        goto fail;
      } else if (world == MPI_COMM_NULL) {
        retired = 1;
        break;
      } else {
        ok = !failed(PCM_Comm_rank(world, &rank), "PCM_Comm_rank");
        MPI_Comm_size(world, &nprocs);
        heat2d_mesh_set_rank(&mesh, rank, nprocs);
        st.reconfigs++;
        /* Includes waiting for the replacement to load its state, which is part of the cost. */
        if (!all_ok(ok, world)) goto fail;
        if (rank == 0) {
          printf("heat2d: migration %d at iter %d %.3f s\n", st.reconfigs, it,
                 heat2d_wall_seconds() - t_reconf);
          fflush(stdout);
        }
      }
    }
    if (heat2d_exchange(&mesh, world) != MPI_SUCCESS) {
      /* The neighbours may be anywhere in the exchange: no collective way out is left. */
      fprintf(stderr, "heat2d: rank %d: halo exchange failed\n", rank);
      MPI_Abort(world, 1);
    }
    heat2d_step(&mesh);
    heat2d_throttle(opt.throttle_us);
    heat2d_progress(&progress, rank, it + 1, opt.iters, nprocs, opt.report);
  }
  seconds = MPI_Wtime() - t0;

  if (retired) {
    /* The replacement carries on with the data; this process must not touch the world again. The
     * line shows (and the tests check) that a parked process uses next to no CPU. */
    double wall0, cpu0;
    heat2d_mesh_destroy(&mesh);
    wall0 = heat2d_wall_seconds();
    cpu0 = heat2d_cpu_seconds();
    if (failed(PCM_Exit(), "PCM_Exit")) return 1;
    printf("heat2d: retired parked %.3f s cpu %.3f s\n", heat2d_wall_seconds() - wall0,
           heat2d_cpu_seconds() - cpu0);
    fflush(stdout);
    return 0;
  }

  rc = heat2d_checksum(&mesh, world, &sum);
  if (rc == -2) {
    fprintf(stderr, "heat2d: rank %d: gathering the grid failed\n", rank);
    MPI_Abort(world, 1);
  }
  if (rc != 0) {
    if (rank == 0) fprintf(stderr, "heat2d: out of memory gathering the grid\n");
    goto fail;
  }
  if (rank == 0) {
    heat2d_print_result(opt.iters, nprocs, seconds, opt.iters - st.iteration, sum);
    printf("reconfigurations %d\n", st.reconfigs);
    fflush(stdout);
  }
  heat2d_mesh_destroy(&mesh);
  if (failed(PCM_Finalize(world), "PCM_Finalize")) return 1;
  return 0;

fail:
  /* Every path here is taken by all processes of the world together, so finalizing is safe. */
  heat2d_mesh_destroy(&mesh);
  PCM_Finalize(world);
  return 1;
}
