/* tests/multihost/multihost_probe.c — which "host" does each process run on? A plain MPI program
 * (no PCM) for the cluster on one machine made by testbed/hosts.sh
 * (tests/multihost/multihost_smoke.sh runs it).
 *
 *   multihost_probe SPAWN_HOST SPAWN_ADDR
 *
 * Network namespaces do not change the UTS hostname, so the fact that tells the hosts apart is
 * the IPv4 address of the namespace's interface: each rank prints
 * "probe: rank R host H addr A" (H from gethostname(), A the first non-loopback IPv4 address).
 * Rank 0 then spawns one child with the "host" info key set to SPAWN_HOST; the child prints
 * "probe: child host H addr A", merges with the parents and sends its address to rank 0, which
 * prints "probe: spawn on SPAWN_HOST ok" when it equals SPAWN_ADDR and fails otherwise. */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <limits.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { ADDR_LEN = INET_ADDRSTRLEN, TAG = 17 };

/* The first IPv4 address of an interface that is up and not loopback, or "none". */
static void own_address(char out[ADDR_LEN]) {
  struct ifaddrs *list = NULL;
  snprintf(out, ADDR_LEN, "none");
  if (getifaddrs(&list) != 0) return;
  for (struct ifaddrs *i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) ||
        !(i->ifa_flags & IFF_UP))
      continue;
    const struct sockaddr_in *sin = (const struct sockaddr_in *)i->ifa_addr;
    if (inet_ntop(AF_INET, &sin->sin_addr, out, ADDR_LEN)) break;
  }
  freeifaddrs(list);
}

static void host_name(char *out, size_t len) {
  if (gethostname(out, len) != 0) snprintf(out, len, "?");
  out[len - 1] = '\0';
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char addr[ADDR_LEN], name[256];
  own_address(addr);
  host_name(name, sizeof name);

  MPI_Comm parent;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) {
    MPI_Comm merged;
    printf("probe: child host %s addr %s\n", name, addr);
    fflush(stdout);
    MPI_Intercomm_merge(parent, 1, &merged);
    MPI_Send(addr, ADDR_LEN, MPI_CHAR, 0, TAG, merged);
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
  }

  if (argc != 3) {
    fprintf(stderr, "usage: %s SPAWN_HOST SPAWN_ADDR\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  printf("probe: rank %d host %s addr %s\n", rank, name, addr);
  fflush(stdout);

  /* The child runs the same binary; an absolute path so that any host finds it. */
  char self[PATH_MAX];
  if (!realpath(argv[0], self)) snprintf(self, sizeof self, "%s", argv[0]);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "host", argv[1]);
  char *child_argv[] = {"child", NULL};
  MPI_Comm inter, merged;
  int errcode = MPI_SUCCESS;
  MPI_Comm_spawn(self, child_argv, 1, info, 0, MPI_COMM_WORLD, &inter, &errcode);
  MPI_Info_free(&info);
  MPI_Intercomm_merge(inter, 0, &merged);

  int status = 0;
  if (rank == 0) {
    char child[ADDR_LEN];
    MPI_Recv(child, ADDR_LEN, MPI_CHAR, size, TAG, merged, MPI_STATUS_IGNORE);
    child[ADDR_LEN - 1] = '\0';
    if (errcode == MPI_SUCCESS && strcmp(child, argv[2]) == 0) {
      printf("probe: spawn on %s ok\n", argv[1]);
    } else {
      printf("probe: spawn on %s FAILED: child addr %s, expected %s\n", argv[1], child, argv[2]);
      status = 1;
    }
    fflush(stdout);
  }
  MPI_Comm_free(&merged);
  MPI_Comm_disconnect(&inter);
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
