/* tests/mpi/mpi_topology.c — PCM_Topology and PCM_Host_comm against what each process knows of
 * itself: its host (MPI_Get_processor_name) and its PCM_SITE. Plain MPI (no pcmd: sites come
 * from PCM_SITE). Every process gathers every process's (site, host), computes the colours the
 * header promises (lowest rank of the group) and checks its own; the host communicator must hold
 * exactly the processes of its host, in rank order. Misuse must give PCM_ERR_ARG. Prints
 * "mpi_topology: ok" on rank 0 and exits 0, or names the failure and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcm.h"

enum { NAME = 320 };

static int failures = 0;
#define CHECK(cond, ...)                                \
  do {                                                  \
    if (!(cond)) {                                      \
      fprintf(stderr, "mpi_topology: rank %d: ", rank); \
      fprintf(stderr, __VA_ARGS__);                     \
      fprintf(stderr, "\n");                            \
      failures++;                                       \
    }                                                   \
  } while (0)

int main(int argc, char **argv) {
  int rank, size, nlevels = -1, colors[PCM_TOPO_LEVELS] = {-1, -1}, len, r, hsize, hrank, any;
  char me[NAME] = {0}, *all;
  const char *site = getenv("PCM_SITE");
  MPI_Comm host = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  snprintf(me, 64, "%s", site ? site : "");
  MPI_Get_processor_name(me + 64, &len);
  all = malloc((size_t)size * NAME);
  MPI_Allgather(me, NAME, MPI_CHAR, all, NAME, MPI_CHAR, MPI_COMM_WORLD);

  CHECK(PCM_Topology(MPI_COMM_WORLD, &nlevels, colors) == PCM_SUCCESS, "PCM_Topology: %s",
        PCM_Last_error());
  CHECK(nlevels == PCM_TOPO_LEVELS, "nlevels %d", nlevels);
  /* Expected: the lowest rank with the same site; with the same site and host. */
  for (r = 0; r < size; r++)
    if (strcmp(all + r * NAME, me) == 0) break;
  CHECK(colors[PCM_TOPO_SITE] == r, "site colour %d, expected %d", colors[PCM_TOPO_SITE], r);
  for (r = 0; r < size; r++)
    if (strcmp(all + r * NAME, me) == 0 && strcmp(all + r * NAME + 64, me + 64) == 0) break;
  CHECK(colors[PCM_TOPO_HOST] == r, "host colour %d, expected %d", colors[PCM_TOPO_HOST], r);

  CHECK(PCM_Host_comm(MPI_COMM_WORLD, &host) == PCM_SUCCESS, "PCM_Host_comm: %s", PCM_Last_error());
  if (host != MPI_COMM_NULL) {
    int expect_size = 0, expect_rank = 0;
    for (r = 0; r < size; r++) {
      if (strcmp(all + r * NAME, me) == 0 && strcmp(all + r * NAME + 64, me + 64) == 0) {
        if (r < rank) expect_rank++;
        expect_size++;
      }
    }
    MPI_Comm_size(host, &hsize);
    MPI_Comm_rank(host, &hrank);
    CHECK(hsize == expect_size && hrank == expect_rank,
          "host comm: rank %d of %d, expected %d of %d", hrank, hsize, expect_rank, expect_size);
    MPI_Comm_free(&host);
  }
  /* A communicator derived from the world: the odd ranks only, in reverse order. */
  {
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &sub);
    CHECK(PCM_Topology(sub, &nlevels, colors) == PCM_SUCCESS, "PCM_Topology(sub): %s",
          PCM_Last_error());
    MPI_Comm_free(&sub);
  }
  /* Misuse: local refusals, the same on every process. */
  CHECK(PCM_Topology(MPI_COMM_WORLD, NULL, colors) == PCM_ERR_ARG, "NULL nlevels accepted");
  CHECK(PCM_Topology(MPI_COMM_WORLD, &nlevels, NULL) == PCM_ERR_ARG, "NULL colors accepted");
  CHECK(PCM_Topology(MPI_COMM_NULL, &nlevels, colors) == PCM_ERR_ARG, "MPI_COMM_NULL accepted");
  CHECK(PCM_Host_comm(MPI_COMM_WORLD, NULL) == PCM_ERR_ARG, "NULL host_comm accepted");
  CHECK(PCM_Host_comm(MPI_COMM_NULL, &host) == PCM_ERR_ARG, "MPI_COMM_NULL accepted");
  if (size > 1) {
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank == 0 ? 1 : 0, 7, &inter);
    CHECK(PCM_Topology(inter, &nlevels, colors) == PCM_ERR_ARG, "an intercommunicator accepted");
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && any == 0) printf("mpi_topology: ok on %d processes\n", size);
  free(all);
  MPI_Finalize();
  return any == 0 ? 0 : 1;
}
