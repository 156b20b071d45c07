/* collective_mismatch.c [K] — what MPI_PCM_Init's agreement receives when one rank is in it while
 * the others are already in PCM_Init's MPI_Comm_dup (issue 38 item 5), with no PCM. Rank K
 * (default 1) makes the agreement's reduction (MPI_Allreduce of one MPI_2INT pair, MPI_MINLOC);
 * the other ranks call MPI_Comm_dup. Each rank prints what its call returned; the calls do not
 * match, so rank K then waits in MPI_Finalize, and every process ends by itself within 10 s
 * (alarm, _exit). Run on 3 processes:
 *   mpiexec -n 3 ./collective_mismatch 1
 * With MPICH 4.0.2 (ch3) rank 1's reduction returned MPI_SUCCESS and the pair {-8, -1}: the first
 * two words of the other ranks' context-id mask, which MPI_Comm_dup reduces; rank 0's MPI_Comm_dup
 * failed ("Failure during collective"). The field's failure had the same two sides. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void on_alarm(int sig) {
  (void)sig;
  _exit(0);
}

int main(int argc, char** argv) {
  signal(SIGALRM, on_alarm);
  alarm(10);
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int odd = argc > 1 ? atoi(argv[1]) : 1;
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0, rc;
  if (me == odd) {
    int mine[2] = {0, me}, low[2] = {0, me};
    rc = MPI_Allreduce(mine, low, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, msg, &len);
    printf("rank %d: the agreement's reduction returned %s with {%d, %d} (0x%08x, 0x%08x) %s\n", me,
           rc == MPI_SUCCESS ? "MPI_SUCCESS" : "an error", low[0], low[1], (unsigned)low[0],
           (unsigned)low[1], msg);
  } else {
    MPI_Comm dup;
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, msg, &len);
    printf("rank %d: MPI_Comm_dup returned %s %s\n", me,
           rc == MPI_SUCCESS ? "MPI_SUCCESS" : "an error:", msg);
  }
  fflush(stdout);
  if (me == odd) MPI_Finalize();
  _exit(0);
}
