// pcmctl.cpp — the operator's CLI for pcmd: job status and reconfiguration commands.
#include "pcmctl.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>

#include "cli.h"
#include "error.h"
#include "launchers.h"
#include "pcm_types.h"
#include "profile.h"

namespace pcm::ctl {

void on_run(CLI::App* sub, Cli& cli, std::function<int(Connection&)> run) {
  sub->callback([&cli, run = std::move(run)] {
    try {
      Connection pcmd(cli.connect);
      cli.exit_code = run(pcmd);
    } catch (const pcm::Error& e) {
      std::cerr << "pcmctl: " << e.what() << " [" << PCM_Error_string(e.code()) << "]\n";
      cli.exit_code = e.code() == PCM_ERR_DAEMON || e.code() == PCM_ERR_CONFIG ? 3 : 1;
    } catch (const std::exception& e) {
      std::cerr << "pcmctl: " << e.what() << "\n";
      cli.exit_code = 1;
    }
  });
}

namespace {

using proto::json;

// What `pcmctl wait` waits for; a negative number or false: no condition on it.
struct WaitCondition {
  long iteration = -1;
  int reconfigurations = -1;
  bool finished = false;
  bool ended = false;  // finished or failed
};

// Polls the job every 50 ms until every condition holds (exit 0); exit 1 on timeout or when the
// job finished without meeting them. An unknown job is waited for: it may not have registered yet.
int wait_for(Connection& pcmd, const std::string& job, const WaitCondition& until,
             double timeout_s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string last = "not registered";
  while (true) {
    try {
      const json r = pcmd.request(req_status(job));
      const auto& j = r.at("jobs").at(0);
      const std::string state = j.value("state", "");
      bool done = state == "finished" || state == "failed" || state == "stopped";
      bool met = (until.iteration < 0 || j.value("iteration", 0L) >= until.iteration) &&
                 (until.reconfigurations < 0 ||
                  j.value("reconfigurations", 0) >= until.reconfigurations) &&
                 (!until.finished || state == "finished") && (!until.ended || done);
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

// Polls the inventory until host has left it (exit 0), printing a line whenever the number of
// processes on it changes; exit 1 on timeout, printing what holds it.
int wait_drained(Connection& pcmd, const std::string& host, double timeout_s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int last = -1;
  while (true) {
    const json r = pcmd.request(req_host_list());
    const json* row = nullptr;
    for (const auto& h : r.at("hosts"))
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
      const json st = pcmd.request(req_status());
      std::cerr << "pcmctl: timed out after " << timeout_s << " s: host " << host << " still runs "
                << used << " processes\n";
      for (const auto& j : st.at("jobs"))
        if (j.value("state", "") == "running")
          std::cerr << "  job " << j.value("job", "?") << ": " << j.value("last_event", "") << "\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Each subcommand's options live in a struct of its own, held by its callback.

void add_ping(CLI::App& app, Cli& cli) {
  auto* sub = app.add_subcommand("ping", "check that pcmd answers");
  on_run(sub, cli, [](Connection& pcmd) {
    const json r = pcmd.request(req_ping());
    std::cout << "pcmd at " << pcmd.endpoint() << " (pid " << r.value("pid", 0) << ") answers\n";
    return 0;
  });
}

void add_status(CLI::App& app, Cli& cli) {
  struct Args {
    bool as_json = false;
    std::string job;  // "": every job
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("status", "show jobs, sizes, iterations, pending commands");
  sub->add_flag("--json", a->as_json, "print JSON for scripts");
  sub->add_option("job", a->job, "only this job");
  on_run(sub, cli, [a](Connection& pcmd) {
    json r = pcmd.request(a->job.empty() ? req_status() : req_status(a->job));
    if (a->as_json) {
      r.erase("ok");
      std::cout << r.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    } else {
      print_status_table(r);
    }
    return 0;
  });
}

// --host and --placement of the commands that place new processes.
void add_where(CLI::App* sub, Target& target, const std::string& host_help,
               const std::string& placement_help) {
  sub->add_option("--host", target.host, host_help);
  sub->add_option("--placement", target.placement, placement_help)
      ->check(CLI::IsMember({"spread", "concentrate"}));
}

// Every command may say why; the job reads it with PCM_Reconfig_reason.
void add_why(CLI::App* sub, Target& target) {
  sub->add_option("--why", target.why,
                  "the reason passed on to the job (PCM_Reconfig_reason; default \"operator "
                  "command\")");
}

void add_migrate(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    int rank = -1;
    Target target;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("migrate", "move one process of a job to another host");
  sub->add_option("job", a->job, "job name (see status)")->required();
  sub->add_option("rank", a->rank, "rank to move")->required();
  add_where(sub, a->target, "target host (default: chosen by pcmd from its inventory)",
            "without --host: spread or concentrate");
  add_why(sub, a->target);
  on_run(sub, cli, [a](Connection& pcmd) {
    const json r = pcmd.request(req_migrate(a->job, a->rank, a->target));
    if (r.value("allocating", false)) {
      print_reshape(r, a->job);
      return 0;
    }
    std::cout << fmt::format("command {}: migrate {} rank {} to {}\n", r.value("command", 0),
                             a->job, a->rank, r.value("host", "?"));
    return 0;
  });
}

void add_split(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    int rank = -1;
    int into = 0;
    Target target;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("split", "split one process's data over more processes (1->N)");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_option("rank", a->rank, "rank to split")->required();
  sub->add_option("--into", a->into, "number of processes it becomes (2 or more)")
      ->required()
      ->check(CLI::Range(2, 1 << 20));
  add_where(sub, a->target, "put the processes it becomes on this host",
            "without --host: place the new world spread or concentrate");
  add_why(sub, a->target);
  on_run(sub, cli, [a](Connection& pcmd) {
    print_reshape(pcmd.request(req_split(a->job, a->rank, a->into, a->target)), a->job);
    return 0;
  });
}

void add_merge(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    std::vector<int> ranks;
    Target target;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("merge", "merge processes' data into one process (N->1)");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_option("ranks", a->ranks, "two or more ranks to merge")->required()->expected(2, -1);
  add_why(sub, a->target);
  on_run(sub, cli, [a](Connection& pcmd) {
    print_reshape(pcmd.request(req_merge(a->job, a->ranks, a->target)), a->job);
    return 0;
  });
}

void add_resize(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    int to = 0;
    Target target;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("resize", "redistribute over N processes (collective M->N)");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_option("--to", a->to, "the new number of processes")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  add_where(sub, a->target, "put processes added by growing on this host",
            "without --host: place a grown world spread or concentrate");
  add_why(sub, a->target);
  on_run(sub, cli, [a](Connection& pcmd) {
    print_reshape(pcmd.request(req_resize(a->job, a->to, a->target)), a->job);
    return 0;
  });
}

void add_host_add(CLI::App* host, Cli& cli) {
  struct Args {
    std::string name, site;
    int slots = 0;
    double latency = -1;
  };
  auto a = std::make_shared<Args>();
  auto* sub = host->add_subcommand("add", "add a host, or change one's slots, site, latency");
  sub->add_option("name", a->name, "host name")->required();
  sub->add_option("--slots", a->slots, "processes it may run")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--site", a->site, "its site (topology level above hosts; default: default)");
  sub->add_option("--latency", a->latency,
                  "declared latency in ms (placement order; else the measured RTT)")
      ->check(CLI::Range(0.0, 1e6));
  on_run(sub, cli, [a](Connection& pcmd) {
    const json r = pcmd.request(req_host_add(a->name, a->slots, a->site, a->latency));
    std::cout << fmt::format("host {} {}: {} slots\n", a->name,
                             r.value("added", false) ? "added" : "updated", a->slots);
    return 0;
  });
}

void add_host_list(CLI::App* host, Cli& cli) {
  auto as_json = std::make_shared<bool>(false);
  auto* sub = host->add_subcommand(
      "list", "slots, used, free, site, latency, RTT, state, Slurm job, agent figures");
  sub->add_flag("--json", *as_json, "print JSON for scripts");
  on_run(sub, cli, [as_json](Connection& pcmd) {
    const json r = pcmd.request(req_host_list());
    if (*as_json) {
      std::cout << r.at("hosts").dump(2) << "\n";
    } else {
      print_host_table(r.at("hosts"));
    }
    return 0;
  });
}

void add_host_drain(CLI::App* host, Cli& cli) {
  struct Args {
    std::string name;
    bool wait = false;
    double timeout_s = 600;
  };
  auto a = std::make_shared<Args>();
  auto* sub = host->add_subcommand(
      "drain", "move every process off a host (migrations, else merges); then it leaves");
  sub->add_option("name", a->name, "host name")->required();
  sub->add_flag("--wait", a->wait, "wait until the host has left, printing progress");
  sub->add_option("--timeout", a->timeout_s, "with --wait: give up after this many seconds")
      ->capture_default_str();
  on_run(sub, cli, [a](Connection& pcmd) {
    pcmd.request(req_host_drain(a->name));
    std::cout << "host " << a->name << ": draining\n";
    return a->wait ? wait_drained(pcmd, a->name, a->timeout_s) : 0;
  });
}

void add_host_remove(CLI::App* host, Cli& cli) {
  auto name = std::make_shared<std::string>();
  auto* sub = host->add_subcommand("remove", "remove a host that runs no process");
  sub->add_option("name", *name, "host name")->required();
  on_run(sub, cli, [name](Connection& pcmd) {
    pcmd.request(req_host_remove(*name));
    std::cout << "host " << *name << " removed\n";
    return 0;
  });
}

void add_host(CLI::App& app, Cli& cli) {
  auto* host = app.add_subcommand("host", "the hosts pcmd may place processes on");
  host->require_subcommand(1);
  add_host_add(host, cli);
  add_host_list(host, cli);
  add_host_drain(host, cli);
  add_host_remove(host, cli);
}

void add_run(CLI::App& app, Cli& cli) {
  auto a = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand(
      "run",
      "launch a job and relaunch it from its newest valid version when a run fails: pcmctl run "
      "-n N [--job NAME] [--max-restarts K] [--on-inventory [--min M]] -- PROGRAM ARGS...");
  sub->add_option("-n,--np", a->np, "processes")->required()->check(CLI::Range(1, 1 << 20));
  sub->add_option("--job", a->job, "the job's name (PCM_JOB; default: $PCM_JOB, else run-PID)");
  sub->add_option("--max-restarts", a->max_restarts, "relaunches at most")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  sub->add_option("--launcher", a->launcher,
                  "mpiexec (hydra's or Open MPI's), or srun: each run a step of this Slurm "
                  "allocation, reshaped by restart (PCM_RESHAPE=restart unless set)")
      ->check(CLI::IsMember({"mpiexec", "srun"}))
      ->capture_default_str();
  sub->add_option("--mpiexec", a->mpiexec,
                  "the launcher's program (default: srun for --launcher srun, else $MPIEXEC, else "
                  "mpiexec)");
  sub->add_option("--mpiexec-arg", a->mpiexec_args,
                  "an argument of the launcher, before -n (repeat; {hosts}: the run's hosts; "
                  "{launcher:NAME}: the path of PCM's launcher_NAME.sh, e.g. slurm, hosts)")
      ->allow_extra_args(false);  // one value each: "--" still starts the program
  sub->add_flag("--on-inventory", a->on_inventory,
                "each run goes on pcmd's hosts that are up and answer, at as many processes as "
                "their free slots hold (--min to -n)");
  sub->add_option("--min", a->min_np, "with --on-inventory: the fewest processes a run may have")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  sub->add_option("--probe-port", a->probe_port,
                  "with --on-inventory: the TCP port a host must answer on (connect or refuse)")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  sub->add_option("--start-timeout-s", a->start_timeout_s,
                  "a run not registered with pcmd by then is ended and counts as lost")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  sub->add_flag("--requeue", a->requeue,
                "a run that ends stopped (a signal: docs/user/preemption.md) requeues its Slurm "
                "job; a new run resumes from the newest version");
  sub->add_option("--finish-grace-s", a->finish_grace_s,
                  "a launcher still there this long after the job finished is ended (exit 0)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  add_run_site_options(sub, *a);
  sub->add_option("command", a->command, "the program and its arguments (after --)")->required();
  on_run(sub, cli, [a](Connection& pcmd) {
    for (auto& arg : a->mpiexec_args) arg = expand_launchers(std::move(arg));
    for (auto& spec : a->site_launcher_specs) spec = expand_launchers(std::move(spec));
    finish_run_site_options(*a);
    if (a->job.empty()) {
      const char* env = std::getenv("PCM_JOB");
      a->job = env && *env ? env : fmt::format("run-{}", ::getpid());
    }
    if (!proto::valid_name(a->job)) fail(PCM_ERR_ARG, "invalid job name '{}'", a->job);
    if (a->mpiexec.empty() && a->launcher == "srun") a->mpiexec = "srun";
    if (a->mpiexec.empty()) {
      const char* env = std::getenv("MPIEXEC");
      a->mpiexec = env && *env ? env : "mpiexec";
    }
    if (a->min_np > a->np) fail(PCM_ERR_ARG, "--min {} is more than -n {}", a->min_np, a->np);
    return run_supervised(pcmd, *a);
  });
}

void add_site_env(CLI::App& app, Cli& cli) {
  auto sites = std::make_shared<std::vector<std::string>>();
  auto* sub = app.add_subcommand(
      "site-env",
      "print the MPI port-range variables a job needs to span pcmd's linked sites (eval \"$(pcmctl "
      "site-env)\"); pcmctl run sets them itself");
  sub->add_option("--site", *sites, "only the links of this site (repeat)");
  on_run(sub, cli, [sites](Connection& pcmd) { return print_site_env(pcmd, *sites); });
}

void add_move(CLI::App& app, Cli& cli) {
  auto a = std::make_shared<MoveOptions>();
  auto* sub = app.add_subcommand(
      "move", "move a job run by `pcmctl run` to another site: last version, stop, restart there");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_option("--site", a->site, "the site to move it to")->required();
  sub->add_option("--wait", a->wait_s,
                  "wait this many seconds for the move to end (exit 1: failed)");
  sub->add_option("--start-wait", a->start_wait_s,
                  "a job not running yet (its pcmctl run has not launched it, or it is between "
                  "two runs): wait this many seconds for its run to register (0: ask at once)")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  on_run(sub, cli, [a](Connection& pcmd) { return move_job(pcmd, *a); });
}

void add_wait(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    WaitCondition until;
    double timeout_s = 60;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("wait", "wait until a job reaches a state (for scripts)");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_option("--iteration", a->until.iteration, "until the job has reached this iteration");
  sub->add_option("--reconfigurations", a->until.reconfigurations,
                  "until this many reconfigurations have completed");
  sub->add_flag("--finished", a->until.finished, "until the job has finished");
  sub->add_flag("--ended", a->until.ended, "until the job has finished, failed or stopped");
  sub->add_option("--timeout", a->timeout_s, "give up after this many seconds")
      ->capture_default_str();
  on_run(sub, cli,
         [a](Connection& pcmd) { return wait_for(pcmd, a->job, a->until, a->timeout_s); });
}

void add_events(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    bool as_json = false;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "events", "a job's last events: commands, their outcome, the policy's decisions and why");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_flag("--json", a->as_json, "print JSON for scripts");
  on_run(sub, cli, [a](Connection& pcmd) {
    const json r = pcmd.request(req_status(a->job));
    const json& row = r.at("jobs").at(0);
    const json& events = row.at("events");
    const json times = row.value("event_times", json::array());
    if (a->as_json) {
      std::cout << json{{"job", a->job}, {"events", events}, {"times", times}}.dump(
                       2, ' ', false, json::error_handler_t::replace)
                << "\n";
    } else {
      print_events(events, times);
    }
    return 0;
  });
}

void add_profile(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    bool as_json = false;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "profile", "a job's last profile: ms per iteration, MPI share, bytes between ranks");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_flag("--json", a->as_json, "print JSON for scripts");
  on_run(sub, cli, [a](Connection& pcmd) {
    json r = pcmd.request(req_profile(a->job));
    const json& p = r.at("profile");
    if (a->as_json) {
      r.erase("ok");
      std::cout << r.dump(2) << "\n";
    } else if (p.is_null()) {
      std::cout << "job " << a->job
                << ": no profile yet (one comes every PCM_PROFILE_MS, if the job's is not 0)\n";
    } else {
      std::cout << fmt::format("job {}: profile received {:.1f} s ago, ", a->job,
                               r.value("age_s", 0.0))
                << JobProfile::from_json(p, 0).describe();
    }
    return 0;
  });
}

}  // namespace
}  // namespace pcm::ctl

int main(int argc, char** argv) {
  using namespace pcm::ctl;
  Cli cli;
  cli.connect.config_path = default_config_path();
  CLI::App app{"pcmctl — control PCM jobs through pcmd"};
  app.add_option("-c,--config", cli.connect.config_path,
                 "pcmd configuration file (default: $PCM_CONFIG, else ~/.pcm/pcmd.conf)");
  app.add_option("--timeout", cli.connect.timeout_ms, "milliseconds to wait for pcmd")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  app.require_subcommand(1);
  // In this order in --help.
  for (auto add : {add_status, add_migrate, add_split, add_merge, add_resize, add_host,
                   add_checkpoints, add_checkpoint, add_stop, add_verify, add_run, add_move,
                   add_prune, add_wait, add_events, add_profile, add_site_env, add_ping})
    add(app, cli);
  try {
    app.parse(argc, argv);  // runs the subcommand's callback
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every mistake on the command line exits 2, as usage errors
    // do elsewhere (CLI11's own codes, 100 and up, would read like refusals).
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return cli.exit_code;
}
