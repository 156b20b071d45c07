/* consumer.c — a C99 program using an installed PCM: calls that need no pcmd, checked. */
#include <mpi.h>
#include <pcm.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "consumer: FAILED: %s\n", what);
    ++failures;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);

  /* 10 units of 4 elements, halo 1, over 3 ranks: block gives 4, 3, 3 units. */
  PCM_Dist dist = NULL;
  long segments = -1, units = -1, elements = -1;
  check(PCM_Dist_create(PCM_BLOCK, 10, 4, 0, 1, 3, &dist) == PCM_SUCCESS, "PCM_Dist_create block");
  check(dist != NULL, "PCM_Dist_create gives a map");
  check(PCM_Dist_local(dist, 0, &segments, &units, &elements) == PCM_SUCCESS, "PCM_Dist_local");
  check(segments == 1 && units == 4 && elements == (4 + 2) * 4, "block rank 0: 1 segment, 4 units");
  check(PCM_Dist_local(dist, 3, NULL, NULL, NULL) == PCM_ERR_ARG, "PCM_Dist_local rank 3 refused");
  check(PCM_Dist_free(&dist) == PCM_SUCCESS && dist == NULL, "PCM_Dist_free");

  /* Cyclic: rank 1 owns units 1, 4 and 7, each a segment with its own halos. */
  check(PCM_Dist_create(PCM_CYCLIC, 10, 4, 0, 1, 3, &dist) == PCM_SUCCESS,
        "PCM_Dist_create cyclic");
  check(PCM_Dist_local(dist, 1, &segments, &units, NULL) == PCM_SUCCESS, "PCM_Dist_local cyclic");
  check(segments == 3 && units == 3, "cyclic rank 1: 3 segments, 3 units");
  check(PCM_Dist_free(&dist) == PCM_SUCCESS && dist == NULL, "PCM_Dist_free cyclic");
  check(PCM_Dist_free(NULL) == PCM_SUCCESS, "PCM_Dist_free(NULL)");

  check(PCM_Dist_create(PCM_BLOCK, 0, 4, 0, 1, 3, &dist) == PCM_ERR_ARG, "zero units refused");
  check(strcmp(PCM_Error_string(PCM_SUCCESS), "success") == 0, "PCM_Error_string(PCM_SUCCESS)");
  check(strcmp(PCM_Error_string(PCM_ERR_ARG), PCM_Error_string(PCM_ERR_DAEMON)) != 0,
        "PCM_Error_string tells codes apart");
  check(PCM_Error_string(12345) != NULL, "PCM_Error_string of an unknown code");

  MPI_Finalize();
  if (failures != 0) return 1;
  printf("consumer: ok\n");
  return 0;
}
