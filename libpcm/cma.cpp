// cma.cpp — a split's data by cross-memory attach (see cma.h).
#include "cma.h"

#include <limits.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "leftovers.h"
#include "mpi_util.h"

namespace pcm::lib {

using proto::json;

// MPICH's ch3 connects separately spawned groups over TCP, even on one host, which made a
// split's data phase far slower than a memory copy. Where the old and the new processes share
// a host, the new ones read the old buffers directly with process_vm_readv (one copy, no
// sockets). Each old rank publishes its pid, its host, its buffer's address and a random token
// kept at a published address; a new process reads the token first, so a pid that names another
// process (another host or pid namespace) or a kernel that refuses the read (ptrace rules such
// as Yama's) only means that the ranks fall back, together, to MPI_Alltoallw.

namespace {

std::uint64_t host_hash() {
  char name[HOST_NAME_MAX + 1] = {};
  ::gethostname(name, sizeof name - 1);
  return std::hash<std::string>{}(name);
}

}  // namespace

// Collective over the old world: what its rank 0 puts in the split's header so that the new
// processes can read every old buffer ("cma": null when PCM_SPLIT_CMA=0 on rank 0).
json cma_sources(MPI_Comm world, int rank, int size, const void* buf, const std::uint64_t* token,
                 bool enabled) {
  std::uint64_t mine[5] = {static_cast<std::uint64_t>(::getpid()), host_hash(),
                           reinterpret_cast<std::uintptr_t>(buf),
                           reinterpret_cast<std::uintptr_t>(token), *token};
  std::vector<std::uint64_t> all(rank == 0 ? 5 * static_cast<std::size_t>(size) : 0);
  mpi_check(MPI_Gather(mine, 5, MPI_UINT64_T, all.data(), 5, MPI_UINT64_T, 0, world), "MPI_Gather");
  if (rank != 0 || !enabled) return nullptr;
  json sources = json::array();
  for (int r = 0; r < size; ++r) {
    const std::uint64_t* v = &all[5 * static_cast<std::size_t>(r)];
    sources.push_back(json::array({v[0], v[1], v[2], v[3], v[4]}));
  }
  return sources;
}

namespace {

// One process's entry of cma_sources: pid, host, buffer address, token address, token.
struct Peer {
  pid_t pid;
  std::uint64_t host, buf, token_at, token;
  static Peer of(const json& j) {
    return {static_cast<pid_t>(j[0].get<std::uint64_t>()), j[1].get<std::uint64_t>(),
            j[2].get<std::uint64_t>(), j[3].get<std::uint64_t>(), j[4].get<std::uint64_t>()};
  }
};

// n bytes between this process's `mine` and the peer's address `at`: read (write = false) or
// written. One call moves at most about 2 GiB.
bool move_bytes(const Peer& peer, void* mine, std::uint64_t at, std::size_t n, bool write) {
  while (n > 0) {
    const std::size_t chunk = std::min<std::size_t>(n, std::size_t{1} << 30);
    iovec local{mine, chunk}, remote{reinterpret_cast<void*>(at), chunk};
    const ssize_t done = write ? ::process_vm_writev(peer.pid, &local, 1, &remote, 1, 0)
                               : ::process_vm_readv(peer.pid, &local, 1, &remote, 1, 0);
    if (done != static_cast<ssize_t>(chunk)) return false;
    mine = static_cast<char*>(mine) + chunk;
    at += chunk;
    n -= chunk;
  }
  return true;
}

// Whether the peer is the process it says it is: on this host, holding its token where it said.
// Checked once per peer.
class Peers {
 public:
  explicit Peers(const json& list) : list_(list), checked_(list.size(), 0) {}
  bool usable() const { return list_.is_array(); }
  std::size_t size() const { return list_.size(); }
  // The peer of index r, verified; nullopt if it cannot be reached this way.
  std::optional<Peer> at(std::size_t r) {
    if (r >= list_.size()) return std::nullopt;
    const Peer p = Peer::of(list_[r]);
    if (checked_[r] == 0) {
      std::uint64_t token = 0;
      checked_[r] = p.host == host_ && move_bytes(p, &token, p.token_at, sizeof token, false) &&
                            token == p.token
                        ? 1
                        : -1;
    }
    if (checked_[r] < 0) return std::nullopt;
    return p;
  }

