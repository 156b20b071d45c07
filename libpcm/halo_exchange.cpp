// halo_exchange.cpp — the C entry points of the halo exchange (PCM_Halo_*) and of
// PCM_Dist_gather: MPI derived datatypes over the application's buffers, built from the plans in
// common/halo.h.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "c_boundary.h"
#include "distribution.h"
#include "error.h"
#include "halo.h"
#include "mpi_util.h"
#include "pcm.h"
#include "protocol.h"
#include "runtime.h"

namespace pcm::lib {
namespace {

// MPI calls are only allowed between MPI_Init and MPI_Finalize; these entry points do not need
// MPI_PCM_Init, so they check for themselves.
void require_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) fail(PCM_ERR_STATE, "MPI is not initialised (or finalized)");
}

// An owned MPI datatype, freed with its owner so that no error path leaks one. After
// MPI_Finalize freeing is not allowed any more (and the process is ending): it is skipped.
class MpiType {
 public:
  MpiType() = default;
  explicit MpiType(MPI_Datatype t) : t_(t) {}
  MpiType(MpiType&& o) noexcept : t_(std::exchange(o.t_, MPI_DATATYPE_NULL)) {}
  MpiType& operator=(MpiType&& o) noexcept {
    if (this != &o) {
      reset();
      t_ = std::exchange(o.t_, MPI_DATATYPE_NULL);
    }
    return *this;
  }
  MpiType(const MpiType&) = delete;
  MpiType& operator=(const MpiType&) = delete;
  ~MpiType() { reset(); }

  MPI_Datatype get() const { return t_; }
  void commit() { mpi_check(MPI_Type_commit(&t_), "MPI_Type_commit"); }

 private:
  void reset() noexcept {
    if (t_ == MPI_DATATYPE_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Type_free(&t_);
    t_ = MPI_DATATYPE_NULL;
  }
  MPI_Datatype t_ = MPI_DATATYPE_NULL;
};

// The datatype that make(&t) creates, owned; the handle is only taken when the call succeeded.
template <typename Make>
MpiType make_type(const char* what, Make&& make) {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  mpi_check(make(&t), what);
  return MpiType(t);
}

// n consecutive elements of base. MPI counts are ints: a longer n is built from chunks of 2^30
// elements and a remainder.
MpiType contiguous(std::int64_t n, MPI_Datatype base) {
  if (n <= INT_MAX) {
    return make_type("MPI_Type_contiguous", [&](MPI_Datatype* t) {
      return MPI_Type_contiguous(static_cast<int>(n), base, t);
    });
  }
  constexpr std::int64_t kChunk = std::int64_t{1} << 30;
  const std::int64_t chunks = n / kChunk, rest = n % kChunk;
  if (chunks > INT_MAX) fail(PCM_ERR_ARG, "{} elements are too many for one MPI datatype", n);
  MpiType chunk = contiguous(kChunk, base);
  MpiType body = make_type("MPI_Type_contiguous", [&](MPI_Datatype* t) {
    return MPI_Type_contiguous(static_cast<int>(chunks), chunk.get(), t);
  });
  if (rest == 0) return body;
  MpiType tail = contiguous(rest, base);
  MPI_Aint lb = 0, extent = 0;
  mpi_check(MPI_Type_get_extent(base, &lb, &extent), "MPI_Type_get_extent");
  int lens[2] = {1, 1};
  MPI_Aint disps[2] = {0, static_cast<MPI_Aint>(chunks * kChunk) * extent};
  MPI_Datatype types[2] = {body.get(), tail.get()};
  return make_type("MPI_Type_create_struct", [&](MPI_Datatype* t) {
    return MPI_Type_create_struct(2, lens, disps, types, t);
  });
}

// Runs of whole units at byte displacements in one buffer, becoming one datatype. A run longer
// than INT_MAX units becomes several blocks.
class Blocks {
 public:
  explicit Blocks(MPI_Aint unit_bytes) : unit_bytes_(unit_bytes) {}

  void add(std::int64_t units, std::int64_t unit_offset) {
    MPI_Aint at = static_cast<MPI_Aint>(unit_offset) * unit_bytes_;
    while (units > 0) {
      const int n = static_cast<int>(std::min<std::int64_t>(units, INT_MAX));
      lens_.push_back(n);
      disps_.push_back(at);
      at += static_cast<MPI_Aint>(n) * unit_bytes_;
      units -= n;
    }
  }
  bool empty() const { return lens_.empty(); }

