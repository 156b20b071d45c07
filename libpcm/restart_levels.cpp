// restart_levels.cpp — where a restarted job reads each shard of a version made with checkpoint
// levels: the copies on the hosts' local levels are verified by one process per host, the
// processes agree on who holds what, a shard only some hosts hold is copied into the version's
// directory for the others, and a version with a shard on no level they can reach is refused as
// damaged (the restart then takes the one before it).
#include <algorithm>
#include <filesystem>

#include "buffer.h"
#include "checkpoint_levels.h"
#include "checkpointer.h"
#include "error.h"
#include "levels.h"
#include "mpi_util.h"

namespace pcm::lib {

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

std::vector<std::string> Checkpointer::locate_levels(const json& manifest, const std::string& dir,
                                                     bool direct,
                                                     const std::vector<ShardRecord>& shards) {
  const std::size_t n = shards.size();
  const std::string& base = ctx_.settings.checkpoint_local_dir;
  if (!manifest.contains("levels") && base.empty()) return {};  // as without levels
  std::vector<ShardLevels> levels(n);
  if (manifest.contains("levels")) {
    levels.clear();
    for (const auto& l : manifest.at("levels")) levels.push_back(ShardLevels::from_json(l));
    if (levels.size() != n)
      fail(PCM_ERR_CORRUPT, "version {} has levels for {} of {} shards", ctx_.restart.iteration,
           levels.size(), n);
  }
  // Refused, not marked bad: the copies may well be there, for processes that look for them.
  if (base.empty())
    for (std::size_t s = 0; s < n; ++s)
      if (!levels[s].shared)
        fail(PCM_ERR_ARG,
             "version {} has shards on the hosts' local levels (rank {}: {}); restart with "
             "PCM_CHECKPOINT_LOCAL_DIR set as when it was written",
             ctx_.restart.iteration, s, describe(levels[s]));
  const double t0 = wtime();
  const HostMap hosts = host_map(ctx_.world.comm());
  const int me = ctx_.world.rank(), size = ctx_.world.size();
  const std::string local =
      base.empty() ? "" : base + "/" + ctx_.job + "/" + local_version_name(ctx_.restart.iteration);
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
  const double t_verified = wtime();
  std::vector<int> all(n * static_cast<std::size_t>(size));
  mpi_check(MPI_Allgather(held.data(), static_cast<int>(n), MPI_INT, all.data(),
                          static_cast<int>(n), MPI_INT, ctx_.world.comm()),
            "MPI_Allgather");
  auto at = [&](int rank, std::size_t s) { return all[static_cast<std::size_t>(rank) * n + s]; };
  std::vector<std::string> paths(n), from(n), missing;
  std::vector<int> holder(n, -1), kind(n, kNone);
  std::vector<std::vector<bool>> holds(n, std::vector<bool>(hosts.hosts.size(), false));
  for (std::size_t s = 0; s < n; ++s) {
    for (int r = 0; r < size; ++r) {
      const int k = at(r, s);
      if (k == kNone) continue;
      holds[s][static_cast<std::size_t>(hosts.index_of(hosts.of_rank[r]))] = true;
      if (holder[s] < 0 || (kind[s] == kPartner && k == kOwn)) holder[s] = r, kind[s] = k;
      if (hosts.of_rank[r] == hosts.of_rank[me]) paths[s] = file_of(local, static_cast<int>(s), k);
    }
    if (holder[s] >= 0)
      from[s] = fmt::format("{} on {}", kind[s] == kOwn ? "local" : "partner",
                            hosts.of_rank[static_cast<std::size_t>(holder[s])]);
    else if (levels[s].shared)
      from[s] = "shared";
    else
      missing.push_back(fmt::format("{} ({})", s, describe(levels[s])));
  }
  if (!missing.empty()) {
    ctx_.restart.unreachable = true;  // every process found the same: not damaged, out of reach
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : "; ") + m;
    fail(PCM_ERR_CORRUPT,
         "version {}: shards on no level these processes can read (rank: where they were): {}",
         ctx_.restart.iteration, list);
  }
  // A shard not on the shared level that a host reading it does not hold: its holder puts a
  // verified copy into the version's directory for the others (the readers verify every chunk
  // again). needs: per new rank, whether it reads the shard.
  auto share = [&](std::size_t s, const std::vector<bool>& needs) {
    if (levels[s].shared) return;
    bool all = true;
    for (int r = 0; r < size; ++r)
      all = all && (!needs[static_cast<std::size_t>(r)] ||
                    holds[s][static_cast<std::size_t>(hosts.index_of(hosts.of_rank[r]))]);
    if (all) return;
    from[s] += " (copied to shared)";
    if (holder[s] != me) return;
    if (!direct)
      fail(PCM_ERR_CORRUPT,
           "version {}: the shard of rank {} is only on {}, whose process cannot "
           "see the version's directory to share it",
           ctx_.restart.iteration, s, hosts.of_rank[me]);
    const std::string src = file_of(local, static_cast<int>(s), kind[s]);
    const std::string part = dir + "/" + shard_file_name(static_cast<int>(s)) + ".part";
    std::filesystem::copy_file(src, part, std::filesystem::copy_options::overwrite_existing, ec);
    if (!ec) std::filesystem::rename(part, dir + "/" + shard_file_name(static_cast<int>(s)), ec);
    if (ec)
      fail(PCM_ERR_CORRUPT, "version {}: cannot share the shard of rank {} from {}: {}",
           ctx_.restart.iteration, s, src, ec.message());
  };
  // Rank 0's shard (the values and the maps) is read by every process; which of the others each
  // reads, its maps say.
  Outcome o = attempt([&] { share(0, std::vector<bool>(static_cast<std::size_t>(size), true)); });
  agree(ctx_.world.comm(), o.code, o.msg);
  const auto readers =
      readers_of_shards(paths[0].empty() ? dir + "/" + shards[0].file : paths[0], shards);
  for (std::size_t s = 1; s < n; ++s) share(s, readers[s]);
  if (me == 0) {
    std::string line;
    for (std::size_t s = 0; s < n; ++s) line += fmt::format("{}r{}: {}", s ? ", " : "", s, from[s]);
    plog()->info(
        "[rank 0] restart from version {}: shards read from {} (found in {:.3f} s, "
        "{:.3f} s of it verifying this host's copies)",
        ctx_.restart.iteration, line, wtime() - t0, t_verified - t0);
  }
  return paths;
}

