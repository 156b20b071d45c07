// levels.cpp — the shard's levels record and the node-local file names (levels.h).
#include "levels.h"

#include <fmt/format.h>

#include "error.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::common {

using nlohmann::json;

json ShardLevels::to_json() const {
  json j{{"shared", shared}};
  if (!host.empty()) j["host"] = host;
  if (!partner.empty()) j["partner"] = partner;
  return j;
}

ShardLevels ShardLevels::from_json(const json& j) {
  if (!j.is_object()) fail(PCM_ERR_ARG, "'levels' must be an object");
  ShardLevels l;
  auto name = [&](const char* key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::string();
    if (!it->is_string() || !proto::valid_host(it->get<std::string>()))
      fail(PCM_ERR_ARG, "levels: '{}' must be a host name (1-{} of A-Z a-z 0-9 . -)", key,
           proto::kMaxHost);
    return it->get<std::string>();
  };
  l.host = name("host");
  l.partner = name("partner");
  auto it = j.find("shared");
  if (it == j.end() || !it->is_boolean()) fail(PCM_ERR_ARG, "levels: 'shared' must be a boolean");
  l.shared = it->get<bool>();
  if (!l.shared && l.host.empty() && l.partner.empty())
    fail(PCM_ERR_ARG, "levels: a shard on no level");
  return l;
}

std::string local_version_name(std::int64_t iteration) {
  return fmt::format("v{:020d}", iteration);
}
std::string partner_file_name(int rank) { return fmt::format("p{}.h5", rank); }

}  // namespace pcm::common
