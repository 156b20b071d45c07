// command.cpp — decoding, validating and encoding reconfiguration commands (see command.h).
#include "command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "error.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::proto {

const char* kind_name(Command::Kind kind) {
  switch (kind) {
    case Command::Kind::kMigrate:
      return "migrate";
    case Command::Kind::kSplit:
      return "split";
    case Command::Kind::kMerge:
      return "merge";
    case Command::Kind::kResize:
      return "resize";
  }
  return "unknown";
}

std::optional<Command::Kind> kind_from_name(std::string_view name) {
  for (auto k : {Command::Kind::kMigrate, Command::Kind::kSplit, Command::Kind::kMerge,
                 Command::Kind::kResize})
    if (name == kind_name(k)) return k;
  return std::nullopt;
}

std::vector<int> merged_ranks(const Command& cmd, int size) {
  std::vector<int> new_of(static_cast<std::size_t>(size), -1);
  if (cmd.kind == Command::Kind::kMerge) {
    const int keeper = *std::min_element(cmd.ranks.begin(), cmd.ranks.end());
    int next = 0;
    for (int r = 0; r < size; ++r)
      if (r == keeper || std::find(cmd.ranks.begin(), cmd.ranks.end(), r) == cmd.ranks.end())
        new_of[r] = next++;
  } else {
    for (int r = 0; r < size && r < cmd.size; ++r) new_of[r] = r;
  }
  return new_of;
}

Command Command::from_json(const json& j, int world_size) {
  Command c;
  c.id = get_int(j, "id", 1, INT64_MAX);
  const std::string kind = get_string(j, "kind", 16);
  c.size = static_cast<int>(get_int(j, "size", 1, 1 << 20));
  auto k = kind_from_name(kind);
  if (!k) fail(PCM_ERR_ARG, "unknown command '{}'", kind);
  c.kind = *k;
  if (c.kind == Kind::kMigrate || c.kind == Kind::kSplit)
    c.rank = static_cast<int>(get_int(j, "rank", 0, world_size - 1));
  switch (c.kind) {
    case Kind::kMigrate:
      c.host = get_string(j, "host", kMaxHost);
      if (!valid_host(c.host)) fail(PCM_ERR_ARG, "invalid host '{}'", c.host);
      if (c.size != world_size) fail(PCM_ERR_ARG, "a migration cannot change the size");
      break;
    case Kind::kSplit:
      c.into = static_cast<int>(get_int(j, "into", 2, 1 << 20));
      if (c.size != world_size + c.into - 1) fail(PCM_ERR_ARG, "split size mismatch");
      break;
    case Kind::kMerge: {
      for (const auto& r : j.at("ranks")) c.ranks.push_back(r.get<int>());
      std::vector<int> sorted = c.ranks;
      std::sort(sorted.begin(), sorted.end());
      if (sorted.size() < 2 || sorted.front() < 0 || sorted.back() >= world_size ||
          std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() ||
          c.size != world_size - static_cast<int>(sorted.size()) + 1)
        fail(PCM_ERR_ARG, "invalid merge of ranks {}", j.at("ranks").dump());
      break;
    }
    case Kind::kResize:
      if (c.size == world_size) fail(PCM_ERR_ARG, "a resize must change the size");
      break;
  }
  c.respawn = get_bool(j, "respawn", false);
  if (auto w = j.find("why"); w != j.end() && !w->is_null())
    c.why = clean_why(get_string(j, "why", 4 * kMaxWhy));
  const bool needs_hosts =
      c.respawn || c.kind == Kind::kSplit || (c.kind == Kind::kResize && c.size > world_size);
  auto it = j.find("hosts");
  if (!needs_hosts && it != j.end() && it->is_array() && it->empty()) it = j.end();
  if (needs_hosts || it != j.end()) {
    if (it == j.end() || !it->is_array() || it->size() != static_cast<std::size_t>(c.size))
      fail(PCM_ERR_ARG, "{} needs one host per new rank",
           c.respawn     ? "a respawn"
           : needs_hosts ? "a growing command"
                         : "a command's host list");
    for (const auto& h : *it) {
      if (!h.is_string() || !valid_host(h.get<std::string>()))
        fail(PCM_ERR_ARG, "invalid host in command");
      c.hosts.push_back(h.get<std::string>());
    }
  }
  return c;
}

std::string Command::clean_why(std::string_view text) {
  return clean_text(printable(text, kMaxWhy), kMaxWhy);
}

json Command::to_json() const {
  return json{{"id", id},     {"kind", kind_name(kind)}, {"rank", rank},
              {"into", into}, {"ranks", ranks},          {"size", size},
              {"host", host}, {"hosts", hosts},          {"respawn", respawn},
              {"why", why}};
}

std::string Command::describe() const {
  switch (kind) {
    case Kind::kMigrate:
      return fmt::format("migrate of rank {} to {}", rank, host);
    case Kind::kSplit:
      return fmt::format("split of rank {} into {}", rank, into);
    case Kind::kMerge:
      return fmt::format("merge of ranks {}", fmt::join(ranks, ","));
    case Kind::kResize:
      break;
  }
  return fmt::format("resize to {}", size);
}

}  // namespace pcm::proto
