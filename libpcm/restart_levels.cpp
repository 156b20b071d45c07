// restart_levels.cpp — where a restarted job reads each shard of a version made with checkpoint
// levels: the copies on the hosts' local levels are verified by one process per host, the
// processes agree on who holds what, a shard only some hosts hold is copied into the version's
// directory for the others, and a version with a shard on no level they can reach is refused as
// damaged (the restart then takes the one before it).
#include <algorithm>
#include <filesystem>

#include "checkpoint_levels.h"
#include "error.h"
#include "levels.h"
#include "mpi_util.h"
#include "runtime.h"

namespace pcm::detail {

using proto::json;

namespace {
enum Held : int { kNone = 0, kOwn = 1, kPartner = 2 };

std::string file_of(const std::string& local, int rank, int held) {
  return local + "/" + (held == kOwn ? shard_file_name(rank) : partner_file_name(rank));
}

std::string describe(const ShardLevels& l) {
  std::string s = l.shared ? "shared" : "";
  if (!l.host.empty()) s += (s.empty() ? "" : ", ") + ("local on " + l.host);
  if (!l.partner.empty()) s += (s.empty() ? "" : ", ") + ("partner on " + l.partner);
  return s;
}
}  // namespace

std::vector<std::string> Runtime::locate_levels(const json& manifest, const std::string& dir,
                                                bool direct,
                                                const std::vector<ShardRecord>& shards) {
  const std::size_t n = shards.size();
  const std::string& base = settings_.checkpoint_local_dir;
  if (!manifest.contains("levels") && base.empty()) return {};  // as without levels
  std::vector<ShardLevels> levels(n);
  if (manifest.contains("levels")) {
    levels.clear();
    for (const auto& l : manifest.at("levels")) levels.push_back(ShardLevels::from_json(l));
    if (levels.size() != n)
      fail(PCM_ERR_CORRUPT, "version {} has levels for {} of {} shards", restart_.iteration,
           levels.size(), n);
  }
  const HostMap hosts = host_map(world_.comm());
  const int me = world_.rank(), size = world_.size();
  const std::string local =
      base.empty() ? "" : base + "/" + job_ + "/" + local_version_name(restart_.iteration);
  // What this host's local level holds, verified (size and every checksum) by its first process.
  std::vector<int> held(n, kNone);
  std::error_code ec;
  if (!local.empty() && hosts.first_on_host(me) && std::filesystem::is_directory(local, ec))
    for (std::size_t s = 0; s < n; ++s) {
      const int r = static_cast<int>(s);
      if (verify_copy(file_of(local, r, kOwn), shards[s]))
        held[s] = kOwn;
      else if (verify_copy(file_of(local, r, kPartner), shards[s]))
        held[s] = kPartner;
    }
  std::vector<int> all(n * static_cast<std::size_t>(size));
  mpi_check(MPI_Allgather(held.data(), static_cast<int>(n), MPI_INT, all.data(),
                          static_cast<int>(n), MPI_INT, world_.comm()),
            "MPI_Allgather");
  auto at = [&](int rank, std::size_t s) { return all[static_cast<std::size_t>(rank) * n + s]; };
  std::vector<std::string> paths(n), from(n);
  std::vector<std::string> missing;
  for (std::size_t s = 0; s < n; ++s) {
    int holder = -1, kind = kNone;
    std::vector<std::string> holding;  // hosts
    for (int r = 0; r < size; ++r)
      if (at(r, s) != kNone) {
        holding.push_back(hosts.of_rank[static_cast<std::size_t>(r)]);
        if (holder < 0 || (kind == kPartner && at(r, s) == kOwn)) holder = r, kind = at(r, s);
      }
    for (int r = 0; r < size; ++r)
      if (at(r, s) != kNone && hosts.of_rank[static_cast<std::size_t>(r)] == hosts.of_rank[me])
        paths[s] = file_of(local, static_cast<int>(s), at(r, s));
    if (holder < 0) {
      if (!levels[s].shared) missing.push_back(fmt::format("{} ({})", s, describe(levels[s])));
      from[s] = "shared";
      continue;
    }
    from[s] = fmt::format("{} on {}", kind == kOwn ? "local" : "partner",
                          hosts.of_rank[static_cast<std::size_t>(holder)]);
    if (levels[s].shared || holding.size() == hosts.hosts.size()) continue;
    // Only some hosts hold it: its holder puts a verified copy into the version's directory for
    // the others (it was verified above; the readers verify every chunk again).
    from[s] += " (copied to shared)";
    if (holder != me) continue;
    if (!direct)
      fail(PCM_ERR_CORRUPT, "version {}: the shard of rank {} is only on {}, whose process cannot "
           "see the version's directory to share it", restart_.iteration, s, hosts.of_rank[me]);
    const std::string src = file_of(local, static_cast<int>(s), kind);
    const std::string part = dir + "/" + shard_file_name(static_cast<int>(s)) + ".part";
    std::filesystem::copy_file(src, part, std::filesystem::copy_options::overwrite_existing, ec);
    if (!ec) std::filesystem::rename(part, dir + "/" + shard_file_name(static_cast<int>(s)), ec);
    if (ec)
      fail(PCM_ERR_CORRUPT, "version {}: cannot share the shard of rank {} from {}: {}",
           restart_.iteration, s, src, ec.message());
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : "; ") + m;
    fail(PCM_ERR_CORRUPT,
         "version {}: shards on no level these processes can read (rank: where they were): {}",
         restart_.iteration, list);
  }
  if (me == 0) {
    std::string line;
    for (std::size_t s = 0; s < n; ++s)
      line += fmt::format("{}r{}: {}", s ? ", " : "", s, from[s]);
    plog()->info("[rank 0] restart from version {}: shards read from {}", restart_.iteration,
                 line);
  }
  return paths;
}

}  // namespace pcm::detail
