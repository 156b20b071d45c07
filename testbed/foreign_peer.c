/* foreign_peer.c old|new DIR — a process of one MPI job delivers a message into another job, with
 * no PCM (issue 38 item 5). testbed/foreign_peer.sh runs the scenario; the two roles:
 *
 *   old (job A, 2 processes): rank 1 closes its listening socket, on the port given in
 *       MPIR_CVAR_CH3_PORT_RANGE, writes DIR/old1.pid and waits: its host is gone, the port is
 *       free for the next process there, and nobody is told (no process died, so the launcher
 *       says nothing; what a powered-off host looks like to the others). Rank 0 writes
 *       DIR/old0.pid, waits for DIR/go, then sends {0x50434d21, its pid} to its rank 1, tag 38,
 *       as a survivor of a job does when it goes on with its work, and keeps MPI's progress going
 *       until DIR/done.
 *   new (job B, 2 processes, rank 1 listening on the port rank 1 of job A had): rank 1 writes
 *       DIR/new1.listening and waits up to 30 s for a message from its rank 0, tag 38. Job B's
 *       rank 0 sends nothing: it writes DIR/new0.pid and waits for DIR/done. Rank 1 writes into
 *       DIR/done what came ("received 0x50434d21 from pid N", or "nothing came within 30 s").
 *
 * Every process ends with _exit(0): neither job can finalize (one has lost a process, the other
 * shares a connection with a stranger). Bounded waits of 60 s everywhere. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <mpi.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char dir[4096];

static void path(char* out, size_t n, const char* name) { snprintf(out, n, "%s/%s", dir, name); }

static void write_text(const char* name, const char* text) {
  char p[4200], tmp[4300];
  path(p, sizeof p, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", p);
  FILE* f = fopen(tmp, "w");
  if (!f) _exit(5);
  fprintf(f, "%s\n", text);
  fclose(f);
  rename(tmp, p);
}

static void write_file(const char* name, long value) {
  char text[32];
  snprintf(text, sizeof text, "%ld", value);
  write_text(name, text);
}

static int exists(const char* name) {
  char p[4200];
  path(p, sizeof p, name);
  return access(p, F_OK) == 0;
}

/* Waits for DIR/name for up to 60 s, keeping MPI's progress going; 1 when it came. */
static int wait_file(const char* name) {
  const struct timespec tick = {0, 10 * 1000 * 1000};
  for (int i = 0; i < 6000; ++i) {
    if (exists(name)) return 1;
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    nanosleep(&tick, NULL);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[1], "old") && strcmp(argv[1], "new"))) {
    fprintf(stderr, "usage: foreign_peer old|new DIR\n");
    return 2;
  }
  snprintf(dir, sizeof dir, "%s", argv[2]);
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int old = strcmp(argv[1], "old") == 0;
  if (old && me == 1) {
    /* The host is gone: its port is free for the next process there, and no one is told. */
    const char* range = getenv("MPIR_CVAR_CH3_PORT_RANGE");
    const int port = range ? atoi(range) : 0;
    int closed = 0;
    for (int fd = 3; fd < 1024 && port > 0; ++fd) {
      struct sockaddr_in a;
      socklen_t n = sizeof a;
      int listening = 0;
      socklen_t ln = sizeof listening;
      if (getsockname(fd, (struct sockaddr*)&a, &n) == 0 && a.sin_family == AF_INET &&
          ntohs(a.sin_port) == port &&
          getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ln) == 0 && listening) {
        close(fd);
        closed = 1;
      }
    }
    if (!closed) _exit(4);
    write_file("old1.pid", (long)getpid());
    for (;;) pause();
  }
  if (old) { /* rank 0 of job A */
    write_file("old0.pid", (long)getpid());
    if (!wait_file("go")) _exit(3);
    int v[2] = {0x50434d21, (int)getpid()};
    MPI_Request req;
    int rc = MPI_Isend(v, 2, MPI_INT, 1, 38, MPI_COMM_WORLD, &req), flag = 0;
    for (int i = 0; i < 3000 && rc == MPI_SUCCESS && !flag; ++i) {
      rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      if (!flag) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "job A rank 0: send to rank 1 %s %s\n", flag ? "completed" : "not completed",
            msg);
    wait_file("done");
    _exit(0);
  }
  if (me == 0) { /* rank 0 of job B: sends nothing */
    write_file("new0.pid", (long)getpid());
    wait_file("done");
    _exit(0);
  }
  write_file("new1.listening", (long)getpid());
  int v[2] = {0, 0}, flag = 0;
  MPI_Request req;
  MPI_Irecv(v, 2, MPI_INT, 0, 38, MPI_COMM_WORLD, &req);
  const struct timespec tick = {0, 10 * 1000 * 1000};
  for (int i = 0; i < 3000 && !flag; ++i) {
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (!flag) nanosleep(&tick, NULL);
  }
  char text[128] = "nothing came within 30 s";
  if (flag) snprintf(text, sizeof text, "received 0x%08x from pid %d", (unsigned)v[0], v[1]);
  write_text("done", text);
  _exit(0);
}
