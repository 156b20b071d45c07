// cma.cpp — a split's data by cross-memory attach (see cma.h).
#include "cma.h"

#include <limits.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <string>

#include "mpi_util.h"

namespace pcm::detail {

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

// Reads into newbuf the units that plan sends to new rank me, from the old buffers that sources
// describes. False (and the caller falls back) if any source is elsewhere or any read fails.
bool cma_read(const json& sources, const std::vector<Transfer>& plan, int me,
              const Distribution& from, const Distribution& to, char* newbuf, std::size_t elem) {
  if (!sources.is_array() || sources.size() != static_cast<std::size_t>(from.size())) return false;
  const std::uint64_t here = host_hash();
  const std::size_t unit_bytes = elem * static_cast<std::size_t>(from.unit_len());
  auto read = [](const json& src, void* dst, std::uint64_t addr, std::size_t n) {
    while (n > 0) {  // one read moves at most about 2 GiB
      const std::size_t chunk = std::min<std::size_t>(n, std::size_t{1} << 30);
      iovec local{dst, chunk}, remote{reinterpret_cast<void*>(addr), chunk};
      if (::process_vm_readv(static_cast<pid_t>(src[0].get<std::uint64_t>()), &local, 1, &remote, 1,
                             0) != static_cast<ssize_t>(chunk))
        return false;
      dst = static_cast<char*>(dst) + chunk;
      addr += chunk;
      n -= chunk;
    }
    return true;
  };
  std::vector<bool> checked(static_cast<std::size_t>(from.size()), false);
  for (const Transfer& t : plan) {
    if (t.to != me) continue;
    const json& src = sources.at(static_cast<std::size_t>(t.from));
    if (!checked[static_cast<std::size_t>(t.from)]) {
      std::uint64_t token = 0;
      if (src[1].get<std::uint64_t>() != here ||
          !read(src, &token, src[3].get<std::uint64_t>(), sizeof token) ||
          token != src[4].get<std::uint64_t>())
        return false;
      checked[static_cast<std::size_t>(t.from)] = true;
    }
    const std::uint64_t at = src[2].get<std::uint64_t>() +
                             static_cast<std::uint64_t>(from.unit_offset(t.first, nullptr)) * elem;
    char* dst = newbuf + static_cast<std::size_t>(to.unit_offset(t.first, nullptr)) * elem;
    if (!read(src, dst, at, static_cast<std::size_t>(t.count) * unit_bytes)) return false;
  }
  return true;
}

// Collective over a split's intercommunicator (and the new world, world_new, on the new side):
// whether every new process has read its data (old side: mine is ignored). Until it returns,
// the old buffers stay in place.
bool cma_all_read(bool mine, bool old_side, MPI_Comm inter, MPI_Comm world_new) {
  int ok = mine ? 1 : 0, all = 0;
  if (!old_side)
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, world_new), "MPI_Allreduce");
  // On an intercommunicator each group receives the reduction of the other group's values.
  // The old processes only wait here while the new ones copy: they poll gently, leaving the
  // cores to the readers (on a full host a busy-polling waiter halves a reader's speed).
  if (old_side) ok = 1;
  MPI_Request req;
  mpi_check(MPI_Iallreduce(&ok, &all, 1, MPI_INT, MPI_MIN, inter, &req), "MPI_Iallreduce");
  int done = 0;
  const timespec pause{0, old_side ? 200000 : 0};
  while (!done) {
    mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done && old_side) nanosleep(&pause, nullptr);
  }
  return old_side ? all == 1 : ok == 1;
}

}  // namespace pcm::detail
