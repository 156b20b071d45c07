// api.cpp — the C entry points: each is one call into a guard that catches every exception and
// records its message, so nothing ever unwinds into C.
#include <string>

#include "error.h"
#include "log.h"
#include "pcm.h"
#include "runtime.h"

namespace {

thread_local std::string t_last_error;

template <typename F>
int guard(const char* call, F&& f) noexcept {
  try {
    int rc = f();
    return rc;
  } catch (const pcm::Error& e) {
    t_last_error = std::string(call) + ": " + e.what();
    return e.code();
  } catch (const std::exception& e) {
    t_last_error = std::string(call) + ": internal error: " + e.what();
    return PCM_ERR_INTERNAL;
  } catch (...) {
    t_last_error = std::string(call) + ": internal error: unknown exception";
    return PCM_ERR_INTERNAL;
  }
}

pcm::detail::Runtime& rt() { return pcm::detail::Runtime::instance(); }

// PCM_Status and PCM_Process_Status return a state, not a code: failures become PCM_ERROR.
int state_or_error(int rc) { return rc < 0 ? PCM_ERROR : rc; }

}  // namespace

// libpcm is built with hidden visibility; only the C API is exported.
#define PCM_EXPORT __attribute__((visibility("default")))

extern "C" {

PCM_EXPORT int MPI_PCM_Init(int* argc, char*** argv) {
  return guard("MPI_PCM_Init", [&] { return rt().mpi_pcm_init(argc, argv); });
}
PCM_EXPORT int PCM_Init(MPI_Comm* comm) { return guard("PCM_Init", [&] { return rt().init(comm); }); }
PCM_EXPORT int PCM_Process_Status(void) { return rt().process_status(); }
PCM_EXPORT int PCM_Comm_rank(MPI_Comm comm, int* rank) {
  return guard("PCM_Comm_rank", [&] { return rt().comm_rank(comm, rank); });
}
PCM_EXPORT int PCM_Status(MPI_Comm comm) {
  return state_or_error(guard("PCM_Status", [&] { return rt().status(comm); }));
}
PCM_EXPORT int PCM_Store(int rank, const char* key, const void* buf, PCM_Datatype type, long count) {
  return guard("PCM_Store", [&] { return rt().store(rank, key, buf, type, count); });
}
PCM_EXPORT int PCM_Load(int rank, const char* key, void* buf, PCM_Datatype type, long count) {
  return guard("PCM_Load", [&] { return rt().load(rank, key, buf, type, count); });
}
PCM_EXPORT int PCM_Load_count(int rank, const char* key, PCM_Datatype* type, long* count) {
  return guard("PCM_Load_count", [&] {
    int t = 0;
    int rc = rt().load_count(rank, key, &t, count);
    if (type) *type = static_cast<PCM_Datatype>(t);
    return rc;
  });
}
PCM_EXPORT int PCM_Reconfigure(MPI_Comm* comm, const char* command) {
  return guard("PCM_Reconfigure", [&] { return rt().reconfigure(comm, command); });
}
PCM_EXPORT int PCM_Exit(void) { return guard("PCM_Exit", [&] { return rt().exit_retired(); }); }
PCM_EXPORT int PCM_Finalize(MPI_Comm comm) {
  return guard("PCM_Finalize", [&] { return rt().finalize(comm); });
}
PCM_EXPORT const char* PCM_Last_error(void) { return t_last_error.c_str(); }

}  // extern "C"
