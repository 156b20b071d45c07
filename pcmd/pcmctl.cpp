// pcmctl.cpp — the operator's CLI for pcmd: job status and reconfiguration commands.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <thread>

#include "client.h"
#include "config.h"
#include "error.h"
#include "pcm_types.h"
#include "profile.h"

namespace {

using pcm::proto::json;

std::string pending_text(const json& p) {
  if (p.is_null()) return "-";
  return fmt::format("{}{}", p.value("text", "?"),
                     p.value("delivered", false) ? " (delivered)" : "");
}

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
                             pending_text(j.at("pending")), j.value("last_event", ""),
                             j.value("seconds_since_seen", 0.0));
    if (j.contains("lost") && !j.at("lost").empty())
      std::cout << fmt::format("{:<20} processes lost: {}\n", "",
                               fmt::join(j.at("lost").get<std::vector<std::string>>(), ", "));
  }
}

// Polls the job every 50 ms until every condition holds (exit 0); exit 1 on timeout or when the
// job finished without meeting them. An unknown job is waited for: it may not have registered yet.
int wait_for(pcm::detail::Client& client, const std::string& job, long iteration, int reconfigs,
             bool finished, bool ended, double timeout_s, int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string last = "not registered";
  while (true) {
    try {
      auto r = client.request({{"op", "status"}, {"job", job}}, nullptr, 0, timeout_ms);
      const auto& j = r.header.at("jobs").at(0);
      const std::string state = j.value("state", "");
      bool done = state == "finished" || state == "failed";
      bool met = (iteration < 0 || j.value("iteration", 0L) >= iteration) &&
                 (reconfigs < 0 || j.value("reconfigurations", 0) >= reconfigs) &&
                 (!finished || state == "finished") && (!ended || done);
      if (met) return 0;
      last = fmt::format("{} at iteration {} after {} reconfigurations", j.value("state", "?"),
                         j.value("iteration", 0L), j.value("reconfigurations", 0));
      if (done) {
        std::cerr << "pcmctl: job " << job << " " << state << " before the condition held (" << last
                  << "): " << j.value("last_event", "") << "\n";
        return 1;
      }
    } catch (const pcm::Error& e) {
      if (e.code() != PCM_ERR_REFUSED) throw;  // unknown job: not registered yet
    }
    if (std::chrono::steady_clock::now() > end) {
      std::cerr << "pcmctl: timed out after " << timeout_s << " s waiting for job " << job << " ("
                << last << ")\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string opt_ms(const json& v) {
  return v.is_number() ? fmt::format("{:.3f}", v.get<double>()) : "-";
}

void print_host_table(const json& hosts) {
  if (hosts.empty()) {
    std::cout << "no hosts\n";
    return;
  }
  // AGENT: "-" for a host added by hand; else its agent's last report: busy cores of its cores,
  // runnable tasks (PCM's processes included) and how long ago it reported.
  const char* row = "{:<24} {:>6} {:>5} {:>5}  {:<12} {:>10} {:>9}  {:<9} {}\n";
  std::cout << fmt::format(fmt::runtime(row), "HOST", "SLOTS", "USED", "FREE", "SITE", "LATENCY_MS",
                           "RTT_MS", "STATE", "AGENT");
  for (const auto& h : hosts) {
    std::string agent = "-";
    if (const auto a = h.value("agent", json()); a.is_object())
      agent = fmt::format("busy {:.1f}/{} runnable {:.1f} {:.1f}s ago", a.value("busy", 0.0),
                          a.value("cores", 0), a.value("runnable", 0.0),
                          a.value("seconds_since_report", 0.0));
    std::cout << fmt::format(fmt::runtime(row), h.value("host", "?"), h.value("slots", 0),
                             h.value("used", 0), h.value("free", 0), h.value("site", ""),
                             opt_ms(h.at("latency")), opt_ms(h.at("rtt")), h.value("state", "?"),
                             agent);
  }
}

// Polls the inventory until host has left it (exit 0), printing a line whenever the number of
// processes on it changes; exit 1 on timeout, printing what holds it.
int wait_drained(pcm::detail::Client& client, const std::string& host, double timeout_s,
                 int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int last = -1;
  while (true) {
    auto r = client.request({{"op", "host_list"}}, nullptr, 0, timeout_ms);
    const json* row = nullptr;
    for (const auto& h : r.header.at("hosts"))
      if (h.value("host", "") == host) row = &h;
    if (!row) {
      std::cout << "host " << host << ": drained, it has left the inventory\n";
      return 0;
    }
    int used = row->value("used", 0);
    if (used != last) {
      std::cout << "host " << host << ": " << used << " processes left\n" << std::flush;
      last = used;
    }
    if (std::chrono::steady_clock::now() > end) {
      auto st = client.request({{"op", "status"}}, nullptr, 0, timeout_ms);
      std::cerr << "pcmctl: timed out after " << timeout_s << " s: host " << host << " still runs "
                << used << " processes\n";
      for (const auto& j : st.header.at("jobs"))
        if (j.value("state", "") == "running")
          std::cerr << "  job " << j.value("job", "?") << ": " << j.value("last_event", "") << "\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = pcm::detail::default_config_path();
  int timeout_ms = 5000;
  CLI::App app{"pcmctl — control PCM jobs through pcmd"};
  app.add_option("-c,--config", config_path,
                 "pcmd configuration file (default: $PCM_CONFIG, else ~/.pcm/pcmd.conf)");
  app.add_option("--timeout", timeout_ms, "milliseconds to wait for pcmd")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  app.require_subcommand(1);

  bool as_json = false;
  std::string status_job;
  auto* status = app.add_subcommand("status", "show jobs, sizes, iterations, pending commands");
  status->add_flag("--json", as_json, "print JSON for scripts");
  status->add_option("job", status_job, "only this job");

  std::string job, host;
  int rank = -1;
  auto* migrate = app.add_subcommand("migrate", "move one process of a job to another host");
  migrate->add_option("job", job, "job name (see status)")->required();
  migrate->add_option("rank", rank, "rank to move")->required();
  migrate->add_option("--host", host, "target host (default: chosen by pcmd from its inventory)");
  std::string placement;
  auto placement_check = CLI::IsMember({"spread", "concentrate"});
  migrate->add_option("--placement", placement, "without --host: spread or concentrate")
      ->check(placement_check);

  int into = 0, to = 0;
  std::vector<int> merge_ranks;
  auto* split = app.add_subcommand("split", "split one process's data over more processes (1->N)");
  split->add_option("job", job, "job name")->required();
  split->add_option("rank", rank, "rank to split")->required();
  split->add_option("--into", into, "number of processes it becomes (2 or more)")
      ->required()
      ->check(CLI::Range(2, 1 << 20));
  split->add_option("--host", host, "put the processes it becomes on this host");
  split
      ->add_option("--placement", placement,
                   "without --host: place the new world spread or "
                   "concentrate")
      ->check(placement_check);
  auto* merge = app.add_subcommand("merge", "merge processes' data into one process (N->1)");
  merge->add_option("job", job, "job name")->required();
  merge->add_option("ranks", merge_ranks, "two or more ranks to merge")
      ->required()
      ->expected(2, -1);
  auto* resize = app.add_subcommand("resize", "redistribute over N processes (collective M->N)");
  resize->add_option("job", job, "job name")->required();
  resize->add_option("--to", to, "the new number of processes")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  resize->add_option("--host", host, "put processes added by growing on this host");
  resize
      ->add_option("--placement", placement,
                   "without --host: place a grown world spread or "
                   "concentrate")
      ->check(placement_check);

  // Every command may say why; the job reads it with PCM_Reconfig_reason.
  std::string why;
  for (auto* sub : {migrate, split, merge, resize})
    sub->add_option("--why", why,
                    "the reason passed on to the job (PCM_Reconfig_reason; default \"operator "
                    "command\")");

  // A command's request with the options every command may have (--host, --placement, --why).
  auto with_options = [&](json req) {
    if (!host.empty()) req["host"] = host;
    if (!placement.empty()) req["placement"] = placement;
    if (!why.empty()) req["why"] = why;
    return req;
  };

  std::string host_name, site;
  int slots = 0;
  double latency = -1;
  bool drain_wait = false;
  double drain_timeout = 600;
  auto* hostcmd = app.add_subcommand("host", "the hosts pcmd may place processes on");
  hostcmd->require_subcommand(1);
  auto* host_add =
      hostcmd->add_subcommand("add", "add a host, or change one's slots, site, latency");
  host_add->add_option("name", host_name, "host name")->required();
  host_add->add_option("--slots", slots, "processes it may run")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  host_add->add_option("--site", site, "its site (topology level above hosts; default: default)");
  host_add
      ->add_option("--latency", latency,
                   "declared latency in ms (placement order; else the measured RTT)")
      ->check(CLI::Range(0.0, 1e6));
  auto* host_list = hostcmd->add_subcommand(
      "list", "slots, used, free, site, latency, RTT, state, agent figures");
  host_list->add_flag("--json", as_json, "print JSON for scripts");
  auto* host_drain = hostcmd->add_subcommand(
      "drain", "move every process off a host (migrations, else merges); then it leaves");
  host_drain->add_option("name", host_name, "host name")->required();
  host_drain->add_flag("--wait", drain_wait, "wait until the host has left, printing progress");
  host_drain->add_option("--timeout", drain_timeout, "with --wait: give up after this many seconds")
      ->capture_default_str();
  auto* host_remove = hostcmd->add_subcommand("remove", "remove a host that runs no process");
  host_remove->add_option("name", host_name, "host name")->required();

  long version = -1;
  int keep = 0;
  auto* ckpts = app.add_subcommand("checkpoints", "list a job's committed versions, verified");
  ckpts->add_option("job", job, "job name")->required();
  ckpts->add_flag("--json", as_json, "print JSON for scripts");
  auto* verify = app.add_subcommand("verify", "verify a job's versions (checksums included)");
  verify->add_option("job", job, "job name")->required();
  verify->add_option("iteration", version, "only this version");
  auto* prune = app.add_subcommand("prune", "remove all but the newest versions");
  prune->add_option("job", job, "job name")->required();
  prune->add_option("--keep", keep, "how many to keep (the newest valid one always stays)")
      ->required()
      ->check(CLI::Range(1, 1000000));

  long wait_iteration = -1;
  int wait_reconfigs = -1;
  bool wait_finished = false;
  double wait_timeout = 60;
  auto* wait = app.add_subcommand("wait", "wait until a job reaches a state (for scripts)");
  wait->add_option("job", job, "job name")->required();
  wait->add_option("--iteration", wait_iteration, "until the job has reached this iteration");
  wait->add_option("--reconfigurations", wait_reconfigs,
                   "until this many reconfigurations have completed");
  wait->add_flag("--finished", wait_finished, "until the job has finished");
  bool wait_ended = false;
  wait->add_flag("--ended", wait_ended, "until the job has finished or failed");
  wait->add_option("--timeout", wait_timeout, "give up after this many seconds")
      ->capture_default_str();

  auto* events = app.add_subcommand(
      "events", "a job's last events: commands, their outcome, the policy's decisions and why");
  events->add_option("job", job, "job name")->required();
  events->add_flag("--json", as_json, "print JSON for scripts");
  auto* profile = app.add_subcommand(
      "profile", "a job's last profile: ms per iteration, MPI share, bytes between ranks");
  profile->add_option("job", job, "job name")->required();
  profile->add_flag("--json", as_json, "print JSON for scripts");

  app.add_subcommand("ping", "check that pcmd answers");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every mistake on the command line exits 2, as usage errors
    // do elsewhere (CLI11's own codes, 100 and up, would read like refusals).
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  try {
    auto config = pcm::detail::read_config(config_path);
    zmq::context_t context(1);
    pcm::detail::Client client(context, config.endpoint, config.secret, config.curve);
    if (app.got_subcommand("ping")) {
      auto r = client.request({{"op", "ping"}}, nullptr, 0, timeout_ms);
      std::cout << "pcmd at " << config.endpoint << " (pid " << r.header.value("pid", 0)
                << ") answers\n";
    } else if (app.got_subcommand("status")) {
      json req{{"op", "status"}};
      if (!status_job.empty()) req["job"] = status_job;
      auto r = client.request(req, nullptr, 0, timeout_ms);
      if (as_json) {
        r.header.erase("ok");
        std::cout << r.header.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
      } else {
        print_status_table(r.header);
      }
    } else if (app.got_subcommand("events")) {
      auto r = client.request({{"op", "status"}, {"job", job}}, nullptr, 0, timeout_ms);
      const json& row = r.header.at("jobs").at(0);
      const json& ev = row.at("events");
      const json times = row.value("event_times", json::array());
      if (as_json) {
        std::cout << json{{"job", job}, {"events", ev}, {"times", times}}.dump(
                         2, ' ', false, json::error_handler_t::replace)
                  << "\n";
      } else {
        // "2026-11-25 11:52:03.120  policy: ..." (local time; no time for events from before
        // pcmd kept them).
        for (std::size_t i = 0; i < ev.size(); ++i) {
          const double t = i < times.size() && times[i].is_number() ? times[i].get<double>() : 0;
          std::string when(23, ' ');
          if (t > 0) {
            const std::time_t s = static_cast<std::time_t>(t);
            std::tm tm{};
            localtime_r(&s, &tm);
            when = fmt::format("{:%Y-%m-%d %H:%M:%S}.{:03d}", tm,
                               static_cast<int>((t - static_cast<double>(s)) * 1000));
          }
          std::cout << when << "  " << ev[i].get<std::string>() << "\n";
        }
      }
    } else if (app.got_subcommand("profile")) {
      auto r = client.request({{"op", "profile"}, {"job", job}}, nullptr, 0, timeout_ms);
      const json& p = r.header.at("profile");
      if (as_json) {
        r.header.erase("ok");
        std::cout << r.header.dump(2) << "\n";
      } else if (p.is_null()) {
        std::cout << "job " << job
                  << ": no profile yet (one comes every PCM_PROFILE_MS, if the job's is not 0)\n";
      } else {
        std::cout << fmt::format("job {}: profile received {:.1f} s ago, ", job,
                                 r.header.value("age_s", 0.0))
                  << pcm::detail::JobProfile::from_json(p, 0).describe();
      }
    } else if (app.got_subcommand("migrate")) {
      json req{{"op", "migrate"}, {"job", job}, {"rank", rank}};
      auto r = client.request(with_options(req), nullptr, 0, timeout_ms);
      std::cout << fmt::format("command {}: migrate {} rank {} to {}\n",
                               r.header.value("command", 0), job, rank,
                               r.header.value("host", "?"));
    } else if (app.got_subcommand("split") || app.got_subcommand("merge") ||
               app.got_subcommand("resize")) {
      json req{{"job", job}};
      if (app.got_subcommand("split")) {
        req.update({{"op", "split"}, {"rank", rank}, {"into", into}});
      } else if (app.got_subcommand("merge")) {
        req.update({{"op", "merge"}, {"ranks", merge_ranks}});
      } else {
        req.update({{"op", "resize"}, {"size", to}});
      }
      auto r = client.request(with_options(req), nullptr, 0, timeout_ms);
      std::cout << fmt::format("command {}: {} of job {} -> {} processes",
                               r.header.value("command", 0), r.header.value("text", "?"), job,
                               r.header.value("size", 0));
      if (!r.header.value("hosts", json::array()).empty())
        std::cout << " on "
                  << fmt::format("{}",
                                 fmt::join(r.header["hosts"].get<std::vector<std::string>>(), ","));
      std::cout << "\n";
    } else if (app.got_subcommand("checkpoints") || app.got_subcommand("verify")) {
      json req{{"op", app.got_subcommand("verify") ? "verify" : "checkpoints"}, {"job", job}};
      if (version >= 0) req["iteration"] = version;
      auto r = client.request(req, nullptr, 0, timeout_ms);
      if (as_json) {
        std::cout << r.header.at("versions").dump(2) << "\n";
        return 0;
      }
      bool all_valid = true;
      std::cout << fmt::format("{:>12} {:>6} {:>12}  {}\n", "ITERATION", "PROCS", "BYTES", "STATE");
      for (const auto& v : r.header.at("versions")) {
        bool ok = v.value("valid", false);
        all_valid = all_valid && ok;
        std::cout << fmt::format("{:>12} {:>6} {:>12}  {}\n", v.value("iteration", 0L),
                                 v.value("nprocs", 0), v.value("bytes", 0UL),
                                 ok ? "valid" : "INVALID: " + v.value("why", std::string("?")));
      }
      if (r.header.at("versions").empty()) std::cout << "no versions\n";
      return app.got_subcommand("verify") && !all_valid ? 1 : 0;
    } else if (app.got_subcommand("prune")) {
      auto r =
          client.request({{"op", "prune"}, {"job", job}, {"keep", keep}}, nullptr, 0, timeout_ms);
      std::cout << "removed versions: " << r.header.at("pruned").dump() << "\n";
    } else if (app.got_subcommand("host")) {
      if (host_add->parsed()) {
        json req{{"op", "host_add"}, {"host", host_name}, {"slots", slots}};
        if (!site.empty()) req["site"] = site;
        if (latency >= 0) req["latency"] = latency;
        auto r = client.request(req, nullptr, 0, timeout_ms);
        std::cout << fmt::format("host {} {}: {} slots\n", host_name,
                                 r.header.value("added", false) ? "added" : "updated", slots);
      } else if (host_list->parsed()) {
        auto r = client.request({{"op", "host_list"}}, nullptr, 0, timeout_ms);
        if (as_json) {
          std::cout << r.header.at("hosts").dump(2) << "\n";
        } else {
          print_host_table(r.header.at("hosts"));
        }
      } else if (host_remove->parsed()) {
        client.request({{"op", "host_remove"}, {"host", host_name}}, nullptr, 0, timeout_ms);
        std::cout << "host " << host_name << " removed\n";
      } else {
        client.request({{"op", "host_drain"}, {"host", host_name}}, nullptr, 0, timeout_ms);
        std::cout << "host " << host_name << ": draining\n";
        if (drain_wait) return wait_drained(client, host_name, drain_timeout, timeout_ms);
      }
    } else if (app.got_subcommand("wait")) {
      return wait_for(client, job, wait_iteration, wait_reconfigs, wait_finished, wait_ended,
                      wait_timeout, timeout_ms);
    }
  } catch (const pcm::Error& e) {
    std::cerr << "pcmctl: " << e.what() << " [" << PCM_Error_string(e.code()) << "]\n";
    return e.code() == PCM_ERR_DAEMON || e.code() == PCM_ERR_CONFIG ? 3 : 1;
  } catch (const std::exception& e) {
    std::cerr << "pcmctl: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
