// print.cpp — the tables and lines pcmctl prints from pcmd's replies (scripts parse them).
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ctime>
#include <iostream>

#include "pcmctl.h"

namespace pcm::ctl {

using proto::json;

namespace {

std::string pending_text(const json& p) {
  if (p.is_null()) return "-";
  return fmt::format("{}{}", p.value("text", "?"),
                     p.value("delivered", false) ? " (delivered)" : "");
}

std::string opt_ms(const json& v) {
  return v.is_number() ? fmt::format("{:.3f}", v.get<double>()) : "-";
}

}  // namespace

void print_status_table(const json& reply) {
  const auto& jobs = reply.at("jobs");
  if (jobs.empty()) {
    std::cout << "no jobs\n";
    return;
  }
  std::cout << fmt::format("{:<20} {:<9} {:>5} {:>10} {:>9}  {:<30} {}\n", "JOB", "STATE", "PROCS",
                           "ITERATION", "RECONFIGS", "PENDING", "LAST EVENT");
  for (const auto& j : jobs) {
    std::cout << fmt::format("{:<20} {:<9} {:>5} {:>10} {:>9}  {:<30} {} ({:.1f} s ago)\n",
                             j.value("job", "?"), j.value("state", "?"), j.value("size", 0),
                             j.value("iteration", 0L), j.value("reconfigurations", 0),
                             j.value("allocating", json()).is_object()
                                 ? "allocating: " + j.at("allocating").value("text", "?")
                                 : pending_text(j.at("pending")),
                             j.value("last_event", ""), j.value("seconds_since_seen", 0.0));
    if (const json c = j.value("checkpoint_schedule", json()); c.is_object())
      std::cout << fmt::format(
          "{:<20} checkpoints every {} s of work (cost {} s, MTBF {:.0f} s: Young/Daly)\n", "",
          opt_ms(c.value("interval_s", json())), opt_ms(c.value("cost_s", json())),
          c.value("mtbf_s", 0.0));
    if (const json w = j.value("checkpoint_wanted", json()); w.is_object())
      std::cout << fmt::format("{:<20} checkpoint asked {:.1f} s ago, not written yet: {}\n", "",
                               w.value("seconds", 0.0), w.value("why", ""));
    if (j.contains("lost") && !j.at("lost").empty())
      std::cout << fmt::format("{:<20} processes lost: {}\n", "",
                               fmt::join(j.at("lost").get<std::vector<std::string>>(), ", "));
  }
}

void print_host_table(const json& hosts) {
  if (hosts.empty()) {
    std::cout << "no hosts\n";
    return;
  }
  // AGENT: "-" for a host added by hand; else its agent's last report: busy cores of its cores,
  // runnable tasks (PCM's processes included) and how long ago it reported.
  // SLURM_JOB: the Slurm job whose allocation holds the host, "-" outside Slurm.
  const char* row = "{:<24} {:>6} {:>5} {:>5}  {:<12} {:>10} {:>9}  {:<9} {:<10} {}\n";
  std::cout << fmt::format(fmt::runtime(row), "HOST", "SLOTS", "USED", "FREE", "SITE", "LATENCY_MS",
                           "RTT_MS", "STATE", "SLURM_JOB", "AGENT");
  for (const auto& h : hosts) {
    std::string agent = "-";
    if (const auto a = h.value("agent", json()); a.is_object())
      agent = fmt::format("busy {:.1f}/{} runnable {:.1f} {:.1f}s ago", a.value("busy", 0.0),
                          a.value("cores", 0), a.value("runnable", 0.0),
                          a.value("seconds_since_report", 0.0));
    const auto job = h.value("slurm_job", json());
    const std::string slurm_job = job.is_string() ? job.get<std::string>() : "-";
    std::cout << fmt::format(fmt::runtime(row), h.value("host", "?"), h.value("slots", 0),
                             h.value("used", 0), h.value("free", 0), h.value("site", ""),
                             opt_ms(h.at("latency")), opt_ms(h.at("rtt")), h.value("state", "?"),
                             slurm_job, agent);
  }
}

void print_events(const json& events, const json& times) {
  // "2026-11-25 11:52:03.120  policy: ..." (local time; no time for events from before pcmd kept
  // them).
  for (std::size_t i = 0; i < events.size(); ++i) {
    const double t = i < times.size() && times[i].is_number() ? times[i].get<double>() : 0;
    std::string when(23, ' ');
    if (t > 0) {
      const std::time_t s = static_cast<std::time_t>(t);
      std::tm tm{};
      localtime_r(&s, &tm);
      when = fmt::format("{:%Y-%m-%d %H:%M:%S}.{:03d}", tm,
                         static_cast<int>((t - static_cast<double>(s)) * 1000));
    }
    std::cout << when << "  " << events[i].get<std::string>() << "\n";
  }
}

bool print_versions(const json& versions) {
  bool all_valid = true;
  std::cout << fmt::format("{:>12} {:>6} {:>12}  {}\n", "ITERATION", "PROCS", "BYTES", "STATE");
  for (const auto& v : versions) {
    bool ok = v.value("valid", false);
    all_valid = all_valid && ok;
    std::cout << fmt::format("{:>12} {:>6} {:>12}  {}\n", v.value("iteration", 0L),
                             v.value("nprocs", 0), v.value("bytes", 0UL),
                             ok ? "valid" : "INVALID: " + v.value("why", std::string("?")));
  }
  if (versions.empty()) std::cout << "no versions\n";
  return all_valid;
}

void print_reshape(const json& reply, const std::string& job) {
  if (reply.value("allocating", false)) {
    std::cout << fmt::format("job {}: {}\n", job, reply.value("text", "?"));
    return;
  }
  std::cout << fmt::format("command {}: {} of job {} -> {} processes", reply.value("command", 0),
                           reply.value("text", "?"), job, reply.value("size", 0));
  if (!reply.value("hosts", json::array()).empty())
    std::cout << " on "
              << fmt::format("{}",
                             fmt::join(reply.at("hosts").get<std::vector<std::string>>(), ","));
  std::cout << "\n";
}

}  // namespace pcm::ctl
