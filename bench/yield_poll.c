/* yield_poll.c — LD_PRELOAD library for oversubscribed benchmarks (bench/mpi_scale.sh): MPICH's
 * ch3:nemesis waits by spinning over its shared-memory queues and calls poll() with a zero timeout
 * on its TCP sockets every few turns of that loop. On more ranks than cores a spinning rank holds
 * its core until the scheduler's tick takes it away, so a collective over P ranks costs time
 * slices rather than messages. This library wraps poll(): when a poll with a zero timeout finds
 * nothing, the caller yields its core (sched_yield) to any runnable rank before spinning on. It
 * changes no result and no call that waits with a timeout (pcmd's, ZeroMQ's, hydra's blocking
 * polls). MPIR_CVAR_POLLS_BEFORE_YIELD, MPICH's own setting, does nothing here: with it at 1 a
 * rank makes no sched_yield call at all (strace -c), since ch3's yielding loop is not the one
 * its collectives wait in. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <sched.h>

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);

int poll(struct pollfd *fds, nfds_t n, int timeout) {
  static poll_fn real;
  int r;
  if (!real) real = (poll_fn)dlsym(RTLD_NEXT, "poll");
  r = real(fds, n, timeout);
  if (r == 0 && timeout == 0) sched_yield();
  return r;
}
