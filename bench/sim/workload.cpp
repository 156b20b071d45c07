// workload.cpp — reading SWF and CSV workloads, windows, marking jobs malleable (workload.h).
#include "workload.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

namespace pcm::sim {

namespace {

// The whole file, gunzipped if it is gzip (zlib reads plain files as they are).
std::string slurp(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(fmt::format("{}: cannot open", path));
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  const bool bad = n < 0;
  gzclose(f);
  if (bad) throw std::runtime_error(fmt::format("{}: cannot read (gzip)", path));
  return out;
}

}  // namespace

std::vector<Job> read_swf(const std::string& path, int nodes, TraceInfo* info) {
  TraceInfo local;
  TraceInfo& in = info ? *info : local;
  std::istringstream text(slurp(path));
  std::vector<Job> jobs;
  std::string line;
  while (std::getline(text, line)) {
    if (line.empty() || line[0] == ';') continue;
    std::istringstream fields(line);
    std::vector<double> f;
    double v;
    while (fields >> v) f.push_back(v);
    if (f.size() < 8) continue;
    ++in.lines;
    Job j;
    j.id = static_cast<long>(f[0]);
    j.submit = f[1];
    j.run = f[3];
    const double procs = f[4] > 0 ? f[4] : f[7];
    if (j.run < 0 || procs <= 0) {
      ++in.skipped;
      continue;
    }
    j.size = static_cast<int>(procs);
    if (j.size > nodes) {
      ++in.clamped;
      j.size = nodes;
    }
    jobs.push_back(j);
  }
  return jobs;
}

std::vector<Job> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", path));
  std::string line;
  std::getline(in, line);  // header
  std::vector<Job> jobs;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream f(line);
    Job j;
    int malleable = 0;
    if (!(f >> j.id >> j.submit >> j.run >> j.size >> malleable >> j.serial))
      throw std::runtime_error(fmt::format("{}: bad line: {}", path, line));
    j.malleable = malleable != 0;
    jobs.push_back(j);
  }
  return jobs;
}

std::vector<Job> window(const std::vector<Job>& jobs, double from_day, double days) {
  if (jobs.empty()) return {};
  double first = jobs.front().submit;
  for (const Job& j : jobs) first = std::min(first, j.submit);
  const double lo = first + from_day * 86400;
  const double hi = days > 0 ? lo + days * 86400 : INFINITY;
  std::vector<Job> out;
  for (const Job& j : jobs)
    if (j.submit >= lo && j.submit < hi) out.push_back(j);
  if (out.empty()) return out;
  double t0 = out.front().submit;
  for (const Job& j : out) t0 = std::min(t0, j.submit);
  for (Job& j : out) j.submit -= t0;
  return out;
}

std::vector<Job> mark(std::vector<Job> jobs, const Marking& m, int nodes) {
  std::mt19937_64 rng(m.seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (Job& j : jobs) {  // the same draws whatever the share: one per job, in order
    const double x = u(rng);
    j.serial = m.serial_lo * std::pow(m.serial_hi / m.serial_lo, x);
    j.malleable = false;
  }
  std::vector<std::size_t> idx(jobs.size());
  std::iota(idx.begin(), idx.end(), 0);
  if (m.largest) {
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      return jobs[a].run * jobs[a].size > jobs[b].run * jobs[b].size;
    });
  } else {
    std::mt19937_64 pick(m.seed * 7919 + 1);
    std::shuffle(idx.begin(), idx.end(), pick);
  }
  const auto count =
      static_cast<std::size_t>(std::llround(m.share * static_cast<double>(jobs.size())));
  for (std::size_t k = 0; k < count && k < idx.size(); ++k) jobs[idx[k]].malleable = true;
  bound(jobs, m, nodes);
  return jobs;
}

void bound(std::vector<Job>& jobs, const Marking& m, int nodes) {
  for (Job& j : jobs) {
    j.min_size =
        j.malleable ? std::max(1, static_cast<int>(std::ceil(m.min_share * j.size))) : j.size;
    j.max_size =
        j.malleable ? std::min(nodes, static_cast<int>(std::floor(m.max_factor * j.size))) : j.size;
    j.max_size = std::max(j.max_size, j.size);
  }
}

}  // namespace pcm::sim
