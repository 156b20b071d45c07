// leftovers.cpp — libpcm's requests in flight and the orphans of a failed reconfiguration
// (leftovers.h).
#include "leftovers.h"

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <utility>
#include <vector>

namespace pcm::lib::requests {

namespace {

struct Orphan {
  MPI_Request req;
  std::shared_ptr<void> keep;
};

// The background spawn's helper thread waits through wait_counted too: both are shared.
std::atomic<long> g_open{0};
std::atomic<std::size_t> g_orphan_count{0};
std::mutex g_mutex;
std::vector<Orphan>& orphan_list() {
  static std::vector<Orphan>* list = new std::vector<Orphan>();  // never destroyed: see sweep
  return *list;
}

}  // namespace

long open() { return g_open.load(std::memory_order_relaxed); }
void started(long n) { g_open.fetch_add(n, std::memory_order_relaxed); }
void ended(long n) { g_open.fetch_sub(n, std::memory_order_relaxed); }

void orphan(MPI_Request* req, std::shared_ptr<void> keep) {
  if (*req == MPI_REQUEST_NULL) return;  // keep goes now
  std::lock_guard<std::mutex> lock(g_mutex);
  orphan_list().push_back({std::exchange(*req, MPI_REQUEST_NULL), std::move(keep)});
  g_orphan_count.store(orphan_list().size(), std::memory_order_relaxed);
}

std::size_t orphans() { return g_orphan_count.load(std::memory_order_relaxed); }

std::size_t sweep() {
  if (orphans() == 0 || mpi::finalized()) return orphans();
  std::vector<Orphan> done;  // their memory goes outside the lock
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<Orphan>& list = orphan_list();
  for (std::size_t i = 0; i < list.size();) {
    int flag = 0;
    // An error completes the request as well (MPICH's answer where the other process is gone).
    if (MPI_Test(&list[i].req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
        list[i].req == MPI_REQUEST_NULL)
      flag = 1;
    if (flag) {
      list[i].req = MPI_REQUEST_NULL;
      done.push_back(std::move(list[i]));
      list[i] = std::move(list.back());
      list.pop_back();
      ended();
    } else {
      ++i;
    }
  }
  g_orphan_count.store(list.size(), std::memory_order_relaxed);
  return list.size();
}

std::size_t drain(std::chrono::milliseconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  const timespec pause{0, 1000000};
  std::size_t left;
  while ((left = sweep()) > 0 && std::chrono::steady_clock::now() < until)
    nanosleep(&pause, nullptr);
  return left;
}

void wait_counted(MPI_Request* req, const Waiter* wait, std::shared_ptr<void> keep) {
  started();
  try {
    wait_for(req, wait);
  } catch (...) {
    // A failed MPI_Wait has completed the request (it is MPI_REQUEST_NULL then): not an orphan.
    if (*req == MPI_REQUEST_NULL)
      ended();
    else
      orphan(req, std::move(keep));
    throw;
  }
  ended();
}

long resident_kb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  std::fclose(f);
  return kb;
}

}  // namespace pcm::lib::requests
