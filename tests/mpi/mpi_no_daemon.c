/* mpi_no_daemon.c — MPI test: MPI_PCM_Init fails cleanly, in bounded time, on every rank, when
 * pcmd is absent (argv[1] = "daemon", PCM_CONFIG names a dead endpoint) or the configuration
 * file is missing (argv[1] = "config"). */
#include <stdio.h>
#include <string.h>

#include "pcm.h"

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "daemon";
  int expected = strcmp(mode, "config") == 0 ? PCM_ERR_CONFIG : PCM_ERR_DAEMON;
  double t0, elapsed;
  int rc, rank, ok, all;

  MPI_Init(&argc, &argv); /* to time MPI_PCM_Init alone; PCM accepts an initialised MPI */
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  t0 = MPI_Wtime();
  rc = MPI_PCM_Init(&argc, &argv);
  elapsed = MPI_Wtime() - t0;
  ok = rc == expected && elapsed < 10.0 && strlen(PCM_Last_error()) > 0;
  fprintf(stderr, "rank %d: MPI_PCM_Init returned %d (%s) after %.2f s: %s\n", rank, rc,
          PCM_Error_string(rc), elapsed, PCM_Last_error());
  {
    MPI_Comm world = MPI_COMM_WORLD;
    ok = ok && PCM_Init(&world) == PCM_ERR_STATE; /* nothing works after a failed init */
  }
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) printf("%s\n", all ? "ok" : "FAILED");
  PCM_Finalize(MPI_COMM_NULL);
  return all ? 0 : 1;
}
