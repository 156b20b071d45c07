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
  int rank = -1;                   // migrate, split: the rank concerned
  int into = 0;                    // split: into how many processes
  std::vector<int> ranks;          // merge: the ranks that become one
  int size = 0;                    // the world's size afterwards
  std::string host;                // migrate: the target host
  std::vector<std::string> hosts;  // split, growing resize: the new world's host of each rank

  // Decodes and validates a command for a world of world_size processes; throws
  // pcm::Error(PCM_ERR_ARG) naming what is wrong.
  static Command from_json(const json& j, int world_size);
  json to_json() const;
  // For operators: "split of rank 1 into 3".
  std::string describe() const;
};

const char* kind_name(Command::Kind kind);
std::optional<Command::Kind> kind_from_name(std::string_view name);

}  // namespace pcm::proto
