// lifecycle.h — where this process is in its life and in the job: its phase, how it came to be,
// the job it is in (pcmd's name and incarnation) and its PCM_Status calls. Held by Runtime
// (runtime.h), which moves it on at PCM_Init and PCM_Finalize; a reconfiguration (reshaper.h)
// moves it on when this process joins a world, adopts a new one or retires.
#pragma once

#include <cstdint>
#include <string>

#include "pcm.h"

namespace pcm::lib {

struct Lifecycle {
  // Where the process is in its life. The calls allowed in each are checked by the calls.
  enum class Phase {
    kUninit,     // before MPI_PCM_Init
    kMpiReady,   // MPI_PCM_Init done (perhaps failed: Runtime's init error), PCM_Init not yet
    kActive,     // in a world (after PCM_Init, or joined as a spawned process)
    kRetired,    // left the world in a reconfiguration; only PCM_Exit/PCM_Finalize remain
    kFinalized,  // MPI_Finalize called
  };
  Phase phase = Phase::kUninit;
  int process_status = PCM_STARTED;  // how this process came to be (PCM_RETIRED once retired)

  std::string job;               // set by PCM_Init (or the join of a spawned process)
  std::int64_t incarnation = 0;  // pcmd's number for this run of the job (watch hellos)
  std::int64_t iteration = 0;    // PCM_Status's calls over the job's life
  // A spawned process resumes at the iteration whose PCM_Status the others have already made.
  bool skip_next_status = false;
  // The job is asked to end (PCM_STOP): the signal agreed on (the largest number any rank had),
  // or kStopAsked for pcmd's request; 0: not. Once set, every PCM_Status returns PCM_STOP.
  static constexpr int kStopAsked = 1000;
  int stop = 0;
  // PCM_Adapt carried the stop out: this process has left with the others, nobody to wait for
  // (PCM_Exit finalizes at once and returns PCM_EXIT_STOPPED). A stop is the only way out of a
  // world once it is agreed.
  bool stopped() const { return stop != 0 && process_status == PCM_RETIRED; }
};

}  // namespace pcm::lib
