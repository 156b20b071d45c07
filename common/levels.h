// levels.h — where the copies of a checkpoint shard are (checkpoint levels): the record a rank
// reports with its shard and pcmd keeps in the version's manifest, and the node-local file names.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "namespaces.h"

namespace pcm::common {

// Where the copies of one rank's shard of a version are (checkpoint levels,
// PCM_CHECKPOINT_LOCAL_DIR): on the node-local level of the host that wrote it, on the
// node-local level of its partner's host, and/or on the shared level (the version's directory).
// A version whose shards all report nothing of the kind is on the shared level only, as before
// levels.
struct ShardLevels {
  std::string host;     // host whose local directory holds r<rank>.h5 ("": none)
  std::string partner;  // host whose local directory holds p<rank>.h5 ("": none)
  bool shared = true;   // r<rank>.h5 is in the version's directory
  bool operator==(const ShardLevels& o) const {
    return host == o.host && partner == o.partner && shared == o.shared;
  }
  nlohmann::json to_json() const;
  // Host names: as proto::valid_host; a copy on no level at all is refused.
  // Throws pcm::Error(PCM_ERR_ARG).
  static ShardLevels from_json(const nlohmann::json& j);
};
// File names of the node-local levels: <local dir>/<job>/v<20 digits>/r<rank>.h5 (own) and
// p<rank>.h5 (the partner copy of rank's shard).
std::string local_version_name(std::int64_t iteration);
std::string partner_file_name(int rank);

}  // namespace pcm::common