  // A committed hindexed datatype of `unit`s over the buffer.
  MpiType type(MPI_Datatype unit) const {
    if (lens_.size() > static_cast<std::size_t>(INT_MAX))
      fail(PCM_ERR_ARG, "{} runs are too many for one MPI datatype", lens_.size());
    MpiType t = make_type("MPI_Type_create_hindexed", [&](MPI_Datatype* out) {
      return MPI_Type_create_hindexed(static_cast<int>(lens_.size()), lens_.data(), disps_.data(),
                                      unit, out);
    });
    t.commit();
    return t;
  }

 private:
  MPI_Aint unit_bytes_;
  std::vector<int> lens_;
  std::vector<MPI_Aint> disps_;
};

// The size in bytes of a PCM_Datatype; throws PCM_ERR_ARG for an unknown one.
std::size_t element_size(PCM_Datatype type) {
  std::size_t elem = proto::type_size(static_cast<int>(type));
  if (elem == 0) fail(PCM_ERR_ARG, "unknown element type {}", static_cast<int>(type));
  return elem;
}

const Distribution& map_of(PCM_Dist dist) {
  if (!dist) fail(PCM_ERR_ARG, "dist is NULL");
  return dist->d;
}

// One peer's messages of an exchange: a datatype over the whole buffer.
struct PeerType {
  int peer;
  MpiType type;
};

}  // namespace
}  // namespace pcm::lib

struct PCM_Halo_s {
  int rank = 0, size = 0;
  std::size_t elem = 0, unit_bytes = 0;    // bytes of an element, of a unit
  std::vector<pcm::lib::HaloRun> entries;  // the plan's receives, for PCM_Halo_entry
  std::vector<pcm::lib::HaloRun> local;    // receives from this rank itself (memcpy)
  std::vector<pcm::lib::PeerType> recvs, sends;
  std::vector<MPI_Request> requests;  // kept to spare an allocation per exchange
};

namespace pcm::lib {
namespace {

std::unique_ptr<PCM_Halo_s> make_halo(const Distribution& d, int rank, std::int64_t width,
                                      PCM_Datatype type) {
  const std::size_t elem = element_size(type);
  require_mpi();
  HaloPlan plan = halo_plan(d, rank, width);
  auto h = std::make_unique<PCM_Halo_s>();
  h->rank = rank;
  h->size = d.size();
  h->elem = elem;
  h->unit_bytes = elem * static_cast<std::size_t>(d.unit_len());
  const MPI_Aint unit_bytes = static_cast<MPI_Aint>(h->unit_bytes);
  const std::int64_t len = d.unit_len();
  // Offsets in the plan are in elements and always whole units.
  std::map<int, Blocks> recv_blocks, send_blocks;
  for (const HaloRun& r : plan.recv) {
    if (r.peer == rank) {
      h->local.push_back(r);
    } else {
      recv_blocks.try_emplace(r.peer, unit_bytes).first->second.add(r.units, r.ghost_offset / len);
    }
  }
  for (const HaloRun& r : plan.send)
    send_blocks.try_emplace(r.peer, unit_bytes).first->second.add(r.units, r.source_offset / len);
  MpiType unit = contiguous(len, mpi_type(type));
  for (const auto& [peer, blocks] : recv_blocks)
    h->recvs.push_back({peer, blocks.type(unit.get())});
  for (const auto& [peer, blocks] : send_blocks)
    h->sends.push_back({peer, blocks.type(unit.get())});
  h->entries = std::move(plan.recv);
  h->requests.reserve(h->recvs.size() + h->sends.size());
  return h;
}

// After a failure to post, the messages already posted must not touch buf once the call has
// returned: receives are cancelled and completed (a matched one completes when its data has
// arrived); sends are released, which MPI completes on its own.
void abandon(std::vector<MPI_Request>& requests, std::size_t receives) {
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (i < receives) {
      MPI_Cancel(&requests[i]);
      MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
    } else {
      MPI_Request_free(&requests[i]);
    }
  }
  requests.clear();
}

void exchange(PCM_Halo_s& h, void* buf, MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) fail(PCM_ERR_ARG, "comm is MPI_COMM_NULL");
  require_mpi();
  int size = 0, me = -1;
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  mpi_check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  if (size != h.size || me != h.rank)
    fail(PCM_ERR_ARG, "comm's rank {} of {} is not the plan's rank {} of {}", me, size, h.rank,
         h.size);
  if (!buf && (!h.entries.empty() || !h.sends.empty())) fail(PCM_ERR_ARG, "buf is NULL");
  char* base = static_cast<char*>(buf);
  auto& req = h.requests;
  req.clear();
  for (const PeerType& p : h.recvs) {
    req.emplace_back(MPI_REQUEST_NULL);
    int rc = MPI_Irecv(base, 1, p.type.get(), p.peer, PCM_HALO_TAG, comm, &req.back());
    if (rc != MPI_SUCCESS) {
      req.pop_back();
      abandon(req, req.size());
      mpi_check(rc, fmt::format("MPI_Irecv from rank {}", p.peer).c_str());
    }
  }
  for (const PeerType& p : h.sends) {
    req.emplace_back(MPI_REQUEST_NULL);
    int rc = MPI_Isend(base, 1, p.type.get(), p.peer, PCM_HALO_TAG, comm, &req.back());
    if (rc != MPI_SUCCESS) {
      req.pop_back();
      abandon(req, h.recvs.size());
      mpi_check(rc, fmt::format("MPI_Isend to rank {}", p.peer).c_str());
    }
  }
  // Ghosts and owned units never overlap, and MPI only reads owned units and writes other ghosts
  // than these: the copies can run while the messages move.
  for (const HaloRun& r : h.local) {
    std::memcpy(base + static_cast<std::size_t>(r.ghost_offset) * h.elem,
                base + static_cast<std::size_t>(r.source_offset) * h.elem,
                static_cast<std::size_t>(r.units) * h.unit_bytes);
  }
  const std::size_t n = req.size();
  int rc = MPI_Waitall(static_cast<int>(n), req.data(), MPI_STATUSES_IGNORE);
  req.clear();
  mpi_check(rc, fmt::format("MPI_Waitall of the halo exchange's {} messages", n).c_str());
}

}  // namespace
}  // namespace pcm::lib

