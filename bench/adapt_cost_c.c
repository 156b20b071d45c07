/* adapt_cost_c.c — the C half of adapt_cost_f: PCM_Adapt called straight from C, in a loop. */
#include <mpi.h>

#include "pcm.h"

/* Seconds for `calls` calls of PCM_Adapt on the world *comm (a Fortran handle); -1 if one of
 * them did not return PCM_NONE. */
double adapt_cost_c_loop(MPI_Fint *comm, long calls) {
  MPI_Comm world = MPI_Comm_f2c(*comm);
  double t0 = MPI_Wtime();
  long i;
  for (i = 0; i < calls; i++) {
    if (PCM_Adapt(&world) != PCM_NONE) return -1.0;
  }
  return MPI_Wtime() - t0;
}
