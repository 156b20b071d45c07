/* memcpy_rate.c — benchmark baseline: memcpy throughput for BYTES bytes (best of REPS). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t bytes = argc > 1 ? (size_t)atoll(argv[1]) : (size_t)1 << 26;
  int reps = argc > 2 ? atoi(argv[2]) : 5, r;
  char *a = malloc(bytes), *b = malloc(bytes);
  double best = 1e30;
  if (!a || !b) return 1;
  memset(a, 1, bytes);
  memset(b, 2, bytes); /* touch every page before timing */
  for (r = 0; r < reps; r++) {
    double t = now();
    memcpy(b, a, bytes);
    t = now() - t;
    if (t < best) best = t;
  }
  printf("memcpy: %zu bytes best %.4f s %.3f GB/s (check %d)\n", bytes, best, bytes / best / 1e9,
         b[bytes / 2]);
  free(a);
  free(b);
  return 0;
}