 private:
  const json& list_;
  std::vector<int> checked_;
  std::uint64_t host_ = host_hash();
};

}  // namespace

// Reads into newbuf the units that plan sends to new rank me, from the old buffers that sources
// describes. False (and the caller falls back) if any source is elsewhere or any read fails.
bool cma_read(const json& sources, const std::vector<Transfer>& plan, int me,
              const Distribution& from, const Distribution& to, char* newbuf, std::size_t elem) {
  Peers olds(sources);
  if (!olds.usable() || olds.size() != static_cast<std::size_t>(from.size())) return false;
  for (const Transfer& t : plan) {
    if (t.to != me) continue;
    auto src = olds.at(static_cast<std::size_t>(t.from));
    if (!src) return false;
    const std::uint64_t at =
        src->buf + static_cast<std::uint64_t>(from.unit_offset(t.first, nullptr)) * elem;
    char* dst = newbuf + static_cast<std::size_t>(to.unit_offset(t.first, nullptr)) * elem;
    if (!move_bytes(*src, dst, at, static_cast<std::size_t>(t.count * from.unit_len()) * elem,
                    false))
      return false;
  }
  return true;
}

// Both ends of every transfer between two processes work on it: the receiver reads the first
// half of its units, the sender writes the second half into the receiver's new buffer. A merge's
// leavers would otherwise wait while the survivors alone fault in every page of their grown
// buffers (the dearest part of a merge on a VM); this way two processes, on two cores, share it.
bool cma_merge(const json& olds_list, const json& news_list, const std::vector<Transfer>& plan,
               int me_old, int me_new, const std::vector<int>& old_of_new, const Distribution& from,
               const Distribution& to, const char* oldbuf, char* newbuf, std::size_t elem) {
  Peers olds(olds_list), news(news_list);
  const std::size_t n = static_cast<std::size_t>(from.size());
  if (!olds.usable() || !news.usable() || olds.size() != n || news.size() != n) return false;
  const std::size_t unit = static_cast<std::size_t>(from.unit_len()) * elem;
  for (const Transfer& t : plan) {
    const int receiver = old_of_new.at(static_cast<std::size_t>(t.to));
    const bool mine_in = t.to == me_new, mine_out = t.from == me_old;
    if (!mine_in && !mine_out) continue;
    // A process's own units: it copies them all. Between two: the receiver reads [0, half),
    // the sender writes [half, count).
    const std::int64_t half = t.from == receiver ? t.count : t.count / 2;
    if (mine_in && half > 0) {
      auto src = olds.at(static_cast<std::size_t>(t.from));
      if (!src) return false;
      const std::uint64_t at =
          src->buf + static_cast<std::uint64_t>(from.unit_offset(t.first, nullptr)) * elem;
      char* dst = newbuf + static_cast<std::size_t>(to.unit_offset(t.first, nullptr)) * elem;
      if (!move_bytes(*src, dst, at, static_cast<std::size_t>(half) * unit, false)) return false;
    }
    if (mine_out && t.from != receiver && t.count > half) {
      auto dst = news.at(static_cast<std::size_t>(receiver));
      if (!dst) return false;
      const std::int64_t first = t.first + half;
      const std::uint64_t at =
          dst->buf + static_cast<std::uint64_t>(to.unit_offset(first, nullptr)) * elem;
      const char* src = oldbuf + static_cast<std::size_t>(from.unit_offset(first, nullptr)) * elem;
      if (!move_bytes(*dst, const_cast<char*>(src), at,
                      static_cast<std::size_t>(t.count - half) * unit, true))
        return false;
    }
  }
  return true;
}

// Collective over a split's intercommunicator (and the new world, world_new, on the new side):
// whether every new process has read its data (old side: mine is ignored). Until it returns,
// the old buffers stay in place.
bool cma_all_read(bool mine, bool old_side, MPI_Comm inter, MPI_Comm world_new,
                  const Waiter* wait) {
  // On the heap: a reduction a split's guard gives up on stays running with it (leftovers.h).
  struct Flags {
    int ok = 0, all = 0;
  };
  const auto f = std::make_shared<Flags>();
  f->ok = mine ? 1 : 0;
  MPI_Request req;
  if (!old_side && wait) {
    mpi_check(MPI_Iallreduce(MPI_IN_PLACE, &f->ok, 1, MPI_INT, MPI_MIN, world_new, &req),
              "MPI_Iallreduce");
    requests::wait_counted(&req, wait, f);
  } else if (!old_side) {
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, &f->ok, 1, MPI_INT, MPI_MIN, world_new), "MPI_Allreduce");
  }
  // On an intercommunicator each group receives the reduction of the other group's values.
  if (old_side) f->ok = 1;
  mpi_check(MPI_Iallreduce(&f->ok, &f->all, 1, MPI_INT, MPI_MIN, inter, &req), "MPI_Iallreduce");
  // Unguarded: spinning (gently on the old side, where the new processes do the work).
  const Waiter spin = [old_side](MPI_Request* r) {
    int done = 0;
    const timespec pause{0, old_side ? 200000 : 0};
    while (!done) {
      mpi_check(MPI_Test(r, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!done && old_side) nanosleep(&pause, nullptr);
    }
  };
  requests::wait_counted(&req, wait ? wait : &spin, f);
  return old_side ? f->all == 1 : f->ok == 1;
}

}  // namespace pcm::lib
