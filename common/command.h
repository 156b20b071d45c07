// command.h — a reconfiguration command as pcmd queues it and libpcm carries it out: one type and
// one wire encoding for both sides.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol.h"

namespace pcm::proto {

struct Command {
  // The wire names ("migrate", "split", "merge", "resize") appear only in the encoding.
  enum class Kind { kMigrate, kSplit, kMerge, kResize };

  std::int64_t id = 0;
  Kind kind = Kind::kMigrate;
  int rank = -1;           // migrate, split: the rank concerned
  int into = 0;            // split: into how many processes
  std::vector<int> ranks;  // merge: the ranks that become one
  int size = 0;            // the world's size afterwards
  std::string host;        // migrate: the target host
  // The new world's host of each rank: required by split and growing resize; pcmd sends it with
  // every command (a respawn needs it).
  std::vector<std::string> hosts;
  // Carried out by spawning the whole new world and letting the old one leave, as a split is,
  // whatever the kind (libpcm's rank 0 decides: retirement.h, the cap on parked processes).
  bool respawn = false;
  // Who asked and why, for the application (PCM_Reconfig_reason) and the logs: "policy: ...",
  // "drain of host h2", "operator command" or the text the client sent with it (at most kMaxWhy
  // bytes, made printable: no control characters).
  std::string why;
  static constexpr std::size_t kMaxWhy = 400;
  // Text made fit for `why`: control characters escaped, cut to kMaxWhy bytes.
  static std::string clean_why(std::string_view text);

  // Decodes and validates a command for a world of world_size processes; throws
  // pcm::Error(PCM_ERR_ARG) naming what is wrong.
  static Command from_json(const json& j, int world_size);
  json to_json() const;
  // For operators: "split of rank 1 into 3".
  std::string describe() const;
};

// A merge or shrinking resize of a world of size processes: new_of[old rank] = its new rank (-1:
// it leaves), the survivors in old rank order (a merge's lowest listed rank keeps the data).
std::vector<int> merged_ranks(const Command& cmd, int size);

const char* kind_name(Command::Kind kind);
std::optional<Command::Kind> kind_from_name(std::string_view name);

}  // namespace pcm::proto
