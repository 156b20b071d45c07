// api.cpp — the C entry points: each is one call into a guard that catches every exception and
// records its message, so nothing ever unwinds into C.
#include <string>

#include "c_boundary.h"
#include "error.h"
#include "log.h"
#include "pcm.h"
#include "protocol.h"
#include "runtime.h"

using pcm::common::Distribution;
using pcm::lib::guard;
using pcm::lib::t_last_error;

namespace {

pcm::lib::Runtime& rt() { return pcm::lib::Runtime::instance(); }

// Registrations are fixed once PCM_Resume has run: processes spawned later register before
// their PCM_Resume, and must find the same set as the world they join.
void require_registrable() {
  const int s = rt().process_status();
  if (s == PCM_RETIRED) pcm::fail(PCM_ERR_STATE, "this process has retired");
  if (rt().resumed()) pcm::fail(PCM_ERR_STATE, "register before PCM_Resume, not after");
}

// PCM_Status and PCM_Process_Status return a state, not a code: failures become PCM_ERROR.
int state_or_error(int rc) { return rc < 0 ? PCM_ERROR : rc; }

}  // namespace

extern "C" {

PCM_EXPORT int MPI_PCM_Init(int* argc, char*** argv) {
  return guard("MPI_PCM_Init", [&] { return rt().mpi_pcm_init(argc, argv); });
}
PCM_EXPORT int PCM_Init(MPI_Comm* comm) {
  return guard("PCM_Init", [&] { return rt().init(comm); });
}
PCM_EXPORT int PCM_Process_Status(void) { return rt().process_status(); }
PCM_EXPORT int PCM_Comm_rank(MPI_Comm comm, int* rank) {
  return guard("PCM_Comm_rank", [&] { return rt().comm_rank(comm, rank); });
}
PCM_EXPORT int PCM_Status(MPI_Comm comm) {
  return state_or_error(guard("PCM_Status", [&] { return rt().status(comm); }));
}
PCM_EXPORT int PCM_Status_if_local(MPI_Comm comm) {
  return state_or_error(guard("PCM_Status_if_local", [&] {
    if (!rt().status_is_local(comm)) return PCM_NOT_LOCAL;
    return rt().status(comm);
  }));
}
PCM_EXPORT int PCM_Store(int rank, const char* key, const void* buf, PCM_Datatype type,
                         long count) {
  return guard("PCM_Store", [&] {
    rt().storage().store(rank, key, buf, type, count);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Load(int rank, const char* key, void* buf, PCM_Datatype type, long count) {
  return guard("PCM_Load", [&] {
    rt().storage().load(rank, key, buf, type, count);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Load_count(int rank, const char* key, PCM_Datatype* type, long* count) {
  return guard("PCM_Load_count", [&] {
    int t = 0;
    rt().storage().load_count(rank, key, &t, count);
    if (type) *type = static_cast<PCM_Datatype>(t);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Reconfigure(MPI_Comm* comm, const char* command) {
  return guard("PCM_Reconfigure", [&] { return rt().reconfigure(comm, command); });
}
PCM_EXPORT int PCM_Exit(void) {
  return guard("PCM_Exit", [&] { return rt().exit_retired(); });
}
PCM_EXPORT int PCM_Finalize(MPI_Comm comm) {
  return guard("PCM_Finalize", [&] { return rt().finalize(comm); });
}
PCM_EXPORT int PCM_Split(void** buf, PCM_Datatype type, PCM_Dist* dist, int* iteration, int* rank,
                         int* size, MPI_Comm* comm, const char* command) {
  return guard("PCM_Split",
               [&] { return rt().split(buf, type, dist, iteration, rank, size, comm, command); });
}
PCM_EXPORT int PCM_Split_Collective(void** buf, PCM_Datatype type, PCM_Dist* dist, int* iteration,
                                    int* rank, int* size, MPI_Comm* comm, const char* command) {
  return guard("PCM_Split_Collective",
               [&] { return rt().split(buf, type, dist, iteration, rank, size, comm, command); });
}
PCM_EXPORT int PCM_Merge(void** buf, PCM_Datatype type, PCM_Dist* dist, int* iteration, int* rank,
                         int* size, MPI_Comm* comm) {
  return guard("PCM_Merge",
               [&] { return rt().merge(buf, type, dist, iteration, rank, size, comm); });
}
PCM_EXPORT int PCM_Merge_Collective(void** buf, PCM_Datatype type, PCM_Dist* dist, int* iteration,
                                    int* rank, int* size, MPI_Comm* comm) {
  return guard("PCM_Merge_Collective",
               [&] { return rt().merge(buf, type, dist, iteration, rank, size, comm); });
}
PCM_EXPORT int PCM_Merge_datacnts(PCM_Dist dist, long* count, int* merge_rank, MPI_Comm comm) {
  return guard("PCM_Merge_datacnts", [&] {
    return rt().merge_datacnts(dist ? &dist->d : nullptr, count, merge_rank, comm);
  });
}
PCM_EXPORT int PCM_Commit(MPI_Comm comm, int iteration) {
  return guard("PCM_Commit", [&] { return rt().commit(comm, iteration); });
}
PCM_EXPORT int PCM_Restart_info(int* iteration, int* nprocs) {
  return guard("PCM_Restart_info", [&] {
    rt().restart().info(iteration, nprocs);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Load_redistribute(const char* key, PCM_Datatype type, PCM_Dist from, PCM_Dist to,
                                     int rank, void* buf) {
  return guard("PCM_Load_redistribute", [&] {
    if (!from || !to) pcm::fail(PCM_ERR_ARG, "from and to must not be NULL");
    rt().storage(false).load_redistribute(key, type, from->d, to->d, rank, buf);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Reconfig_last(int* kind, int* size_before, double* started) {
  return guard("PCM_Reconfig_last", [&] {
    rt().reconfig().last_info(kind, size_before, started);
    return PCM_SUCCESS;
  });
}

PCM_EXPORT int PCM_Reconfig_reason(char* reason, int len) {
  return guard("PCM_Reconfig_reason", [&] {
    rt().reconfig().reason(reason, len);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Reconfig_times(double* spawn, double* data, double* rebuild) {
  rt().reconfig().times(spawn, data, rebuild);
  return PCM_SUCCESS;
}

PCM_EXPORT int PCM_Dist_create(int layout, long units, long unit_len, long block, long halo,
                               int size, PCM_Dist* dist) {
  return guard("PCM_Dist_create", [&] {
    if (!dist) pcm::fail(PCM_ERR_ARG, "dist is NULL");
    if (layout < PCM_BLOCK || layout > PCM_BLOCK_CYCLIC)
      pcm::fail(PCM_ERR_ARG, "layout {} is not PCM_BLOCK, PCM_CYCLIC or PCM_BLOCK_CYCLIC", layout);
    *dist = new PCM_Dist_s{Distribution::regular(static_cast<pcm::common::Layout>(layout), units,
                                                 unit_len, block, halo, size)};
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Dist_free(PCM_Dist* dist) {
  return guard("PCM_Dist_free", [&] {
    if (dist) {
      delete *dist;
      *dist = nullptr;
    }
    return PCM_SUCCESS;
  });
}

namespace {
const Distribution& valid(PCM_Dist dist) {
  if (!dist) pcm::fail(PCM_ERR_ARG, "dist is NULL");
  return dist->d;
}
void check_rank(const Distribution& d, int rank) {
  if (rank < 0 || rank >= d.size())
    pcm::fail(PCM_ERR_ARG, "rank {} is not in [0, {})", rank, d.size());
}
}  // namespace

PCM_EXPORT int PCM_Dist_local(PCM_Dist dist, int rank, long* segments, long* units,
                              long* elements) {
  return guard("PCM_Dist_local", [&] {
    const Distribution& d = valid(dist);
    check_rank(d, rank);
    if (segments) *segments = static_cast<long>(d.segments(rank).size());
    if (units) *units = static_cast<long>(d.local_units(rank));
    if (elements) *elements = static_cast<long>(d.local_elements(rank));
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Dist_segment(PCM_Dist dist, int rank, long index, long* first, long* units,
                                long* offset) {
  return guard("PCM_Dist_segment", [&] {
    const Distribution& d = valid(dist);
    check_rank(d, rank);
    const auto& segs = d.segments(rank);
    if (index < 0 || static_cast<std::size_t>(index) >= segs.size())
      pcm::fail(PCM_ERR_ARG, "rank {} has {} segments, not {}", rank, segs.size(), index + 1);
    if (first) *first = static_cast<long>(segs[index].first);
    if (units) *units = static_cast<long>(segs[index].count);
    if (offset)
      *offset = static_cast<long>(d.segment_offset(rank, static_cast<std::size_t>(index)));
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Dist_owner(PCM_Dist dist, long unit, int* rank) {
  return guard("PCM_Dist_owner", [&] {
    const Distribution& d = valid(dist);
    if (!rank) pcm::fail(PCM_ERR_ARG, "rank is NULL");
    *rank = d.owner(unit);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Dist_info(PCM_Dist dist, int* size, int* layout, long* units, long* unit_len,
                             long* block, long* halo) {
  return guard("PCM_Dist_info", [&] {
    const Distribution& d = valid(dist);
    if (size) *size = d.size();
    if (layout) *layout = static_cast<int>(d.layout());
    if (units) *units = static_cast<long>(d.units());
    if (unit_len) *unit_len = static_cast<long>(d.unit_len());
    if (block) *block = static_cast<long>(d.block());
    if (halo) *halo = static_cast<long>(d.halo());
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Store_dist(int rank, const char* key, PCM_Dist dist) {
  return guard("PCM_Store_dist", [&] {
    std::string bytes = pcm::proto::encode(valid(dist).to_json());
    rt().storage().store(rank, key, bytes.data(), PCM_BYTE, static_cast<long>(bytes.size()));
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Load_dist(int rank, const char* key, PCM_Dist* dist) {
  return guard("PCM_Load_dist", [&] {
    if (!dist) pcm::fail(PCM_ERR_ARG, "dist is NULL");
    int type = 0;
    long count = 0;
    rt().storage().load_count(rank, key, &type, &count);
    if (type != PCM_BYTE)
      pcm::fail(PCM_ERR_TYPE, "rank {} key '{}' does not hold a map", rank, key);
    std::string bytes(static_cast<std::size_t>(count), '\0');
    rt().storage().load(rank, key, bytes.data(), PCM_BYTE, count);
    *dist = new PCM_Dist_s{Distribution::from_json(pcm::proto::decode(bytes.data(), bytes.size()))};
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Register_dist(const char* name, void** buf, PCM_Datatype type, PCM_Dist* dist) {
  return guard("PCM_Register_dist", [&] {
    require_registrable();
    rt().registry().add_dist(name, buf, type, dist);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Register_value(const char* name, void* value, PCM_Datatype type, long count) {
  return guard("PCM_Register_value", [&] {
    require_registrable();
    rt().registry().add_value(name, value, type, count, pcm::lib::ItemKind::kValue);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Register_local(const char* name, void* value, PCM_Datatype type, long count) {
  return guard("PCM_Register_local", [&] {
    require_registrable();
    rt().registry().add_value(name, value, type, count, pcm::lib::ItemKind::kLocal);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Unregister(const char* name) {
  return guard("PCM_Unregister", [&] {
    require_registrable();
    rt().registry().remove(name);
    return PCM_SUCCESS;
  });
}
PCM_EXPORT int PCM_Resume(MPI_Comm* comm) {
  return guard("PCM_Resume", [&] { return rt().resume(comm); });
}
PCM_EXPORT int PCM_Adapt(MPI_Comm* comm) {
  return guard("PCM_Adapt", [&] { return rt().adapt(comm); });
}
PCM_EXPORT int PCM_Adapt_if_local(MPI_Comm* comm) {
  return guard("PCM_Adapt_if_local", [&] {
    if (!comm || !rt().adapt_is_local(*comm)) return PCM_NOT_LOCAL;
    return rt().adapt(comm);
  });
}
PCM_EXPORT int PCM_Checkpoint(MPI_Comm comm, int iteration) {
  return guard("PCM_Checkpoint", [&] { return rt().checkpoint(comm, iteration); });
}
PCM_EXPORT int PCM_Checkpoint_wait(MPI_Comm comm) {
  return guard("PCM_Checkpoint_wait", [&] { return rt().checkpoint_wait(comm); });
}

PCM_EXPORT const char* PCM_Last_error(void) { return t_last_error.c_str(); }

}  // extern "C"
