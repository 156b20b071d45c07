// profile.cpp — a job's profile: its wire form (compact arrays), its checks, its table.
#include "profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "error.h"
#include "pcm_types.h"

namespace pcm::common {

using nlohmann::json;

namespace {

double number(const json& v, const char* what) {
  if (!v.is_number()) fail(PCM_ERR_ARG, "profile: {} is not a number", what);
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0) fail(PCM_ERR_ARG, "profile: {} is {}", what, d);
  return d;
}

std::int64_t count(const json& v, const char* what) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
    fail(PCM_ERR_ARG, "profile: {} is not a count", what);
  return v.get<std::int64_t>();
}

std::vector<std::uint64_t> matrix(const json& j, const char* key, std::size_t cells) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_array() || it->size() != cells)
    fail(PCM_ERR_ARG, "profile: '{}' must hold {} counts", key, cells);
  std::vector<std::uint64_t> out;
  out.reserve(cells);
  for (const auto& v : *it) out.push_back(static_cast<std::uint64_t>(count(v, key)));
  return out;
}

// 1536 -> "1.5 KiB"
std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.1f} {}", b, units[u]);
}

}  // namespace

json JobProfile::to_json() const {
  json rows = json::array();
  for (const auto& r : ranks)
    rows.push_back(json::array(
        {r.iterations, r.iter_s, r.iter_min_s, r.iter_max_s, r.mpi_s, r.mpi_calls, r.bytes_out}));
  json j{{"interval_s", interval_s}, {"iteration", iteration}, {"ranks", rows}};
  if (!bytes.empty()) {
    j["bytes"] = bytes;
    j["messages"] = messages;
  }
  return j;
}

JobProfile JobProfile::from_json(const json& j, int world_size) {
  if (!j.is_object()) fail(PCM_ERR_ARG, "profile: not a map");
  JobProfile p;
  p.interval_s = number(j.value("interval_s", json()), "interval_s");
  p.iteration = count(j.value("iteration", json()), "iteration");
  const auto it = j.find("ranks");
  if (it == j.end() || !it->is_array() || it->empty() || it->size() > kMaxRanks)
    fail(PCM_ERR_ARG, "profile: 'ranks' must list 1 to {} ranks", kMaxRanks);
  if (world_size > 0 && static_cast<int>(it->size()) != world_size)
    fail(PCM_ERR_ARG, "profile: {} ranks for a job of {} processes", it->size(), world_size);
  for (const auto& row : *it) {
    if (!row.is_array() || row.size() != 7)
      fail(PCM_ERR_ARG, "profile: a rank's row needs 7 figures");
    RankProfile r;
    r.iterations = count(row[0], "iterations");
    r.iter_s = number(row[1], "iteration time");
    r.iter_min_s = number(row[2], "shortest iteration");
    r.iter_max_s = number(row[3], "longest iteration");
    r.mpi_s = number(row[4], "MPI time");
    r.mpi_calls = count(row[5], "MPI calls");
    r.bytes_out = static_cast<std::uint64_t>(count(row[6], "bytes sent"));
    p.ranks.push_back(r);
  }
  const std::size_t n = p.ranks.size();
  if (n <= static_cast<std::size_t>(kMaxMatrixRanks)) {
    p.bytes = matrix(j, "bytes", n * n);
    p.messages = matrix(j, "messages", n * n);
    if (p.bytes.empty() != p.messages.empty())
      fail(PCM_ERR_ARG, "profile: 'bytes' and 'messages' come together");
  } else if (j.contains("bytes") || j.contains("messages")) {
    fail(PCM_ERR_ARG, "profile: no matrix above {} ranks", kMaxMatrixRanks);
  }
  return p;
}

std::string JobProfile::describe() const {
  std::string s = fmt::format("interval {:.2f} s, up to iteration {}, {} processes\n", interval_s,
                              iteration, ranks.size());
  s += fmt::format("{:>5} {:>10} {:>11} {:>11} {:>11} {:>6} {:>10} {:>11}\n", "rank", "iterations",
                   "ms/iter", "min ms", "max ms", "MPI %", "MPI calls", "sent");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const auto& r = ranks[i];
    const double mean = r.iterations > 0 ? 1e3 * r.iter_s / static_cast<double>(r.iterations) : 0;
    const double share = r.iter_s > 0 ? std::min(100.0, 100 * r.mpi_s / r.iter_s) : 0;
    s += fmt::format("{:>5} {:>10} {:>11.4f} {:>11.4f} {:>11.4f} {:>6.1f} {:>10} {:>11}\n", i,
                     r.iterations, mean, 1e3 * r.iter_min_s, 1e3 * r.iter_max_s, share, r.mpi_calls,
                     bytes_text(static_cast<double>(r.bytes_out)));
  }
  if (bytes.empty()) {
    if (ranks.size() > static_cast<std::size_t>(kMaxMatrixRanks))
      s += fmt::format("(no communication matrix above {} processes)\n", kMaxMatrixRanks);
    return s;
  }
  const std::size_t n = ranks.size();
  s += "bytes sent (row: from, column: to)\n      ";
  for (std::size_t c = 0; c < n; ++c) s += fmt::format(" {:>10}", c);
  s += '\n';
  for (std::size_t r = 0; r < n; ++r) {
    s += fmt::format("{:>5} ", r);
    for (std::size_t c = 0; c < n; ++c) {
      const auto b = bytes[r * n + c];
      s += fmt::format(" {:>10}", b ? bytes_text(static_cast<double>(b)) : "-");
    }
    s += '\n';
  }
  return s;
}

}  // namespace pcm::common
