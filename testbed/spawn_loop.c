/* spawn_loop.c N [BOUND_S] — N spawns one after the other, as PCM's splits make them, with no PCM:
 * the processes of MPI_COMM_WORLD spawn one more process, merge with it, agree on the merged
 * size, free the merged communicator and disconnect the spawn's intercommunicator; the child
 * finalizes and exits. Run on 2 processes. A spawn whose steps have not all returned within
 * BOUND_S seconds (default 60) is said on stderr with the call it is stuck in ("spawn K of N not
 * done within B s (stuck in MPI_Comm_spawn)") and ends the run with exit status 3 (a child not
 * done within 120 s: 4). Exit 0
 * when all N spawns were made. bench/openmpi_spawn.sh runs it many times on one MPI or several:
 * Open MPI 4.1's intermittent spawn hang (openpmix#2735) shows without PCM. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char hung_line[160];
static const char* volatile phase = "MPI_Init";

static void say(const char* s) {
  ssize_t n = write(2, s, strlen(s));
  (void)n;
}

static void on_alarm(int sig) {
  (void)sig;
  say(hung_line);
  say(" (stuck in ");
  say(phase);
  say(")\n");
  _exit(hung_line[0] == 'c' ? 4 : 3);
}

static void arm(unsigned seconds, const char* line) {
  snprintf(hung_line, sizeof hung_line, "%s", line);
  alarm(seconds);
}

/* Both sides of one spawn, once it is made: merge (the children high), agree on the merged size,
 * free the merged communicator, disconnect the spawn's intercommunicator. The merged size. */
static int merge_and_part(MPI_Comm* inter, int high) {
  MPI_Comm merged;
  phase = "MPI_Intercomm_merge";
  MPI_Intercomm_merge(*inter, high, &merged);
  int size = 0;
  MPI_Comm_size(merged, &size);
  phase = "MPI_Allreduce";
  MPI_Allreduce(MPI_IN_PLACE, &size, 1, MPI_INT, MPI_MAX, merged);
  phase = "MPI_Comm_free";
  MPI_Comm_free(&merged);
  phase = "MPI_Comm_disconnect";
  MPI_Comm_disconnect(inter);
  return size;
}

int main(int argc, char** argv) {
  const int child = argc > 1 && strcmp(argv[1], "child") == 0;
  const int n = argc > 1 && !child ? atoi(argv[1]) : 0;
  const unsigned bound = argc > 2 && !child ? (unsigned)atoi(argv[2]) : 60;
  signal(SIGALRM, on_alarm);
  if (child) arm(120, "child: not done within 120 s");
  MPI_Init(&argc, &argv);
  alarm(0);
  MPI_Comm parent, inter;
  MPI_Comm_get_parent(&parent);
  if (child) {
    arm(120, "child: not done within 120 s");
    merge_and_part(&parent, 1);
    phase = "MPI_Finalize";
    MPI_Finalize();
    return 0;
  }
  int rank = 0, world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  char* child_argv[] = {"child", NULL};
  for (int k = 1; k <= n; ++k) {
    char line[160];
    snprintf(line, sizeof line, "spawn_loop: rank %d: spawn %d of %d not done within %u s", rank, k,
             n, bound);
    arm(bound, line);
    phase = "MPI_Comm_spawn";
    if (MPI_Comm_spawn(argv[0], child_argv, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                       MPI_ERRCODES_IGNORE) != MPI_SUCCESS) {
      fprintf(stderr, "spawn_loop: spawn %d failed\n", k);
      return 5;
    }
    const int size = merge_and_part(&inter, 0);
    alarm(0);
    if (size != world + 1) {
      fprintf(stderr, "spawn_loop: spawn %d: merged size %d, not %d\n", k, size, world + 1);
      return 6;
    }
  }
  if (rank == 0) printf("spawn_loop: %d spawns made\n", n);
  MPI_Finalize();
  return 0;
}
