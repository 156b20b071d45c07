// cma.h — a split's data by cross-memory attach: the new processes read the old buffers with
// process_vm_readv where they share a host, and every rank falls back to MPI together otherwise.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "distribution.h"
#include "mpi_util.h"
#include "protocol.h"

namespace pcm::lib {

// Collective over the old world: what its rank 0 puts in the split's header so that the new
// processes can read every old buffer (null unless enabled on rank 0). token must stay at its
// address until the new processes have read.
proto::json cma_sources(MPI_Comm world, int rank, int size, const void* buf,
                        const std::uint64_t* token, bool enabled);

// Reads into newbuf the units that plan sends to new rank me, from the old buffers that sources
// describes. False (and the caller falls back) if any source is elsewhere or any read fails.
bool cma_read(const proto::json& sources, const std::vector<Transfer>& plan, int me,
              const Distribution& from, const Distribution& to, char* newbuf, std::size_t elem);

// A merge's transfers between processes of one host, shared by both ends: the receiver reads the
// first half of each transfer's units from the old buffer olds describes, the sender writes the
// second half into the new buffer news describes (both lists by old rank: cma_sources of the old
// buffers, then of the new ones). old_of_new: the old rank of each new rank. False (and every
// rank falls back together) if any peer is elsewhere or any move fails.
bool cma_merge(const proto::json& olds, const proto::json& news, const std::vector<Transfer>& plan,
               int me_old, int me_new, const std::vector<int>& old_of_new, const Distribution& from,
               const Distribution& to, const char* oldbuf, char* newbuf, std::size_t elem);

// Collective over a split's intercommunicator (and the new world, world_new, on the new side):
// whether every new process has read its data (old side: mine is ignored). Until it returns,
// the old buffers stay in place. With wait, its reductions are nonblocking and waited for by it
// (on every process); without, the old side polls gently (0.2 ms sleeps: the readers need the
// cores).
bool cma_all_read(bool mine, bool old_side, MPI_Comm inter, MPI_Comm world_new,
                  const Waiter* wait = nullptr);

}  // namespace pcm::lib
