/* mpi_store_load.c — MPI test: PCM_Store/PCM_Load round trip of every type, an array large
 * enough to travel to pcmd in pieces, and load errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcm.h"

static int failures = 0;

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                       \
      fprintf(stderr, " [%s]\n", PCM_Last_error());                       \
      failures++;                                                         \
    }                                                                     \
  } while (0)

int main(int argc, char **argv) {
  int rank = -1, size = 0, rc, i, all;
  MPI_Comm world = MPI_COMM_WORLD;
  enum { N = 1000 };
  static char c[N], c2[N];
  static int iv[N], iv2[N];
  static long lv[N], lv2[N];
  static float fv[N], fv2[N];
  static double dv[N], dv2[N];
  static long long llv[N], llv2[N];
  static unsigned char bv[N], bv2[N];
  PCM_Datatype t;
  long count;

  rc = MPI_PCM_Init(&argc, &argv);
  if (rc != PCM_SUCCESS) {
    fprintf(stderr, "MPI_PCM_Init: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  rc = PCM_Init(&world);
  if (rc != PCM_SUCCESS) {
    fprintf(stderr, "PCM_Init: %s\n", PCM_Last_error());
    PCM_Finalize(MPI_COMM_NULL);
    return 1;
  }
  CHECK(PCM_Process_Status() == PCM_STARTED, "status %d", PCM_Process_Status());
  CHECK(PCM_Comm_rank(world, &rank) == PCM_SUCCESS, "PCM_Comm_rank");
  MPI_Comm_size(world, &size);

  for (i = 0; i < N; i++) {
    c[i] = (char)('a' + (i + rank) % 26);
    iv[i] = i * 7 + rank;
    lv[i] = (long)i * 100000L + rank;
    fv[i] = (float)i / 3.0f + (float)rank;
    dv[i] = (double)i / 7.0 + rank;
    llv[i] = (long long)i * 1000000007LL + rank;
    bv[i] = (unsigned char)(i * 13 + rank);
  }
  CHECK(PCM_Store(rank, "c", c, PCM_CHAR, N) == PCM_SUCCESS, "store char");
  CHECK(PCM_Store(rank, "i", iv, PCM_INT, N) == PCM_SUCCESS, "store int");
  CHECK(PCM_Store(rank, "l", lv, PCM_LONG, N) == PCM_SUCCESS, "store long");
  CHECK(PCM_Store(rank, "f", fv, PCM_FLOAT, N) == PCM_SUCCESS, "store float");
  CHECK(PCM_Store(rank, "d", dv, PCM_DOUBLE, N) == PCM_SUCCESS, "store double");
  CHECK(PCM_Store(rank, "ll", llv, PCM_LONG_LONG, N) == PCM_SUCCESS, "store long long");
  CHECK(PCM_Store(rank, "b", bv, PCM_BYTE, N) == PCM_SUCCESS, "store byte");
  MPI_Barrier(world);

  /* Each rank loads its neighbour's data: stored data belongs to the job, not the process. */
  {
    int other = (rank + 1) % size;
    int expect_c = 1, expect_d = 1;
    CHECK(PCM_Load(other, "c", c2, PCM_CHAR, N) == PCM_SUCCESS, "load char");
    CHECK(PCM_Load(other, "i", iv2, PCM_INT, N) == PCM_SUCCESS, "load int");
    CHECK(PCM_Load(other, "l", lv2, PCM_LONG, N) == PCM_SUCCESS, "load long");
    CHECK(PCM_Load(other, "f", fv2, PCM_FLOAT, N) == PCM_SUCCESS, "load float");
    CHECK(PCM_Load(other, "d", dv2, PCM_DOUBLE, N) == PCM_SUCCESS, "load double");
    CHECK(PCM_Load(other, "ll", llv2, PCM_LONG_LONG, N) == PCM_SUCCESS, "load long long");
    CHECK(PCM_Load(other, "b", bv2, PCM_BYTE, N) == PCM_SUCCESS, "load byte");
    for (i = 0; i < N; i++) {
      if (c2[i] != (char)('a' + (i + other) % 26)) expect_c = 0;
      if (dv2[i] != (double)i / 7.0 + other) expect_d = 0;
      if (iv2[i] != i * 7 + other || lv2[i] != (long)i * 100000L + other ||
          fv2[i] != (float)i / 3.0f + (float)other ||
          llv2[i] != (long long)i * 1000000007LL + other ||
          bv2[i] != (unsigned char)(i * 13 + other)) {
        CHECK(0, "element %d of rank %d differs", i, other);
        break;
      }
    }
    CHECK(expect_c && expect_d, "char/double contents differ");
  }
  /* Below, each rank replaces its own "d": the neighbour must have finished reading it. */
  MPI_Barrier(world);

  /* 9 MiB and a few doubles: more than one request may carry, so they go in pieces (the last
   * one short) and come back whole, read by the neighbour. */
  {
    const long big = 9L * 1024 * 1024 / 8 + 5;
    double *x = malloc((size_t)big * sizeof(double)), *y = malloc((size_t)big * sizeof(double));
    long k, wrong = 0;
    int other = (rank + 1) % size;
    for (k = 0; k < big; k++) x[k] = (double)k * 0.5 + rank;
    CHECK(PCM_Store(rank, "big", x, PCM_DOUBLE, big) == PCM_SUCCESS, "store 9 MiB");
    MPI_Barrier(world);
    CHECK(PCM_Load(other, "big", y, PCM_DOUBLE, big) == PCM_SUCCESS, "load 9 MiB");
    for (k = 0; k < big; k++) wrong += y[k] != (double)k * 0.5 + other;
    CHECK(wrong == 0, "%ld of the 9 MiB of rank %d differ", wrong, other);
    free(x);
    free(y);
    MPI_Barrier(world);
  }

  /* Errors: each is a code and a message, never a crash. */
  CHECK(PCM_Load(rank, "nokey", dv2, PCM_DOUBLE, N) == PCM_ERR_NOT_FOUND, "missing key");
  CHECK(strlen(PCM_Last_error()) > 0, "no message for missing key");
  CHECK(PCM_Load(size + 5, "d", dv2, PCM_DOUBLE, N) == PCM_ERR_NOT_FOUND, "missing rank");
  CHECK(PCM_Load(rank, "d", fv2, PCM_FLOAT, N) == PCM_ERR_TYPE, "wrong type");
  CHECK(PCM_Load(rank, "d", dv2, PCM_DOUBLE, N - 1) == PCM_ERR_COUNT, "wrong count");
  CHECK(PCM_Load(rank, "d", NULL, PCM_DOUBLE, N) == PCM_ERR_ARG, "NULL buffer");
  CHECK(PCM_Load(rank, "../etc/passwd", dv2, PCM_DOUBLE, N) == PCM_ERR_ARG, "bad key");
  CHECK(PCM_Load(rank, NULL, dv2, PCM_DOUBLE, N) == PCM_ERR_ARG, "NULL key");
  CHECK(PCM_Store(rank, "x", dv, (PCM_Datatype)42, N) == PCM_ERR_ARG, "bad type");
  CHECK(PCM_Store(rank, "x", dv, PCM_DOUBLE, -1) == PCM_ERR_ARG, "negative count");
  CHECK(PCM_Load_count(rank, "ll", &t, &count) == PCM_SUCCESS && t == PCM_LONG_LONG && count == N,
        "load_count");
  CHECK(PCM_Status(MPI_COMM_WORLD) == PCM_ERROR, "PCM_Status on a foreign communicator");
  CHECK(PCM_Reconfigure(&world, argv[0]) == PCM_ERR_STATE, "reconfigure with nothing pending");
  CHECK(PCM_Exit() == PCM_ERR_STATE, "PCM_Exit in an active process");
  /* A store replaced by one of another shape. */
  CHECK(PCM_Store(rank, "d", iv, PCM_INT, 10) == PCM_SUCCESS, "re-store");
  CHECK(PCM_Load(rank, "d", iv2, PCM_INT, 10) == PCM_SUCCESS && iv2[9] == iv[9], "re-load");
  CHECK(PCM_Status(world) == PCM_NONE, "PCM_Status with nothing pending");
  /* Everything stored becomes one durable global version. */
  CHECK(PCM_Commit(world, 7) == PCM_SUCCESS, "PCM_Commit");
  CHECK(PCM_Commit(world, -1) == PCM_ERR_ARG, "PCM_Commit of a negative iteration");

  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, world);
  if (rank == 0) printf("%s: %d failures\n", all ? "FAILED" : "ok", all);
  PCM_Finalize(world);
  return all ? 1 : 0;
}
