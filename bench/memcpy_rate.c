/* memcpy_rate.c — benchmark baselines for BYTES bytes: memcpy between buffers already touched
 * (best of REPS), and memcpy into newly allocated memory (median of REPS), which pays the kernel's
 * first-touch page faults as every receiver of a redistribution does. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int main(int argc, char **argv) {
  size_t bytes = argc > 1 ? (size_t)atoll(argv[1]) : (size_t)1 << 26;
  int reps = argc > 2 ? atoi(argv[2]) : 5, r;
  char *a = malloc(bytes), *b = malloc(bytes);
  double best = 1e30;
  if (!a || !b) return 1;
  double fresh[64];
  if (reps < 1 || reps > 64) return 2;
  memset(a, 1, bytes);
  for (r = 0; r < reps; r++) { /* mmap: new pages every time (malloc may reuse freed ones) */
    char *c = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double t = now();
    if (c == MAP_FAILED) return 1;
    memcpy(c, a, bytes);
    fresh[r] = now() - t;
    if (c[bytes / 2] != 1) return 1;
    munmap(c, bytes);
  }
  qsort(fresh, (size_t)reps, sizeof fresh[0], by_value); /* for the median */
  memset(b, 2, bytes);                                   /* touch every page before timing */
  for (r = 0; r < reps; r++) {
    double t = now();
    memcpy(b, a, bytes);
    t = now() - t;
    if (t < best) best = t;
  }
  printf("memcpy: %zu bytes best %.4f s %.3f GB/s (check %d)\n", bytes, best, bytes / best / 1e9,
         b[bytes / 2]);
  printf("memcpy into new memory: %zu bytes median %.4f s %.3f GB/s\n", bytes, fresh[reps / 2],
         bytes / fresh[reps / 2] / 1e9);
  free(a);
  free(b);
  return 0;
}
