// status_window.cpp — sizing PCM_Status's agreement windows (see status_window.h).
#include "status_window.h"

#include <mpi.h>

#include <algorithm>

namespace pcm::lib {

long long window_calls(double elapsed_s, long long calls, double target_us, long long cap) {
  const double per_call_us = elapsed_s * 1e6 / static_cast<double>(calls);
  if (target_us <= 0 || per_call_us >= target_us) return 1;
  const double n = target_us / std::max(per_call_us, 1e-3);
  return std::min(cap, std::max(1LL, static_cast<long long>(n)));
}

long long StatusWindow::next_calls() {
  const double now = MPI_Wtime();
  const long long n = window_calls(now - start_, calls_, target_us_, kMaxCalls);
  start_ = now;
  return n;
}

}  // namespace pcm::lib
