// mpi_util.h — libpcm's small MPI helpers: owning handles, error checks, agreed error codes,
// header broadcasts, type mapping and the library's logger.
#pragma once

#include <mpi.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "error.h"
#include "pcm_types.h"

namespace pcm::lib {

namespace mpi {

// Whether MPI_Finalize has run: handles are not freed after it (a static's destructor may run
// then).
bool finalized() noexcept;

// MPI_Get_library_version's text ("" if it fails).
std::string library_version();
// Whether the MPI library is MPICH, or Open MPI (by library_version; asked once each).
bool is_mpich();
bool is_open_mpi();

// A move-only owner of one MPI handle, freed when it goes unless it is null or MPI has ended.
// Never give it a predefined handle (MPI_COMM_WORLD, MPI_INT, ...).
template <typename Traits>
class Handle {
 public:
  using type = typename Traits::type;

  Handle() noexcept = default;
  explicit Handle(type h) noexcept : h_(h) {}
  Handle(Handle&& o) noexcept : h_(o.release()) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  type get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != Traits::null(); }
  // For the MPI call that creates the handle: frees the old one first.
  type* out() noexcept {
    reset();
    return &h_;
  }
  type release() noexcept { return std::exchange(h_, Traits::null()); }
  void reset(type h = Traits::null()) noexcept {
    type old = std::exchange(h_, h);
    if (old != Traits::null() && !finalized()) Traits::free(&old);
  }

 private:
  type h_ = Traits::null();
};

struct CommTraits {
  using type = MPI_Comm;
  static MPI_Comm null() noexcept { return MPI_COMM_NULL; }
  static void free(MPI_Comm* c) noexcept { MPI_Comm_free(c); }
};
struct DatatypeTraits {
  using type = MPI_Datatype;
  static MPI_Datatype null() noexcept { return MPI_DATATYPE_NULL; }
  static void free(MPI_Datatype* t) noexcept { MPI_Type_free(t); }
};
struct InfoTraits {
  using type = MPI_Info;
  static MPI_Info null() noexcept { return MPI_INFO_NULL; }
  static void free(MPI_Info* i) noexcept { MPI_Info_free(i); }
};

using Comm = Handle<CommTraits>;
using Datatype = Handle<DatatypeTraits>;
using Info = Handle<InfoTraits>;

// Commits a datatype just created and takes ownership of it.
inline Datatype committed(MPI_Datatype t) noexcept {
  MPI_Type_commit(&t);
  return Datatype(t);
}

}  // namespace mpi

// The "pcm" logger (stderr, level from PCM_LOG_LEVEL).
std::shared_ptr<spdlog::logger> plog();

// Milliseconds of a coarse monotonic clock (a few nanoseconds per read).
std::int64_t now_ms();

// Throws pcm::Error(PCM_ERR_MPI) naming `what` unless rc is MPI_SUCCESS.
void mpi_check(int rc, const char* what);
// MPI_Error_string's text of rc.
std::string mpi_error_string(int rc);

// Collective over comm: every rank throws the same pcm::Error (the most negative local code,
// with the message of the lowest rank that had it), or returns if every code is PCM_SUCCESS.
void agree(MPI_Comm comm, int local_code, const std::string& local_msg);

// What one rank's part of a collective step came to: PCM_SUCCESS, or the code and message of the
// exception it threw.
struct Outcome {
  int code = PCM_SUCCESS;
  std::string msg;
  bool ok() const { return code == PCM_SUCCESS; }
};

// Runs f and returns what it came to (an exception that is not a pcm::Error is
// PCM_ERR_INTERNAL, as at the C boundary).
template <typename F>
Outcome attempt(F&& f) {
  try {
    f();
    return {};
  } catch (const Error& e) {
    return {e.code(), e.what()};
  } catch (const std::exception& e) {
    return {PCM_ERR_INTERNAL, std::string("internal error: ") + e.what()};
  }
}

// Collective over comm: runs f on this rank, then every rank throws the same pcm::Error if f threw
// on any rank (agree), or returns. What one rank alone fails on never leaves the others waiting
// in a collective, and every rank returns the same code from the entry point.
template <typename F>
void agreed(MPI_Comm comm, F&& f) {
  const Outcome o = attempt(std::forward<F>(f));
  agree(comm, o.code, o.msg);
}

// Decodes a header that another process of the job encoded with proto::encode (no size limit).
nlohmann::json decode_internal(const std::string& bytes);

// Broadcasts a header from root over comm.
nlohmann::json bcast_json(const nlohmann::json& value, int root, MPI_Comm comm);

// How a reconfiguration waits for one of its nonblocking operations: returns once the request is
// complete, or throws (a split's guard gives the split up: split_guard.h).
using Waiter = std::function<void(MPI_Request*)>;
// Waits for req through wait, or with MPI_Wait where wait is null.
void wait_for(MPI_Request* req, const Waiter* wait);
// The Waiter that only waits (MPI_Wait): for a nonblocking operation that nothing guards.
const Waiter& plain_waiter();

// Broadcasts a header from the sending group's rank 0 to every process of the receiving group of
// an intercommunicator. Returns what was received (the receivers) or value (the senders). With
// wait, nonblocking broadcasts waited for by it (every process must give one: a nonblocking
// collective never matches a blocking one); without, blocking ones.
nlohmann::json bcast_inter(const nlohmann::json& value, bool sender, int my_rank, MPI_Comm inter,
                           const Waiter* wait = nullptr);

// The MPI type of a PCM_Datatype.
MPI_Datatype mpi_type(int type);

// Collective over comm: every process's host name, at comm's rank 0 (empty elsewhere).
std::vector<std::string> gather_hosts(MPI_Comm comm);
// This process's host as pcmd knows it: MPI_Get_processor_name, "unknown" if that is no host name.
std::string processor_name();

}  // namespace pcm::lib
