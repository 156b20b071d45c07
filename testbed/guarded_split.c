/* guarded_split.c [ROUNDS] [CHILDREN] [zero] — the MPI calls of libpcm's guarded split
 * (split_guard.h), with no PCM, on the intercommunicator of a spawn: does the MPI complete them?
 * Issue 38 item 6: on Open MPI 4.1 PCM's guarded split never ended (every process in MPI_Test of
 * the reduction on the intercommunicator, cma.cpp's cma_all_read). With "zero", the parents that
 * are not the root pass a count of 0 to the second broadcast, as libpcm's bcast_inter did (they
 * never knew the size): Open MPI's MPI_Ibcast returns at once for a count of 0 without taking the
 * communicator's next collective tag, and the reduction after it never matches (stuck, exit 3);
 * without it every round ends. MPICH ends both.
 *
 * Each of ROUNDS rounds (default 5): the parents (run it on 2) spawn CHILDREN (default 3) more
 * processes. The parents have a receive posted on a duplicate of their world (the guard's "given
 * up" message, never sent); the children have one posted on the intercommunicator from parent
 * rank 0 (the verdict). Then, as libpcm does: a nonblocking broadcast on the intercommunicator
 * from parent rank 0 (MPI_ROOT; the other parents MPI_PROC_NULL), twice (a count of 1, then of
 * 4: the size and the data, as libpcm sends a split's header), a nonblocking reduction over
 * the children's world, a nonblocking reduction on the intercommunicator, every wait a loop of
 * MPI_Test that also tests the posted receive; parent rank 0 sends the verdict; all disconnect.
 * Prints a line per process and round; a call not done within 60 s is said ("stuck in ...") and
 * ends the process with exit status 3. Exit 0 when every round ended. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* volatile phase = "MPI_Init";
static int me = -1, child = 0;

static void on_alarm(int sig) {
  (void)sig;
  char line[160];
  int n = snprintf(line, sizeof line, "%s %d: stuck in %s for 60 s\n", child ? "child" : "parent",
                   me, phase);
  if (write(2, line, (size_t)n) < 0) _exit(4);
  _exit(3);
}

/* Waits for *req (the call named what) with MPI_Test, testing *posted now and then (the guard's
 * look at the rest). */
static void spin(const char* what, MPI_Request* req, MPI_Request* posted) {
  int done = 0, flag = 0;
  phase = what;
  alarm(60);
  for (unsigned n = 1; !done; ++n) {
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (*posted != MPI_REQUEST_NULL && n % 256 == 0) MPI_Test(posted, &flag, MPI_STATUS_IGNORE);
  }
  alarm(0);
}

int main(int argc, char** argv) {
  signal(SIGALRM, on_alarm);
  alarm(60);
  MPI_Init(&argc, &argv);
  alarm(0);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int rounds = argc > 1 ? atoi(argv[1]) : 5, children = argc > 2 ? atoi(argv[2]) : 3;
  const int zero = argc > 3 && strcmp(argv[3], "zero") == 0;
  MPI_Comm parent;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) {
    child = 1;
    int verdict = -1, b = 0, ok = 1, all = 0;
    MPI_Request posted, req;
    MPI_Irecv(&verdict, 1, MPI_INT, 0, 7, parent, &posted);
    char data[4];
    MPI_Ibcast(&b, 1, MPI_INT, 0, parent, &req);
    spin("MPI_Ibcast on the intercommunicator", &req, &posted);
    MPI_Ibcast(data, 4, MPI_CHAR, 0, parent, &req);
    spin("the second MPI_Ibcast on the intercommunicator", &req, &posted);
    MPI_Iallreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
    spin("MPI_Iallreduce over the new world", &req, &posted);
    MPI_Iallreduce(&ok, &all, 1, MPI_INT, MPI_MIN, parent, &req);
    spin("MPI_Iallreduce on the intercommunicator", &req, &posted);
    phase = "the verdict";
    alarm(60);
    MPI_Wait(&posted, MPI_STATUS_IGNORE);
    printf("child %d: done (broadcast %d, reduction %d, verdict %d)\n", me, b, all, verdict);
    fflush(stdout);
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
  }
  MPI_Comm ctl;
  MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
  char heard[256];
  MPI_Request posted;
  MPI_Irecv(heard, sizeof heard, MPI_CHAR, MPI_ANY_SOURCE, 1, ctl, &posted);
  for (int round = 0; round < rounds; ++round) {
    MPI_Comm inter;
    MPI_Request req;
    int b = 5, ok = 1, all = 0;
    phase = "MPI_Comm_spawn";
    alarm(60);
    MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, children, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                   MPI_ERRCODES_IGNORE);
    char data[4] = "pcm";
    MPI_Ibcast(&b, 1, MPI_INT, me == 0 ? MPI_ROOT : MPI_PROC_NULL, inter, &req);
    spin("MPI_Ibcast on the intercommunicator", &req, &posted);
    MPI_Ibcast(data, me != 0 && zero ? 0 : 4, MPI_CHAR, me == 0 ? MPI_ROOT : MPI_PROC_NULL, inter,
               &req);
    spin("the second MPI_Ibcast on the intercommunicator", &req, &posted);
    MPI_Iallreduce(&ok, &all, 1, MPI_INT, MPI_MIN, inter, &req);
    spin("MPI_Iallreduce on the intercommunicator", &req, &posted);
    phase = "the verdict";
    alarm(60);
    if (me == 0)
      for (int k = 0; k < children; ++k) MPI_Send(&ok, 1, MPI_INT, k, 7, inter);
    printf("parent %d: round %d of %d done (reduction %d)\n", me, round + 1, rounds, all);
    fflush(stdout);
    phase = "MPI_Comm_disconnect";
    MPI_Comm_disconnect(&inter);
    alarm(0);
  }
  MPI_Cancel(&posted);
  MPI_Wait(&posted, MPI_STATUS_IGNORE);
  MPI_Comm_free(&ctl);
  MPI_Finalize();
  return 0;
}