namespace pcm::lib {
namespace {

void gather(PCM_Dist dist, const void* buf, PCM_Datatype type, int root, MPI_Comm comm,
            void* global) {
  if (comm == MPI_COMM_NULL) fail(PCM_ERR_ARG, "comm is MPI_COMM_NULL");
  require_mpi();
  int inter = 0, me = -1, size = 0;
  mpi_check(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  if (inter) fail(PCM_ERR_ARG, "comm is an intercommunicator");
  mpi_check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");

  // Whatever can fail on one rank alone (arguments, datatypes) fails before the ranks agree, so
  // that once they have agreed the data's collective is the only one left.
  const Distribution* d = nullptr;
  MpiType send_type;
  std::vector<MpiType> recv_types;  // the root's, per rank: where its units go in global
  const Outcome local = attempt([&] {
    d = &map_of(dist);
    const std::size_t elem = element_size(type);
    if (root < 0 || root >= size) fail(PCM_ERR_ARG, "root {} is not in [0, {})", root, size);
    if (d->size() != size)
      fail(PCM_ERR_ARG, "comm has {} ranks but the map has {}", size, d->size());
    if (me == root && !global) fail(PCM_ERR_ARG, "global is NULL on the root");
    if (!buf && d->local_units(me) > 0)
      fail(PCM_ERR_ARG, "buf is NULL but rank {} owns {} units", me, d->local_units(me));
    const std::int64_t len = d->unit_len(), halo = d->halo();
    const MPI_Aint unit_bytes = static_cast<MPI_Aint>(elem) * static_cast<MPI_Aint>(len);
    MpiType unit = contiguous(len, mpi_type(type));
    Blocks mine(unit_bytes);
    std::int64_t at = halo;  // units from the buffer's start to the segment's first unit
    for (const Segment& s : d->segments(me)) {
      mine.add(s.count, at);
      at += s.count + 2 * halo;
    }
    if (!mine.empty()) send_type = mine.type(unit.get());
    if (me == root) {
      recv_types.resize(static_cast<std::size_t>(size));
      for (int r = 0; r < size; ++r) {
        Blocks theirs(unit_bytes);
        for (const Segment& s : d->segments(r)) theirs.add(s.count, s.first);
        if (!theirs.empty()) recv_types[r] = theirs.type(unit.get());
      }
    }
  });
  int code = local.code;
  std::string why = local.msg;

  // One reduction agrees on success and checks that the ranks gave the same root, type and
  // number of units (the minimum of a value and of its negation give its least and greatest);
  // a rank that failed contributes neutral values.
  long long v[7] = {code, LLONG_MAX, LLONG_MAX, LLONG_MAX, LLONG_MAX, LLONG_MAX, LLONG_MAX};
  if (code == PCM_SUCCESS) {
    const long long t = static_cast<long long>(type), units = d->units();
    long long mine[6] = {root, -root, t, -t, units, -units};
    std::copy(mine, mine + 6, v + 1);
  }
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, 7, MPI_LONG_LONG, MPI_MIN, comm), "MPI_Allreduce");
  if (v[0] == PCM_SUCCESS && (v[1] != -v[2] || v[3] != -v[4] || v[5] != -v[6])) {
    code = PCM_ERR_ARG;
    why = "the ranks passed different roots, types or maps";
  }
  if (v[0] != PCM_SUCCESS || code != PCM_SUCCESS) agree(comm, code, why);  // throws

