// restart_state.h — a restarted job's state: the checkpoint version it resumes from, and whether
// this process is still reading it (loads then read that version, not the working store).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "error.h"
#include "pcm_types.h"

namespace pcm::lib {

struct RestartState {
  std::int64_t iteration = -1;  // the version's iteration (-1: the job was not restarted)
  int nprocs = 0;               // the number of processes that made it
  bool reading = false;         // until the first PCM_Status of a restarted process
  bool unreachable = false;     // the version's reading failed for a shard on no level in reach

  bool restarted() const { return iteration >= 0; }
  // The version a restart resumes from, as pcmd names it and spawned processes receive it:
  // {"iteration", "nprocs"}.
  nlohmann::json version() const { return {{"iteration", iteration}, {"nprocs", nprocs}}; }
  void resume_from(const nlohmann::json& version) {
    iteration = version.at("iteration").get<std::int64_t>();
    nprocs = version.at("nprocs").get<int>();
  }
  // PCM_Restart_info.
  void info(int* it, int* np) const {
    if (!restarted()) fail(PCM_ERR_STATE, "this job was not restarted");
    if (it) *it = static_cast<int>(iteration);
    if (np) *np = nprocs;
  }
};

}  // namespace pcm::lib
