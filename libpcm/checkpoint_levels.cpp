// checkpoint_levels.cpp — the node-local and partner levels of a checkpoint version: which host
// each rank is on, who keeps whose copy, the images exchanged, the local files written, pruned
// and verified (checkpoint_levels.h).
#include "checkpoint_levels.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

#include "durable.h"
#include "error.h"
#include "mpi_util.h"

namespace pcm::lib {

namespace fs = std::filesystem;

int HostMap::index_of(const std::string& host) const {
  auto it = std::find(hosts.begin(), hosts.end(), host);
  return it == hosts.end() ? -1 : static_cast<int>(it - hosts.begin());
}

bool HostMap::first_on_host(int rank) const {
  const std::string& h = of_rank.at(static_cast<std::size_t>(rank));
  for (int r = 0; r < rank; ++r)
    if (of_rank[static_cast<std::size_t>(r)] == h) return false;
  return true;
}

HostMap host_map(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  std::snprintf(mine, sizeof mine, "%s", processor_name().c_str());  // as pcmd knows the host
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  mpi_check(MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                          MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm),
            "MPI_Allgather");
  HostMap m;
  for (int r = 0; r < size; ++r) {
    const char* p = all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    m.of_rank.emplace_back(p, strnlen(p, MPI_MAX_PROCESSOR_NAME));
    if (m.index_of(m.of_rank.back()) < 0) m.hosts.push_back(m.of_rank.back());
  }
  return m;
}

namespace {
// The partner of rank r: the same index, modulo, on the next host.
int partner_of(const HostMap& m, const std::vector<std::vector<int>>& on_host, int r) {
  const int h = m.index_of(m.of_rank[static_cast<std::size_t>(r)]);
  const auto& here = on_host[static_cast<std::size_t>(h)];
  const int i = static_cast<int>(std::find(here.begin(), here.end(), r) - here.begin());
  const auto& next = on_host[static_cast<std::size_t>((h + 1) % on_host.size())];
  return next[static_cast<std::size_t>(i) % next.size()];
}
}  // namespace

LevelPlan plan_levels(const HostMap& m, int rank, const std::string& local_dir,
                      const std::string& job, std::int64_t iteration, int use_partner, bool flush) {
  LevelPlan p;
  p.job_dir = local_dir + "/" + job;
  p.dir = p.job_dir + "/" + local_version_name(iteration);
  p.host = m.of_rank.at(static_cast<std::size_t>(rank));
  p.flush = flush;
  if (use_partner == 0 || m.hosts.size() < 2) return p;
  std::vector<std::vector<int>> on_host(m.hosts.size());
  for (std::size_t r = 0; r < m.of_rank.size(); ++r)
    on_host[static_cast<std::size_t>(m.index_of(m.of_rank[r]))].push_back(static_cast<int>(r));
  p.partner = partner_of(m, on_host, rank);
  p.partner_host = m.of_rank[static_cast<std::size_t>(p.partner)];
  for (int r = 0; r < static_cast<int>(m.of_rank.size()); ++r)
    if (partner_of(m, on_host, r) == rank) p.keeps.push_back(r);
  return p;
}

ShardRecord write_shard_replacing(const std::string& dir, const ShardHeader& header,
                                  const std::vector<ShardItem>& items, const std::string& name) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(PCM_ERR_INTERNAL, "cannot create {}: {}", dir, ec.message());
  const std::string tmp = name + ".tmp";
  fs::remove(fs::path(dir) / tmp, ec);  // left by a process that died writing it
  ShardRecord rec = write_shard(dir, header, items, tmp);
  fs::rename(fs::path(dir) / tmp, fs::path(dir) / name, ec);
  if (ec) fail(PCM_ERR_INTERNAL, "cannot rename {} in {}: {}", tmp, dir, ec.message());
  fsync_path(dir, true);
  rec.file = name;
  return rec;
}

void prune_local(const std::string& job_dir, std::int64_t current, std::size_t keep) {
  static const std::regex name(R"(v(\d{20}))");
  std::vector<std::int64_t> found;
  std::error_code ec;
  for (auto it = fs::directory_iterator(job_dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::smatch mt;
    const std::string n = it->path().filename().string();
    if (!std::regex_match(n, mt, name)) continue;
    const std::int64_t v = std::stoll(mt[1].str());
    if (v != current) found.push_back(v);
  }
  std::sort(found.rbegin(), found.rend());
  for (std::size_t i = keep; i < found.size(); ++i)
    fs::remove_all(fs::path(job_dir) / local_version_name(found[i]), ec);
}

bool verify_copy(const std::string& path, const ShardRecord& record) {
  try {
    ShardReader reader(path, record);
    std::vector<char> buf;
    for (const ShardDataset& d : record.datasets) {
      if (!d.file.empty()) return false;  // a key stored by itself: never on a local level
      const std::uint64_t step = 16 * kShardChunk;
      buf.resize(static_cast<std::size_t>(std::min(step, d.bytes())));
      for (std::uint64_t at = 0; at < d.bytes(); at += step)
        reader.read(d, at, std::min(step, d.bytes() - at), buf.data());
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace pcm::lib
