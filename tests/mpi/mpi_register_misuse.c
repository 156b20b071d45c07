/* mpi_register_misuse.c — MPI test: the register-once calls refuse misuse with the documented
 * codes, the same on every rank where the call is collective, and never crash or hang.
 * Prints "misuse: ok" from rank 0. */
#include <stdio.h>
#include <string.h>

#include "pcm.h"

static int failures = 0;

static void expect(int got, int want, const char *what) {
  if (got != want) {
    fprintf(stderr, "misuse: %s: got %d (%s), expected %d\n", what, got, PCM_Last_error(), want);
    failures++;
  }
}

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank, size, it = 0, other = 0, all;
  double *buf = NULL;
  PCM_Dist dist = NULL;
  char longname[60];
  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "misuse: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  expect(PCM_Register_value(NULL, &it, PCM_INT, 1), PCM_ERR_ARG, "NULL name");
  expect(PCM_Register_value("bad/name", &it, PCM_INT, 1), PCM_ERR_ARG, "name with a slash");
  expect(PCM_Register_value(".hidden", &it, PCM_INT, 1), PCM_ERR_ARG, "name starting with .");
  expect(PCM_Register_value(longname, &it, PCM_INT, 1), PCM_ERR_ARG, "59-character name");
  expect(PCM_Register_value("it", NULL, PCM_INT, 1), PCM_ERR_ARG, "NULL value");
  expect(PCM_Register_value("it", &it, (PCM_Datatype)99, 1), PCM_ERR_ARG, "unknown type");
  expect(PCM_Register_value("it", &it, PCM_INT, -1), PCM_ERR_ARG, "negative count");
  expect(PCM_Register_dist("grid", NULL, PCM_DOUBLE, &dist), PCM_ERR_ARG, "NULL buf");
  expect(PCM_Register_dist("grid", (void **)&buf, PCM_DOUBLE, NULL), PCM_ERR_ARG, "NULL dist");
  expect(PCM_Register_value("it", &it, PCM_INT, 1), PCM_SUCCESS, "a good registration");
  expect(PCM_Register_local("it", &other, PCM_INT, 1), PCM_ERR_ARG, "the same name twice");
  expect(PCM_Unregister("nothing"), PCM_ERR_ARG, "unregistering an unknown name");
  expect(PCM_Checkpoint(world, 1), PCM_ERR_STATE, "PCM_Checkpoint before PCM_Resume");
  /* Rank 0 registers one more value than the others: PCM_Resume fails alike everywhere. */
  if (rank == 0) expect(PCM_Register_value("extra", &other, PCM_INT, 1), PCM_SUCCESS, "extra");
  all = PCM_Resume(&world);
  expect(all, size > 1 ? PCM_ERR_ARG : PCM_SUCCESS, "PCM_Resume with different registrations");
  expect(PCM_Resume(&world), PCM_ERR_STATE, "PCM_Resume twice");
  expect(PCM_Register_value("late", &other, PCM_INT, 1), PCM_ERR_STATE, "registering after");
  expect(PCM_Unregister("it"), PCM_ERR_STATE, "unregistering after PCM_Resume");
  expect(PCM_Adapt(NULL), PCM_ERR_ARG, "PCM_Adapt(NULL)");
  expect(PCM_Adapt(&world), PCM_NONE, "PCM_Adapt with nothing pending");
  expect(PCM_Checkpoint(world, -1), PCM_ERR_ARG, "a negative iteration");
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, world);
  if (rank == 0) printf("misuse: %s (%d failures)\n", all == 0 ? "ok" : "FAIL", all);
  PCM_Finalize(world);
  return all == 0 ? 0 : 1;
}
