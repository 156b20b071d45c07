// slurm_watch.cpp — pcmd's background readings of Slurm (slurm_watch.h).
#include "slurm/slurm_watch.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

namespace pcm::daemon {

std::string one_line(const std::string& text) {
  std::string s = text.substr(0, 300);
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::vector<std::vector<std::string>> rows_of(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  for (const std::string& line : lines_of(text)) {
    if (out.size() == 64) break;
    std::vector<std::string> cells;
    std::size_t a = 0;
    for (std::size_t bar; (bar = line.find('|', a)) != std::string::npos; a = bar + 1)
      cells.push_back(line.substr(a, bar - a));
    cells.push_back(one_line(line.substr(a)));
    out.push_back(std::move(cells));
  }
  return out;
}

std::map<std::string, std::string> parse_leaving_nodes(const std::string& sinfo_output) {
  std::map<std::string, std::string> leaving;
  for (const auto& r : rows_of(sinfo_output)) {
    if (r.size() != 3 || r[0].empty() || r[1].empty()) continue;
    const std::string why = r[2].empty() || r[2] == "none" ? "no reason given" : r[2];
    leaving.emplace(r[0], r[1] + " (" + why + ")");
  }
  return leaving;
}

PolicyQueue parse_queue(const std::string& squeue_output, const std::string& sinfo_output) {
  PolicyQueue q;
  for (const auto& r : rows_of(squeue_output)) {
    if (r.size() != 3 || r[1].rfind("pcm-grow.", 0) == 0) continue;  // pcmd's own requests
    const int nodes = std::atoi(r[2].c_str());
    if (nodes > 0) q.waiting.push_back({r[0], nodes});
  }
  std::set<std::string> seen;
  for (const auto& r : rows_of(sinfo_output)) {
    if (r.size() != 2 || r[0].empty() || !seen.insert(r[0]).second) continue;  // one per node
    q.idle.push_back({r[0], std::max(1, std::atoi(r[1].c_str()))});
  }
  return q;
}

SlurmWatch::SlurmWatch(std::string job_id, bool queue, std::chrono::milliseconds period)
    : job_id_(std::move(job_id)), queue_(queue), period_(period) {}

std::optional<SlurmWatch::Reading> SlurmWatch::poll() {
  if (!readable_) return std::nullopt;
  if (!reading_) {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return std::nullopt;
    next_ = now + period_;
    const std::vector<std::string> env = environment_outside_slurm();
    reading_ =
        own_.start({"scontrol", "show", "job", "-o", job_id_}, env) &&
        leaving_.start({"sinfo", "-h", "-N", "-t", "drain,fail", "-o", "%N|%T|%E"}, env) &&
        (!queue_ ||
         (pending_.start({"squeue", "-h", "-t", "PD", "--sort=-p,i", "-o", "%i|%j|%D"}, env) &&
          idle_.start({"sinfo", "-h", "-N", "-t", "idle", "-o", "%N|%c"}, env)));
    if (!reading_) {
      for (Child* c : {&own_, &leaving_, &pending_, &idle_}) c->stop();
      readable_ = false;
    }
    return std::nullopt;
  }
  bool running = false;
  for (Child* c : {&own_, &leaving_, &pending_, &idle_}) running = c->poll() || running;
  if (running) return std::nullopt;
  reading_ = false;
  Reading r;
  if (own_.exit_code() == 0) {
    try {
      r.own = parse_scontrol_job(own_.output());
    } catch (const std::exception&) {
      // not understood: no reading of the job this time
    }
  }
  if (leaving_.exit_code() == 0) r.leaving = parse_leaving_nodes(leaving_.output());
  if (queue_ && pending_.exit_code() == 0 && idle_.exit_code() == 0)
    r.queue = parse_queue(pending_.output(), idle_.output());
  return r;
}

}  // namespace pcm::daemon
