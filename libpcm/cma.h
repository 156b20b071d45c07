// cma.h — a split's data by cross-memory attach: the new processes read the old buffers with
// process_vm_readv where they share a host, and every rank falls back to MPI together otherwise.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "distribution.h"
#include "protocol.h"

namespace pcm::detail {

// Collective over the old world: what its rank 0 puts in the split's header so that the new
// processes can read every old buffer (null unless enabled on rank 0). token must stay at its
// address until the new processes have read.
proto::json cma_sources(MPI_Comm world, int rank, int size, const void* buf,
                        const std::uint64_t* token, bool enabled);

// Reads into newbuf the units that plan sends to new rank me, from the old buffers that sources
// describes. False (and the caller falls back) if any source is elsewhere or any read fails.
bool cma_read(const proto::json& sources, const std::vector<Transfer>& plan, int me,
              const Distribution& from, const Distribution& to, char* newbuf, std::size_t elem);

// Collective over a split's intercommunicator (and the new world, world_new, on the new side):
// whether every new process has read its data (old side: mine is ignored). Until it returns,
// the old buffers stay in place.
bool cma_all_read(bool mine, bool old_side, MPI_Comm inter, MPI_Comm world_new);

}  // namespace pcm::detail