std::vector<std::vector<bool>> Checkpointer::readers_of_shards(
    const std::string& shard0, const std::vector<ShardRecord>& shards) {
  const std::size_t size = static_cast<std::size_t>(ctx_.world.size());
  std::vector<std::vector<bool>> out(shards.size(), std::vector<bool>(size, false));
  out[0].assign(size, true);
  if (ctx_.restart.nprocs == ctx_.world.size())  // the locals, rank by rank
    for (std::size_t r = 0; r < size; ++r) out[r][r] = true;
  ShardReader reader(shard0, shards[0]);
  for (const Item* i : ctx_.registry.of(ItemKind::kDist)) {
    const ShardDataset* d = shards[0].find(Registry::map_key(*i));
    if (!d)
      fail(PCM_ERR_NOT_FOUND, "version {} has no map of '{}'", ctx_.restart.iteration, i->name);
    std::string bytes(d->bytes(), '\0');
    reader.read(*d, 0, d->bytes(), bytes.data());
    const Distribution from = Distribution::from_json(proto::decode(bytes.data(), bytes.size()));
    const Distribution to =
        restart_map(*i, from, ctx_.restart.nprocs, ctx_.world.size(), PCM_ERR_CORRUPT);
    for (const Transfer& t : plan(from, to))
      if (t.from >= 0 && static_cast<std::size_t>(t.from) < shards.size() && t.to >= 0 &&
          static_cast<std::size_t>(t.to) < size)
        out[static_cast<std::size_t>(t.from)][static_cast<std::size_t>(t.to)] = true;
  }
  return out;
}

}  // namespace pcm::lib
