/* retire_probe.c — can retired processes disconnect, finalize and exit while the job goes on?
 *
 *   mpiexec -n 2 retire_probe a   one process of the launched group retires
 *   mpiexec -n 1 retire_probe b   a whole spawned group (2) retires
 *   mpiexec -n 1 retire_probe c   part (1 of 2) of a spawned group retires
 *   mpiexec -n 2 retire_probe d   the whole launched group retires, its spawned group (2) goes on
 *
 * Every communicator a retiree shares with the job is disconnected (collectively, by both
 * sides) before it calls MPI_Finalize. Each retiree prints its finalize time and the CPU time
 * finalize used; a process that stays in the job checks, a while later, whether the retirees'
 * PIDs are gone, and goes on for PROBE_STAY seconds (default 2) before it finalizes.
 * Output lines start with "probe:" (one process each); mpiexec's exit code is the caller's. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wall clock (seconds within the hour): lines of different processes compare. */
static double stamp(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)(ts.tv_sec % 3600) + 1e-9 * (double)ts.tv_nsec;
}

static double cpu(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static double stay_seconds(void) {
  const char* s = getenv("PROBE_STAY");
  return s ? atof(s) : 2.0;
}

/* A retiree: finalize, report, exit. */
static int leave(const char* who) {
  double t0 = now(), c0 = cpu(), s0 = stamp();
  MPI_Finalize();
  fprintf(stderr, "probe: [%.3f] %s pid %ld finalize from %.3f: %.3f s, cpu %.3f s\n", stamp(), who,
          (long)getpid(), s0, now() - t0, cpu() - c0);
  return 0;
}

/* 1 if pid has exited (gone or a zombie), 0 if it still runs. */
static int gone(long pid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE* f = fopen(path, "r");
  if (!f) return 1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');
  return p && p[1] == ' ' && p[2] == 'Z';
}

/* Goes on for s seconds as an application would: sleeping, and calling MPI every 10 ms (MPICH's
 * ch3 completes a disconnect only while the other side makes progress). */
static void progress(double s) {
  const struct timespec tick = {0, 10 * 1000 * 1000};
  int flag;
  for (double end = now() + s; now() < end;) {
    nanosleep(&tick, NULL);
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  }
}

/* A process that stays: wait a quarter of the stay, check the retirees, go on, finalize. */
static int stay(const char* who, const long* pids, int n) {
  const double stay_s = stay_seconds();
  progress(stay_s / 4);
  for (int i = 0; i < n; ++i)
    fprintf(stderr, "probe: [%.3f] %s sees retiree pid %ld %s after %.2f s\n", stamp(), who,
            pids[i], gone(pids[i]) ? "GONE" : "STILL RUNNING", stay_s / 4);
  progress(3 * stay_s / 4);
  double t0 = now(), s0 = stamp();
  MPI_Finalize();
  fprintf(stderr, "probe: [%.3f] %s finalize from %.3f: %.3f s\n", stamp(), who, s0, now() - t0);
  return 0;
}

/* PROBE_MERGED=free frees the merged communicator instead of disconnecting it (Open MPI 4.1 hangs
 * in the disconnect of a communicator made by MPI_Intercomm_merge). */
static void drop_merged(MPI_Comm* merged) {
  const char* how = getenv("PROBE_MERGED");
  if (how && strcmp(how, "free") == 0)
    MPI_Comm_free(merged);
  else
    MPI_Comm_disconnect(merged);
}

static MPI_Comm spawn(const char* exe, const char* mode, int n) {
  char* argv[] = {(char*)mode, (char*)"child", NULL};
  MPI_Comm inter;
  MPI_Comm_spawn(exe, argv, n, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
  return inter;
}

/* The launched group spawns 2 more (the children join it): both sides get the intercommunicator
 * and its merge, the parents first. */
static void spawn_and_merge(const char* exe, const char* mode, int child, MPI_Comm* inter,
                            MPI_Comm* merged) {
  if (!child) {
    *inter = spawn(exe, mode, 2);
  } else {
    MPI_Comm_get_parent(inter);
  }
  MPI_Intercomm_merge(*inter, child, merged);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc < 2 || !strchr("abcd", argv[1][0])) {
    fprintf(stderr, "usage: retire_probe a|b|c|d\n");
    MPI_Finalize();
    return 2;
  }
  const char mode = argv[1][0];
  const int child = argc > 2;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long me = (long)getpid();
  long pids[4] = {0, 0, 0, 0};

  if (mode == 'a') { /* rank 1 retires from the launched world */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Gather(&me, 1, MPI_LONG, pids, 1, MPI_LONG, 0, dup);
    MPI_Comm_disconnect(&dup); /* MPI_COMM_WORLD itself cannot be disconnected */
    if (rank == 1) return leave("a: retiree (1 of launched 2)");
    if (rank == 0) return stay("a: rank 0", pids + 1, size - 1);
    return stay("a: other", NULL, 0);
  }

  if (mode == 'b' || mode == 'c') {
    MPI_Comm inter, merged;
    spawn_and_merge(argv[0], argv[1], child, &inter, &merged);
    int mrank;
    MPI_Comm_rank(merged, &mrank);
    MPI_Gather(&me, 1, MPI_LONG, pids, 1, MPI_LONG, 0, merged);
    /* c: the new world is the parent and child 0; child 1 retires */
    const int retiring = child && (mode == 'b' || rank == 1);
    MPI_Comm world;
    MPI_Comm_split(merged, retiring ? MPI_UNDEFINED : 0, mrank, &world);
    double d0 = stamp();
    drop_merged(&merged);
    double d1 = stamp();
    MPI_Comm_disconnect(&inter);
    if (getenv("PROBE_VERBOSE"))
      fprintf(stderr, "probe: [%.3f] %c: %s disconnects from %.3f, merged took %.3f s\n", stamp(),
              mode, child ? "child" : "parent", d0, d1 - d0);
    if (retiring)
      return leave(mode == 'b' ? "b: retiree (whole spawned 2)" : "c: retiree (1 of spawned 2)");
    int wrank;
    MPI_Comm_rank(world, &wrank);
    MPI_Barrier(world);
    if (wrank == 0) {
      return stay(mode == 'b' ? "b: parent" : "c: parent", mode == 'b' ? pids + 1 : pids + 2,
                  mode == 'b' ? 2 : 1);
    }
    MPI_Comm_free(&world);
    return stay("c: child 0", NULL, 0);
  }

  /* d: the launched group spawns 2, then retires entirely */
  MPI_Comm inter, merged;
  spawn_and_merge(argv[0], argv[1], child, &inter, &merged);
  int mrank;
  MPI_Comm_rank(merged, &mrank);
  MPI_Comm world;
  MPI_Comm_split(merged, child ? 0 : MPI_UNDEFINED, mrank, &world);
  /* the new world's rank 0 (merged rank `size` of the parents) learns the parents' PIDs */
  long all[8] = {0};
  MPI_Allgather(&me, 1, MPI_LONG, all, 1, MPI_LONG, merged);
  drop_merged(&merged);
  MPI_Comm_disconnect(&inter);
  if (!child) return leave("d: retiree (whole launched group)");
  int wrank;
  MPI_Comm_rank(world, &wrank);
  MPI_Barrier(world);
  MPI_Comm_free(&world);
  if (wrank == 0) return stay("d: spawned rank 0", all, mrank - wrank);
  return stay("d: spawned other", NULL, 0);
}
