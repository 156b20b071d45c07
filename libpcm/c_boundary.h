// c_boundary.h — what every C entry point of libpcm shares: the export macro, this thread's last
// error message, and the guard that turns exceptions into PCM_ERR_* codes.
#pragma once

#include <exception>
#include <string>

#include "error.h"
#include "pcm_types.h"
#include "profiler.h"

// libpcm is built with hidden visibility; only the C API is exported.
#define PCM_EXPORT __attribute__((visibility("default")))

namespace pcm::lib {

// An inline variable: one per thread for the whole library, whichever file's entry point failed,
// so PCM_Last_error reports the last failure of any call.
inline thread_local std::string t_last_error;
// The first failure of an MPI call inside a PCM call (PCM_ERR_MPI: the job's world is broken, a
// peer lost), "" if none: PCM_Finalize then tells pcmd the job ended on it rather than finished.
inline thread_local std::string t_mpi_failure;

// Runs f and returns its code; an exception becomes its code (PCM_ERR_INTERNAL if it is not a
// pcm::Error) and its message is kept for PCM_Last_error. Nothing unwinds into C.
template <typename F>
int guard(const char* call, F&& f) noexcept {
  const Quiet quiet;  // libpcm's own MPI calls are not the application's (profiler.h)
  try {
    int rc = f();
    return rc;
  } catch (const pcm::Error& e) {
    t_last_error = std::string(call) + ": " + e.what();
    if (e.code() == PCM_ERR_MPI && t_mpi_failure.empty()) t_mpi_failure = t_last_error;
    return e.code();
  } catch (const std::exception& e) {
    t_last_error = std::string(call) + ": internal error: " + e.what();
    return PCM_ERR_INTERNAL;
  } catch (...) {
    t_last_error = std::string(call) + ": internal error: unknown exception";
    return PCM_ERR_INTERNAL;
  }
}

}  // namespace pcm::lib
