// reconfig.cpp — the reconfiguration in flight and the record of the last one (reconfig.h).
#include "reconfig.h"

#include <time.h>

#include <cstring>
#include <string>

#include "error.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::lib {

using proto::Command;
using proto::json;

int Reconfig::status_of(int rank, int size, bool adapts) const {
  const Command& c = *current;
  if (c.respawn && adapts) return PCM_SPLIT;  // PCM_Adapt spawns the whole world (Parking::bound)
  if (c.kind == Command::Kind::kMigrate) return rank == c.rank ? PCM_MIGRATE : PCM_RECONFIGURE;
  return c.size > size ? PCM_SPLIT : PCM_MERGE;
}

void Reconfig::check_pending(bool want_split, int size, bool adapts) const {
  const bool respawn = current && current->respawn && adapts;
  if (!current || (current->kind == Command::Kind::kMigrate && !respawn))
    fail(PCM_ERR_STATE, "no {} is pending", want_split ? "split" : "merge");
  // PCM_Adapt's respawn spawns the whole new world, as a split does, whatever its size; a
  // merge respawned under the paper's calls is still PCM_Merge's.
  bool grows = respawn || current->size > size;
  if (grows != want_split)
    fail(PCM_ERR_STATE, "the pending reconfiguration is a {} ({} -> {} processes): call {}",
         proto::kind_name(current->kind), size, current->size, grows ? "PCM_Split" : "PCM_Merge");
}

void Reconfig::note(const Command& cmd, int size) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  last = json{{"kind", cmd.kind == Command::Kind::kMigrate ? PCM_MIGRATE
                       : cmd.size > size                   ? PCM_SPLIT
                                                           : PCM_MERGE},
              {"size_before", size},
              {"started", static_cast<double>(ts.tv_sec) + 1e-9 * ts.tv_nsec},
              {"why", cmd.why}};
}

void Reconfig::last_info(int* kind, int* size_before, double* started) const {
  if (last.is_null()) fail(PCM_ERR_STATE, "this world has not been reconfigured");
  if (kind) *kind = last.at("kind").get<int>();
  if (size_before) *size_before = last.at("size_before").get<int>();
  if (started) *started = last.at("started").get<double>();
}

void Reconfig::reason(char* reason, int len) const {
  if (!reason || len < 1) fail(PCM_ERR_ARG, "reason must be a buffer of at least 1 byte");
  if (last.is_null()) fail(PCM_ERR_STATE, "this world has not been reconfigured");
  // Cut at a character boundary (never half a UTF-8 sequence), ending in "..." when cut.
  const std::string why =
      proto::clean_text(last.value("why", std::string()), static_cast<std::size_t>(len - 1));
  std::memcpy(reason, why.data(), why.size());
  reason[why.size()] = '\0';
}

void Reconfig::times(double* spawn, double* data, double* rebuild) const {
  if (spawn) *spawn = t_spawn;
  if (data) *data = t_data;
  if (rebuild) *rebuild = t_rebuild;
}

}  // namespace pcm::lib