  // Each rank's segments go straight from its buffer to their places in global: no packing.
  std::vector<int> send_counts(size, 0), recv_counts(size, 0), zero(size, 0);
  std::vector<MPI_Datatype> send_types(size, MPI_BYTE), recv_types_raw(size, MPI_BYTE);
  if (send_type.get() != MPI_DATATYPE_NULL) {
    send_counts[root] = 1;
    send_types[root] = send_type.get();
  }
  for (std::size_t r = 0; r < recv_types.size(); ++r) {
    if (recv_types[r].get() == MPI_DATATYPE_NULL) continue;
    recv_counts[r] = 1;
    recv_types_raw[r] = recv_types[r].get();
  }
  static char dummy;  // MPI wants valid pointers even where nothing moves
  int rc = MPI_Alltoallw(buf ? buf : &dummy, send_counts.data(), zero.data(), send_types.data(),
                         global && me == root ? global : &dummy, recv_counts.data(), zero.data(),
                         recv_types_raw.data(), comm);
  agreed(comm, [&] { mpi_check(rc, "MPI_Alltoallw"); });
}

}  // namespace
}  // namespace pcm::lib

using pcm::fail;
using pcm::lib::guard;

extern "C" {

PCM_EXPORT int PCM_Halo_create(PCM_Dist dist, int rank, long width, PCM_Datatype type,
                               PCM_Halo* halo) {
  return guard("PCM_Halo_create", [&] {
    if (!halo) fail(PCM_ERR_ARG, "halo is NULL");
    *halo = pcm::lib::make_halo(pcm::lib::map_of(dist), rank, width, type).release();
    return PCM_SUCCESS;
  });
}

PCM_EXPORT int PCM_Halo_exchange(PCM_Halo halo, void* buf, MPI_Comm comm) {
  return guard("PCM_Halo_exchange", [&] {
    if (!halo) fail(PCM_ERR_ARG, "halo is NULL");
    const pcm::lib::Unquiet app;  // the application's communication, made for it: profiled
    pcm::lib::exchange(*halo, buf, comm);
    return PCM_SUCCESS;
  });
}

PCM_EXPORT int PCM_Halo_entries(PCM_Halo halo, long* count) {
  return guard("PCM_Halo_entries", [&] {
    if (!halo) fail(PCM_ERR_ARG, "halo is NULL");
    if (!count) fail(PCM_ERR_ARG, "count is NULL");
    *count = static_cast<long>(halo->entries.size());
    return PCM_SUCCESS;
  });
}

PCM_EXPORT int PCM_Halo_entry(PCM_Halo halo, long index, int* peer, long* ghost_offset,
                              long* source_offset, long* units) {
  return guard("PCM_Halo_entry", [&] {
    if (!halo) fail(PCM_ERR_ARG, "halo is NULL");
    if (index < 0 || static_cast<std::size_t>(index) >= halo->entries.size())
      fail(PCM_ERR_ARG, "entry {} is not in [0, {})", index, halo->entries.size());
    const pcm::lib::HaloRun& r = halo->entries[static_cast<std::size_t>(index)];
    if (peer) *peer = r.peer;
    if (ghost_offset) *ghost_offset = static_cast<long>(r.ghost_offset);
    if (source_offset) *source_offset = static_cast<long>(r.source_offset);
    if (units) *units = static_cast<long>(r.units);
    return PCM_SUCCESS;
  });
}

PCM_EXPORT int PCM_Halo_free(PCM_Halo* halo) {
  return guard("PCM_Halo_free", [&] {
    if (halo) {
      delete *halo;
      *halo = nullptr;
    }
    return PCM_SUCCESS;
  });
}

PCM_EXPORT int PCM_Dist_gather(PCM_Dist dist, const void* buf, PCM_Datatype type, int root,
                               MPI_Comm comm, void* global) {
  return guard("PCM_Dist_gather", [&] {
    const pcm::lib::Unquiet app;
    pcm::lib::gather(dist, buf, type, root, comm, global);
    return PCM_SUCCESS;
  });
}

}  // extern "C"
