/* pcm_shim.c — the C side of the Fortran module pcm: communicator handles and argv. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "pcm.h"

/* Fortran passes communicators as MPI_Fint handles (the MPI_VAL of mpi_f08's type(MPI_Comm), or
 * the integer handle of `use mpi`); each call converts them with MPI_Comm_f2c / MPI_Comm_c2f,
 * which costs a table look-up, so that no C handle has to be kept on the Fortran side. */

/* MPI_PCM_Init with the Fortran command line: nargs NUL-terminated strings (argument 0, the
 * program, first). libpcm keeps argv for the processes it spawns, so the copy is never freed. */
int pcm_f_mpi_pcm_init(int nargs, const char *const *args) {
  char **argv = calloc((size_t)nargs + 1, sizeof *argv);
  int argc = nargs, i;
  if (argv == NULL) return PCM_ERR_INTERNAL;
  for (i = 0; i < nargs; i++) {
    size_t n = strlen(args[i]) + 1;
    argv[i] = malloc(n);
    if (argv[i] == NULL) return PCM_ERR_INTERNAL;
    memcpy(argv[i], args[i], n);
  }
  return MPI_PCM_Init(&argc, &argv);
}

int pcm_f_init(MPI_Fint *comm) {
  MPI_Comm c = MPI_Comm_f2c(*comm);
  int rc = PCM_Init(&c);
  *comm = MPI_Comm_c2f(c);
  return rc;
}

int pcm_f_comm_rank(MPI_Fint comm, int *rank) { return PCM_Comm_rank(MPI_Comm_f2c(comm), rank); }

int pcm_f_status(MPI_Fint comm) { return PCM_Status(MPI_Comm_f2c(comm)); }

/* PCM_Resume and PCM_Adapt also give this process's rank in the world they leave it in (-1 when
 * it has retired): the module needs it to size the registered arrays it re-points. */
static void world_rank(MPI_Comm c, int *rank) {
  *rank = -1;
  if (c != MPI_COMM_NULL && PCM_Comm_rank(c, rank) != PCM_SUCCESS) *rank = -1;
}

int pcm_f_resume(MPI_Fint *comm, int *rank) {
  MPI_Comm c = MPI_Comm_f2c(*comm);
  int rc = PCM_Resume(&c);
  *comm = MPI_Comm_c2f(c);
  world_rank(c, rank);
  return rc;
}

int pcm_f_adapt(MPI_Fint *comm, int *rank) {
  MPI_Comm c = MPI_Comm_f2c(*comm);
  int rc = PCM_Adapt(&c);
  if (rc == PCM_NONE) return rc; /* the world is unchanged: no more cost in a steady loop */
  *comm = MPI_Comm_c2f(c);
  world_rank(c, rank);
  return rc;
}

/* PCM_Adapt_if_local: PCM_NONE after a local call, or PCM_NOT_LOCAL with nothing done: the
 * module then checks its registered arrays before the call that may read or replace them
 * (pcm_f_adapt). */
int pcm_f_adapt_local(MPI_Fint comm) {
  MPI_Comm c = MPI_Comm_f2c(comm);
  return PCM_Adapt_if_local(&c);
}

int pcm_f_checkpoint(MPI_Fint comm, int iteration) {
  return PCM_Checkpoint(MPI_Comm_f2c(comm), iteration);
}

int pcm_f_checkpoint_wait(MPI_Fint comm) { return PCM_Checkpoint_wait(MPI_Comm_f2c(comm)); }

int pcm_f_finalize(MPI_Fint comm) { return PCM_Finalize(MPI_Comm_f2c(comm)); }

int pcm_f_halo_exchange(PCM_Halo halo, void *buf, MPI_Fint comm) {
  return PCM_Halo_exchange(halo, buf, MPI_Comm_f2c(comm));
}

int pcm_f_dist_gather(PCM_Dist dist, const void *buf, int type, int root, MPI_Fint comm,
                      void *global) {
  return PCM_Dist_gather(dist, buf, (PCM_Datatype)type, root, MPI_Comm_f2c(comm), global);
}

int pcm_f_topology(MPI_Fint comm, int *nlevels, int colors[PCM_TOPO_LEVELS]) {
  return PCM_Topology(MPI_Comm_f2c(comm), nlevels, colors);
}

int pcm_f_host_comm(MPI_Fint comm, MPI_Fint *host) {
  MPI_Comm h = MPI_COMM_NULL;
  int rc = PCM_Host_comm(MPI_Comm_f2c(comm), &h);
  *host = MPI_Comm_c2f(h);
  return rc;
}

/* An agreed flag over the world: 1 on every rank if any rank passes 1 (the module's checks of
 * registered arrays before collective calls). MPI_ERR_* are returned as PCM_ERR_MPI. */
int pcm_f_any(MPI_Fint comm, int *flag) {
  return MPI_Allreduce(MPI_IN_PLACE, flag, 1, MPI_INT, MPI_MAX, MPI_Comm_f2c(comm)) == MPI_SUCCESS
             ? PCM_SUCCESS
             : PCM_ERR_MPI;
}

void pcm_f_abort(MPI_Fint comm, int code) { MPI_Abort(MPI_Comm_f2c(comm), code); }

/* The length of a NUL-terminated C string (PCM_Last_error's message). */
size_t pcm_f_strlen(const char *s) { return s != NULL ? strlen(s) : 0; }

/* The paper's calls whose arguments include a communicator (pcm.F90's pcm_commit, ...). */
int pcm_f_commit(MPI_Fint comm, int iteration) { return PCM_Commit(MPI_Comm_f2c(comm), iteration); }

int pcm_f_reconfigure(MPI_Fint *comm, const char *command) {
  MPI_Comm c = MPI_Comm_f2c(*comm);
  int rc = PCM_Reconfigure(&c, command);
  *comm = MPI_Comm_c2f(c);
  return rc;
}

/* PCM_Split (merge = 0) or PCM_Merge (merge = 1) of one buffer and map. */
int pcm_f_reshape(int merge, void **buf, int type, PCM_Dist *dist, int *iteration, int *rank,
                  int *size, MPI_Fint *comm, const char *command) {
  MPI_Comm c = MPI_Comm_f2c(*comm);
  int rc = merge ? PCM_Merge(buf, (PCM_Datatype)type, dist, iteration, rank, size, &c)
                 : PCM_Split(buf, (PCM_Datatype)type, dist, iteration, rank, size, &c, command);
  *comm = MPI_Comm_c2f(c);
  return rc;
}

int pcm_f_merge_datacnts(PCM_Dist dist, long *count, int *merge_rank, MPI_Fint comm) {
  return PCM_Merge_datacnts(dist, count, merge_rank, MPI_Comm_f2c(comm));
}
