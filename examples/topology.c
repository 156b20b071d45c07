/* topology.c — a malleable loop that asks where its processes are (PCM_Topology, PCM_Host_comm)
 * after it starts and after every reconfiguration, and sums its distributed array hierarchically:
 * within each host, then among one process per host, checked against a flat MPI_Allreduce.
 *
 *   topology UNITS ITERS [THROTTLE_US]
 *
 * x holds UNITS doubles, x[g] = g + it at iteration it (integers: every sum is exact, so the two
 * reductions must agree bit for bit and the final sum is known). After PCM_Resume and after every
 * PCM_RESHAPED each process prints
 *   topo: iter I rank R size S host H addr A site_color C0 host_color C1
 * (A: its first non-loopback IPv4 address, which says where it really runs), and at the end rank 0
 * prints "sum V expected W". Exits 1 if the reductions ever differ. */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pcm.h"

static void own_address(char *out, size_t len) {
  struct ifaddrs *list = NULL, *i;
  snprintf(out, len, "none");
  if (getifaddrs(&list) != 0) return;
  for (i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) ||
        !(i->ifa_flags & IFF_UP))
      continue;
    if (inet_ntop(AF_INET, &((const struct sockaddr_in *)i->ifa_addr)->sin_addr, out,
                  (socklen_t)len))
      break;
  }
  freeifaddrs(list);
}

/* After a start or a reconfiguration: report where this process is, and (re)build the
 * communicators of the hierarchical sum. */
static int locate(MPI_Comm world, int it, MPI_Comm *host, MPI_Comm *leaders) {
  int rank, size, nlevels, colors[PCM_TOPO_LEVELS], host_rank;
  char name[MPI_MAX_PROCESSOR_NAME], addr[64];
  if (*host != MPI_COMM_NULL) MPI_Comm_free(host);
  if (*leaders != MPI_COMM_NULL) MPI_Comm_free(leaders);
  if (PCM_Topology(world, &nlevels, colors) != PCM_SUCCESS ||
      PCM_Host_comm(world, host) != PCM_SUCCESS) {
    fprintf(stderr, "topology: %s\n", PCM_Last_error());
    return -1;
  }
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  MPI_Comm_rank(*host, &host_rank);
  MPI_Comm_split(world, host_rank == 0 ? 0 : MPI_UNDEFINED, rank, leaders);
  MPI_Get_processor_name(name, &nlevels);
  own_address(addr, sizeof addr);
  printf("topo: iter %d rank %d size %d host %s addr %s site_color %d host_color %d\n", it, rank,
         size, name, addr, colors[PCM_TOPO_SITE], colors[PCM_TOPO_HOST]);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD, host = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
  PCM_Dist dist = NULL;
  double *x = NULL, local, flat, hier;
  long units, first, count, off, n = 0;
  int it = 0, iters, throttle, rank, size, s, seg, bad = 0;

  if (MPI_PCM_Init(&argc, &argv) != PCM_SUCCESS || PCM_Init(&world) != PCM_SUCCESS) {
    fprintf(stderr, "topology: %s\n", PCM_Last_error());
    return PCM_Finalize(MPI_COMM_NULL), 1;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: %s UNITS ITERS [THROTTLE_US]\n", argv[0]);
    return PCM_Finalize(world), 2;
  }
  units = atol(argv[1]);
  iters = atoi(argv[2]);
  throttle = argc > 3 ? atoi(argv[3]) : 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (PCM_Process_Status() == PCM_STARTED) {
    PCM_Dist_create(PCM_CYCLIC, units, 1, 0, 0, size, &dist);
    PCM_Dist_local(dist, rank, NULL, NULL, &n);
    x = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (seg = 0; PCM_Dist_segment(dist, rank, seg, &first, &count, &off) == PCM_SUCCESS; seg++)
      for (long k = 0; k < count; k++) x[off + k] = (double)(first + k);
  }
  PCM_Register_dist("x", (void **)&x, PCM_DOUBLE, &dist);
  PCM_Register_value("it", &it, PCM_INT, 1);
  if (PCM_Resume(&world) != PCM_SUCCESS || locate(world, it, &host, &leaders) != 0)
    return PCM_Finalize(world), 1;
  for (; it < iters; it++) {
    s = PCM_Adapt(&world);
    if (s == PCM_RETIRED) {
      if (host != MPI_COMM_NULL) MPI_Comm_free(&host);
      if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
      return PCM_Exit();
    }
    if (s < 0) break;
    if (s == PCM_RESHAPED && locate(world, it, &host, &leaders) != 0) break;
    MPI_Comm_rank(world, &rank);
    PCM_Dist_local(dist, rank, NULL, NULL, &n);
    local = 0;
    for (long i = 0; i < n; i++) local += x[i];
    /* Flat, then hierarchical: within the host, among host leaders, back within the host. */
    MPI_Allreduce(&local, &flat, 1, MPI_DOUBLE, MPI_SUM, world);
    MPI_Reduce(&local, &hier, 1, MPI_DOUBLE, MPI_SUM, 0, host);
    if (leaders != MPI_COMM_NULL)
      MPI_Allreduce(MPI_IN_PLACE, &hier, 1, MPI_DOUBLE, MPI_SUM, leaders);
    MPI_Bcast(&hier, 1, MPI_DOUBLE, 0, host);
    if (hier != flat && !bad) {
      fprintf(stderr, "topology: iteration %d: hierarchical sum %.17g, flat %.17g\n", it, hier,
              flat);
      bad = 1;
    }
    for (long i = 0; i < n; i++) x[i] += 1.0;
    if (throttle > 0) usleep((useconds_t)throttle);
  }
  MPI_Comm_rank(world, &rank);
  PCM_Dist_local(dist, rank, NULL, NULL, &n);
  local = 0;
  for (long i = 0; i < n; i++) local += x[i];
  MPI_Reduce(&local, &flat, 1, MPI_DOUBLE, MPI_SUM, 0, world);
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, world);
  if (rank == 0) {
    printf("sum %.0f expected %.0f\n", flat, (double)units * (units - 1) / 2 + (double)units * it);
    fflush(stdout);
  }
  if (host != MPI_COMM_NULL) MPI_Comm_free(&host);
  if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
  free(x);
  PCM_Dist_free(&dist);
  return PCM_Finalize(world) == PCM_SUCCESS && !bad && it == iters ? 0 : 1;
}
