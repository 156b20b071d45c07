// mpi_util.cpp — libpcm's small MPI helpers (see mpi_util.h).
#include "mpi_util.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "error.h"
#include "leftovers.h"
#include "log.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::lib {

using proto::json;

bool mpi::finalized() noexcept {
  int fin = 0;
  MPI_Finalized(&fin);
  return fin != 0;
}

std::string mpi::library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(version, &len) != MPI_SUCCESS) return "";
  return std::string(
      version, static_cast<std::size_t>(std::clamp(len, 0, MPI_MAX_LIBRARY_VERSION_STRING - 1)));
}

bool mpi::is_mpich() {
  static const bool yes = library_version().find("MPICH") != std::string::npos;
  return yes;
}

bool mpi::is_open_mpi() {
  static const bool yes = library_version().find("Open MPI") != std::string::npos;
  return yes;
}

json decode_internal(const std::string& bytes) {
  // The job's own processes sent it: no size limit (replicated values may be large), but it must
  // still be well-formed.
  json j = json::from_msgpack(bytes, /*strict=*/true, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    fail(PCM_ERR_INTERNAL, "a header between the job's processes is not a MessagePack map");
  return j;
}

std::shared_ptr<spdlog::logger> plog() {
  static auto l = logger("pcm", spdlog::level::warn);
  return l;
}

std::int64_t now_ms() {
  // The coarse clock costs a few nanoseconds; PCM_Status reads it every iteration on rank 0.
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string mpi_error_string(int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(msg, static_cast<std::size_t>(len));
}

void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) fail(PCM_ERR_MPI, "{} failed: {}", what, mpi_error_string(rc));
}

void agree(MPI_Comm comm, int local_code, const std::string& local_msg) {
  int me = 0, size = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  // One reduction of two pairs: the lowest code and the lowest rank that has it, and a mark every
  // rank sends alike (so it comes back with rank 0), which no other call's data carries.
  constexpr int kMark = 0x50434d41;  // "PCMA"
  int mine[4] = {local_code, me, kMark, me}, low[4] = {local_code, me, kMark, me};
  mpi_check(MPI_Allreduce(mine, low, 2, MPI_2INT, MPI_MINLOC, comm), "MPI_Allreduce");
  const int code = low[0], who = low[1];
  // What MINLOC returns is never above this rank's pair, names a rank of comm and carries the
  // mark. Anything else is not what the ranks sent: the MPI matched another call's data with this
  // one. Said as such, never used as a root (issue 38 item 5: a root of -540086711 once came out
  // of here; testbed/foreign_peer.sh shows how MPICH's TCP can deliver another job's data).
  if (low[2] != kMark || low[3] != 0 || code > local_code || (code == local_code && who > me) ||
      who < 0 || who >= size)
    fail(PCM_ERR_MPI,
         "the ranks' agreement returned code {} of rank {} (this is rank {} of {}, with code {}): "
         "no rank sent that; the ranks are not in the same collective call, or a process of "
         "another job reached this one (docs/ops/recovery.md, a job started onto a revived host)",
         code, who, me, size, local_code);
  if (code == PCM_SUCCESS) return;
  char msg[1024] = {0};
  if (me == who) std::snprintf(msg, sizeof msg, "%s", local_msg.c_str());
  mpi_check(MPI_Bcast(msg, sizeof msg, MPI_CHAR, who, comm), "MPI_Bcast");
  throw Error(code, me == who ? local_msg : fmt::format("on rank {}: {}", who, msg));
}

json bcast_json(const json& value, int root, MPI_Comm comm) {
  int me;
  MPI_Comm_rank(comm, &me);
  std::string bytes = me == root ? proto::encode(value) : std::string();
  long long n = static_cast<long long>(bytes.size());
  mpi_check(MPI_Bcast(&n, 1, MPI_LONG_LONG, root, comm), "MPI_Bcast");
  bytes.resize(static_cast<std::size_t>(n));
  mpi_check(MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_CHAR, root, comm), "MPI_Bcast");
  return decode_internal(bytes);
}

void wait_for(MPI_Request* req, const Waiter* wait) {
  if (wait)
    (*wait)(req);
  else
    mpi_check(MPI_Wait(req, MPI_STATUS_IGNORE), "MPI_Wait");
}

const Waiter& plain_waiter() {
  static const Waiter w = [](MPI_Request* r) { wait_for(r, nullptr); };
  return w;
}

json bcast_inter(const json& value, bool sender, int my_rank, MPI_Comm inter, const Waiter* wait) {
  int root = sender ? (my_rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  // On the heap: a broadcast a split's guard gives up on stays running with it (leftovers.h).
  struct Header {
    long long n = 0;
    std::string bytes;
  };
  const auto h = std::make_shared<Header>();
  if (sender && my_rank == 0) h->bytes = proto::encode(value);
  h->n = static_cast<long long>(h->bytes.size());
  auto bcast = [&](void* buf, int count, MPI_Datatype type) {
    if (!wait) {
      mpi_check(MPI_Bcast(buf, count, type, root, inter), "MPI_Bcast");
      return;
    }
    MPI_Request req;
    mpi_check(MPI_Ibcast(buf, count, type, root, inter, &req), "MPI_Ibcast");
    requests::wait_counted(&req, wait, h);
  };
  bcast(&h->n, 1, MPI_LONG_LONG);
  if (!sender) h->bytes.resize(static_cast<std::size_t>(h->n));
  // The senders other than the root (MPI_PROC_NULL) never knew the size; they pass 1, not 0 (their
  // buffer is never touched; the root's msgpack is never empty): Open MPI's MPI_Ibcast returns at
  // once for a count of 0 (ompi/mpi/c/ibcast.c, 4.1) without taking the communicator's next
  // collective tag, and their later nonblocking collectives on this intercommunicator then
  // matched the wrong ones (the split hung in cma_all_read's reduction, every process in MPI_Test).
  bcast(h->bytes.data(), sender && my_rank != 0 ? 1 : static_cast<int>(h->n), MPI_CHAR);
  return sender ? value : decode_internal(h->bytes);
}

MPI_Datatype mpi_type(int type) {
  switch (type) {
    case PCM_CHAR:
      return MPI_CHAR;
    case PCM_INT:
      return MPI_INT;
    case PCM_LONG:
      return MPI_LONG;
    case PCM_FLOAT:
      return MPI_FLOAT;
    case PCM_DOUBLE:
      return MPI_DOUBLE;
    case PCM_LONG_LONG:
      return MPI_LONG_LONG;
    default:
      return MPI_UNSIGNED_CHAR;
  }
}

constexpr int kHostLen = 256;  // gather_hosts: one name

std::string processor_name() {
  char proc[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(proc, &len);
  return proto::valid_host(proc) ? std::string(proc) : std::string("unknown");
}

std::vector<std::string> gather_hosts(MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  char name[kHostLen] = {0};
  std::snprintf(name, sizeof name, "%s", processor_name().c_str());
  std::vector<char> all(rank == 0 ? static_cast<std::size_t>(size) * kHostLen : 0);
  mpi_check(MPI_Gather(name, kHostLen, MPI_CHAR, all.data(), kHostLen, MPI_CHAR, 0, comm),
            "MPI_Gather");
  std::vector<std::string> hosts;
  for (int r = 0; rank == 0 && r < size; ++r) hosts.emplace_back(&all[r * kHostLen]);
  return hosts;
}

}  // namespace pcm::lib
