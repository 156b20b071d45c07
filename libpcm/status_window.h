// status_window.h — PCM_Status's agreement windows: the ranks agree on pending commands (one
// broadcast) once per window of calls, and the calls in between only count down.
#pragma once

namespace pcm::lib {

// The number of PCM_Status calls until the next agreement, from the window that ends now:
// `calls` calls in `elapsed_s` seconds. A window lasts about target_us (0: agree at every call),
// at most cap calls; a slow or irregular loop gets 1.
long long window_calls(double elapsed_s, long long calls, double target_us, long long cap);

// Every process of the world holds the same countdown; it is 0 whenever the world changes.
// Rank 0 sizes each window from the measured time per call and broadcasts the size with the
// agreement.
class StatusWindow {
 public:
  static constexpr long long kMaxCalls = 256;

  explicit StatusWindow(double target_us = 1000) : target_us_(target_us) {}

  // Inside an agreed window: count one call down and say so (the common case, kept inline).
  bool inside() {
    if (countdown_ <= 0) return false;
    --countdown_;
    return true;
  }
  // Whether the next call is inside the window (inside() would say so).
  bool has_room() const { return countdown_ > 0; }
  // Rank 0, at an agreement: the size of the next window (reads MPI_Wtime).
  long long next_calls();
  // Every rank, after an agreement with nothing pending: the window of `calls` begins.
  void begin(long long calls) {
    calls_ = calls;
    countdown_ = calls - 1;
  }

 private:
  double target_us_;
  long long countdown_ = 0;
  long long calls_ = 1;  // size of the window that ended at the last agreement
  double start_ = 0;     // rank 0: MPI_Wtime() of the last agreement
};

}  // namespace pcm::lib
