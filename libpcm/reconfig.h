// reconfig.h — the reconfiguration in flight: the command rank 0 has received, the one the world
// agreed on and is carrying out, the last one done, and the record of the last reconfiguration
// that PCM_Reconfig_last, _reason and _times report.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "command.h"

namespace pcm::lib {

struct Reconfig {
  std::optional<proto::Command> received;  // rank 0: from pcmd, not yet broadcast
  std::optional<proto::Command> current;   // broadcast, not yet carried out
  std::int64_t last_done = 0;              // the id of the last command carried out or given up
  // The reconfiguration pending or last carried out (kind, size_before, started, why); null if
  // none.
  nlohmann::json last;
  // Seconds spent in the phases of this process's last split or merge.
  double t_spawn = 0, t_data = 0, t_rebuild = 0;
  // A split's or merge's old ranks: the token that proves to their peers that they read this
  // process (cma.h: it stays at its address until they have read).
  std::uint64_t cma_token = 0;

  // Whether a command pcmd sent is one not yet carried out.
  bool is_new(const proto::Command& cmd) const { return cmd.id > last_done; }
  // cmd has been carried out or given up: nothing is pending.
  void done(std::int64_t id) {
    current.reset();
    last_done = id;
  }
  // A new world, or a process that left one: no command is pending in it.
  void clear() {
    current.reset();
    received.reset();
  }

  // What PCM_Status says while current is pending, to rank of a world of size. A respawn is
  // PCM_Adapt's split (adapts) or, in a job on the paper's calls, the merge PCM_Merge carries out
  // by respawning (Parking::admit).
  int status_of(int rank, int size, bool adapts) const;
  // PCM_Split (want_split) or PCM_Merge in a world of size: throws PCM_ERR_STATE unless the
  // pending reconfiguration is one.
  void check_pending(bool want_split, int size, bool adapts) const;
  // cmd, which a world of size has agreed on, becomes the last reconfiguration (started now).
  void note(const proto::Command& cmd, int size);

  // PCM_Reconfig_last, PCM_Reconfig_reason and PCM_Reconfig_times.
  void last_info(int* kind, int* size_before, double* started) const;
  void reason(char* reason, int len) const;
  void times(double* spawn, double* data, double* rebuild) const;
};

}  // namespace pcm::lib
