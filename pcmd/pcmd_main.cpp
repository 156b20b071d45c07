// pcmd_main.cpp — the PCM daemon: serves jobs and operators until SIGTERM/SIGINT.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "agent.h"
#include "auth.h"
#include "config.h"
#include "error.h"
#include "hosts.h"
#include "log.h"
#include "pcm_types.h"
#include "protocol.h"
#include "server.h"
#include "slurm/slurm_resources.h"

namespace {

std::atomic<bool> g_stop{false};
// --stop-grace: the first SIGTERM sets g_ending (the server serves its live jobs a while more);
// a second, or SIGINT, g_stop.
std::atomic<bool> g_ending{false};
bool g_grace = false;

extern "C" void on_signal(int sig) {
  if (sig == SIGTERM && g_grace && !g_ending.load())
    g_ending.store(true);
  else
    g_stop.store(true);
}

struct Options {
  std::string config;
  std::string bind = "127.0.0.1";
  int port = 0;
  std::string data_dir;
  std::vector<std::string> hosts;
  std::string hostfile;
  bool slurm = false;  // --slurm: the same as --resources slurm
  // --resources: "slurm", "hosts" (only the hosts given) or "" (slurm inside a Slurm job when no
  // host is given, else hosts)
  std::string resources;
  int slurm_grow_timeout = 120;
  int stop_grace = 0;
  std::string placement = "concentrate";
  int probe_port = 9;
  std::string site = "default";
  std::vector<std::string> site_links;
  bool closed_sites = false;
  bool detach = false;
  std::string pidfile;
  int keep = 3;
  bool curve = false;
  int agent_timeout_ms = 5000;
  std::string policy = "manual";
  pcm::daemon::PolicyConfig policy_config;
  bool agent = false;
  pcm::daemon::AgentOptions agent_options;
};

// Whether pcmd's bind address reaches only this machine.
bool loopback_address(const std::string& a) {
  return a == "localhost" || a == "::1" || a == "[::1]" || a.rfind("127.", 0) == 0;
}

// The hosts of an MPICH hostfile (--hostfile).
std::vector<pcm::common::HostSlots> hostfile_hosts(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw pcm::Error(PCM_ERR_CONFIG, "cannot read --hostfile " + path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return pcm::common::parse_hostfile(text.str());
  } catch (const pcm::Error& e) {
    throw pcm::Error(PCM_ERR_CONFIG, "--hostfile " + path + ": " + e.what());
  }
}

// The server's options from the command line's, without the secret and CURVE keys.
pcm::daemon::ServerOptions server_options(const Options& o) {
  pcm::daemon::ServerOptions so;
  so.bind = "tcp://" + o.bind + ":" + (o.port == 0 ? std::string("*") : std::to_string(o.port));
  so.data_dir = o.data_dir;
  so.hosts = o.hosts;
  if (!o.hostfile.empty()) so.more_hosts = hostfile_hosts(o.hostfile);
  const char* in_job = std::getenv("SLURM_JOB_ID");
  const bool automatic =
      o.resources.empty() && !o.slurm && o.hosts.empty() && o.hostfile.empty() && in_job && *in_job;
  if (o.slurm || o.resources == "slurm" || automatic) {
    if (automatic)
      std::cerr << "pcmd: inside Slurm job " << in_job
                << ", no --hosts: the inventory is its allocation (--resources slurm; "
                   "--resources hosts for localhost only)\n";
    const pcm::daemon::SlurmAllocation a = pcm::daemon::slurm_allocation();
    for (const auto& h : a.hosts) so.slurm_jobs[h.name] = a.job_id;
    so.more_hosts.insert(so.more_hosts.end(), a.hosts.begin(), a.hosts.end());
    so.slurm = a;
    so.slurm_grow_timeout = std::chrono::seconds(o.slurm_grow_timeout);
  }
  so.stop_grace = std::chrono::seconds(o.stop_grace);
  so.placement = *pcm::common::parse_placement(o.placement);
  so.probe_port = o.probe_port;
  so.site = o.site;
  so.closed_sites = o.closed_sites;
  for (const auto& l : o.site_links) so.site_links.push_back(pcm::common::parse_site_link(l));
  so.keep_versions = static_cast<std::size_t>(o.keep);
  so.agent_timeout = std::chrono::milliseconds(o.agent_timeout_ms);
  so.policy_auto = o.policy == "auto";
  so.policy = o.policy_config;
  return so;
}

// Checks that the configuration and data are private, and sets so's secret and CURVE keys;
// returns the keys clients get through the configuration file.
pcm::common::CurveClientKeys secure(const Options& o, pcm::daemon::ServerOptions& so) {
  // Private by default: refuse what another user could read or change.
  const std::string config_dir = std::filesystem::path(o.config).parent_path().string();
  pcm::common::check_private_dir(config_dir.empty() ? "." : config_dir,
                                 "the configuration directory");
  pcm::common::check_private_file(o.config, "the configuration file");
  pcm::common::check_private_dir(o.data_dir, "the data directory");
  // Keep the secret (and CURVE keys) of an earlier pcmd with the same configuration file, so
  // that jobs that read it survive a restart of pcmd on a fixed port.
  std::optional<pcm::common::Config> earlier;
  try {
    earlier = pcm::common::read_config(o.config);
  } catch (const pcm::Error&) {
  }
  so.secret = earlier ? earlier->secret : pcm::common::random_secret();
  pcm::common::check_secret_strength(so.secret, o.config);
  // CURVE on every bind beyond loopback (and on loopback with --curve).
  pcm::common::CurveClientKeys client_keys;
  if (o.curve || !loopback_address(o.bind)) {
    std::string server_secret = pcm::common::read_server_key(o.config);
    // The earlier keys, if the key file still belongs to that configuration.
    if (earlier && earlier->curve.enabled() && !server_secret.empty() &&
        pcm::common::curve_public_of(server_secret) == earlier->curve.server_public) {
      client_keys = earlier->curve;
    } else {
      auto server = pcm::common::curve_keypair();
      auto client = pcm::common::curve_keypair();
      server_secret = server.secret_key;
      client_keys = {server.public_key, client.public_key, client.secret_key};
      pcm::common::write_server_key(o.config, server_secret);
    }
    so.curve = {server_secret, client_keys.public_key};
  }
  return client_keys;
}

// The part that runs in the daemon process. ready_fd (or -1): where to tell the parent that the
// configuration file is written ("ok") or why start-up failed.
int serve(const Options& o, int ready_fd) {
  auto log = pcm::common::logger("pcmd", spdlog::level::info);
  auto tell = [&](const std::string& msg) {
    if (ready_fd >= 0) {
      (void)!::write(ready_fd, msg.data(), msg.size());
      ::close(ready_fd);
      ready_fd = -1;
    }
  };
  std::string pidfile_written;
  try {
    pcm::daemon::ServerOptions so = server_options(o);
    const pcm::common::CurveClientKeys client_keys = secure(o, so);
    zmq::context_t context(1);
    pcm::daemon::Server server(context, so);
    if (!o.pidfile.empty()) {
      std::ofstream(o.pidfile) << ::getpid() << "\n";
      pidfile_written = o.pidfile;
    }
    pcm::common::write_config(o.config,
                              {server.endpoint(), so.secret, static_cast<long>(::getpid()),
                               server.watch_endpoint(), client_keys});
    log->info(
        "listening on {}{}; configuration in {}; data in {}", server.endpoint(),
        so.curve.enabled() ? " (CURVE: encrypted, client key checked)" : " (loopback, no CURVE)",
        o.config, o.data_dir);
    tell("ok");
    g_grace = so.stop_grace.count() > 0;
    server.run(g_stop, &g_ending);
    // The configuration file stays: a pcmd started again takes its secret, and the jobs that
    // outlive this one find the new pcmd through it (pcmctl says pcmd does not answer).
    log->info("stopping");
  } catch (const std::exception& e) {
    log->error("{}", e.what());
    tell(std::string("error: ") + e.what());
    if (!pidfile_written.empty()) ::unlink(pidfile_written.c_str());
    return 1;
  }
  if (!pidfile_written.empty()) ::unlink(pidfile_written.c_str());
  return 0;
}

// The daemon's options: where it listens, keeps data and finds hosts.
void add_server_options(CLI::App& app, Options& o) {
  app.add_option("-c,--config", o.config,
                 "configuration file to write (default: $PCM_CONFIG, else ~/.pcm/pcmd.conf)");
  app.add_option("--bind", o.bind, "address to listen on")->capture_default_str();
  app.add_option("-p,--port", o.port, "TCP port; 0 picks a free one")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("-d,--data-dir", o.data_dir, "directory for stored data")->capture_default_str();
  app.add_option(
         "--hosts", o.hosts,
         "hosts that reconfigurations may use, each NAME[:SLOTS][@SITE] (the site: a domain "
         "reached through its front-end's relay, docs/ops/sites.md; default: localhost and "
         "this host's name)")
      ->delimiter(',');
  app.add_option("--hostfile", o.hostfile,
                 "more hosts from an MPICH hostfile (lines 'host' or 'host:slots')");
  app.add_option("--resources", o.resources,
                 "slurm: more hosts, the whole Slurm allocation pcmd runs in (scontrol show job "
                 "$SLURM_JOB_ID; each node's CPUs are its slots), each tagged with its job, and "
                 "second allocations for commands that do not fit; hosts: only the hosts given. "
                 "Default: slurm when started inside a Slurm job with no --hosts or --hostfile")
      ->check(CLI::IsMember({"slurm", "hosts"}));
  app.add_option("--slurm-grow-timeout", o.slurm_grow_timeout,
                 "seconds a command that does not fit waits for a second Slurm allocation "
                 "before it is refused (--resources slurm)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_flag("--slurm", o.slurm, "the same as --resources slurm");
  app.add_option("--stop-grace", o.stop_grace,
                 "seconds pcmd, sent SIGTERM, goes on serving running jobs until they end (a "
                 "preemption: their last versions; a second SIGTERM ends it at once)")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  app.add_option("--placement", o.placement,
                 "where new processes go when a job or command says nothing: spread or "
                 "concentrate")
      ->check(CLI::IsMember({"spread", "concentrate"}))
      ->capture_default_str();
  app.add_option("--site", o.site,
                 "pcmd's own site: with --closed-sites, hosts of other sites (--hosts NAME@SITE, "
                 "agents' --agent-site) are behind their front-end's relay and not probed")
      ->check([](const std::string& s) {
        return pcm::proto::valid_name(s) ? std::string() : "not a valid site name: " + s;
      })
      ->capture_default_str();
  app.add_flag("--closed-sites", o.closed_sites,
               "sites are administrative domains closed to one another (docs/ops/sites.md): a "
               "job spans two sites only where --site-link opens MPI between them, and hosts "
               "outside --site are not probed; without this flag a site is a topology level "
               "and jobs span sites freely");
  app.add_option("--site-link", o.site_links,
                 "A:B:LOW-HIGH: jobs may span sites A and B, whose firewalls open TCP ports "
                 "LOW-HIGH for MPI between them (the jobs keep MPI to that range); a command "
                 "that would spread a job over sites with no link is refused (repeatable)");
  app.add_option("--probe-port", o.probe_port,
                 "TCP port whose answer (accept or refusal) times each host's round trip; 0: "
                 "measure nothing (no name lookups)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--keep", o.keep, "committed checkpoint versions kept per job")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_flag("--curve", o.curve,
               "encrypt and authenticate with CURVE on loopback too (always on for any other "
               "address)");
  app.add_flag("--detach", o.detach, "run in the background once listening");
  app.add_option("--pidfile", o.pidfile, "write the daemon's (or the agent's) pid to this file");
  app.add_option("--agent-timeout-ms", o.agent_timeout_ms,
                 "a host whose agent has not reported for this long is lost (drained, removed)")
      ->check(CLI::Range(100, 86400000))
      ->capture_default_str();
}

// --policy and the figures --policy auto decides with.
void add_policy_options(CLI::App& app, Options& o) {
  app.add_option("--policy", o.policy,
                 "manual: jobs change only by commands (pcmctl); auto: pcmd also grows, shrinks "
                 "and moves them by itself from their iteration rates and the agents' reports "
                 "(a pcmctl command always takes precedence)")
      ->check(CLI::IsMember({"manual", "auto"}))
      ->capture_default_str();
  auto& pc = o.policy_config;
  // The policy's figures: "--policy auto: " + what, within [lo, hi], default shown.
  auto policy_option = [&](const char* name, double& value, const std::string& what, double lo,
                           double hi) {
    app.add_option(name, value, "--policy auto: " + what)
        ->check(CLI::Range(lo, hi))
        ->capture_default_str();
  };
  policy_option("--policy-interval-s", pc.min_interval_s,
                "least time between two decisions for one job, and after an operator's command",
                0.0, 86400.0);
  policy_option("--policy-measure-s", pc.measure_s,
                "how long a growth runs before its rate decides keep or undo (the rate is "
                "measured over the last 4 s)",
                4.0, 86400.0);
  policy_option("--policy-min-gain", pc.min_gain,
                "the rise in iterations/s a growth must bring (0.05: 5 %; negative: a growth is "
                "kept unless the rate falls by more than that share)",
                -1.0, 100.0);
  policy_option("--policy-min-efficiency", pc.min_efficiency,
                "a growth is also kept if the rate rose by this share of the added processes' "
                "linear speed-up, when that is below --policy-min-gain (wide jobs)",
                0.0, 1.0);
  app.add_flag("--policy-shrink-if-enough", pc.shrink_if_enough,
               "--policy auto with --resources slurm: jobs leave nodes for a waiting job only if "
               "all that they could give back would let it start (default: they leave them "
               "anyway, other jobs' ends may make up the rest)");
  policy_option("--policy-sustain-s", pc.load_sustain_s,
                "how long a host's competing load must stay high before jobs leave it", 0.0,
                86400.0);
  policy_option("--policy-load-high", pc.load_high,
                "a host whose competing load (runnable tasks beyond the PCM processes there) "
                "stays above this is left",
                0.0, 1e6);
  policy_option("--policy-load-low", pc.load_low,
                "a host is quiet (may receive processes, and stops counting as loaded) below "
                "this competing load; at most --policy-load-high",
                0.0, 1e6);
  policy_option("--policy-retry-s", pc.retry_after_s,
                "after a decision pcmd refused or the job failed to carry out, no decision for "
                "that job for this long",
                0.0, 86400.0);
  policy_option("--policy-cap-s", pc.cap_s,
                "after a growth was undone, the job is not grown past its size for this long", 0.0,
                86400.0);
  policy_option("--policy-idle-s", pc.idle_s,
                "with --resources slurm: a node Slurm has idle this long, with no job waiting, "
                "may be grown onto",
                0.0, 86400.0);
  policy_option("--policy-checkpoint-margin-s", pc.checkpoint_margin_s,
                "with --resources slurm: this long before the allocation's time limit, every job "
                "is asked once for a checkpoint (written at its next PCM_Adapt), and nothing grows "
                "(0: 30 s + 4 x the longest last version of a running job; 300 s until measured)",
                0.0, 31536000.0);
  app.add_option("--policy-min-procs", pc.min_procs,
                 "--policy auto with --resources slurm: no job is shrunk below this many "
                 "processes to give a node back to a job waiting in the queue")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
}

// --agent and what the agent reports.
void add_agent_options(CLI::App& app, Options& o) {
  auto& ao = o.agent_options;
  app.add_flag("--agent", o.agent,
               "run as this host's agent instead: join the inventory of the pcmd that -c names, "
               "report cores and load every period, on SIGTERM have the host drained and leave");
  app.add_option("--agent-host", ao.host, "with --agent: the host's name (default: hostname)");
  app.add_option("--agent-slots", ao.slots, "with --agent: its slots (default: one per core)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--agent-site", ao.site, "with --agent: its site");
  app.add_option("--agent-period-ms", ao.period_ms, "with --agent: report period")
      ->check(CLI::Range(50, 3600000))
      ->capture_default_str();
  app.add_flag("--agent-own-namespace", ao.own_namespace,
               "with --agent: the host's load is the tasks of this network namespace only (hosts "
               "that are namespaces of one machine, whose CPUs run other work too)");
  app.add_option("--agent-leave-timeout", ao.leave_timeout_s,
                 "with --agent: seconds a leave waits for the host's drain")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// pcmd --agent: this host's agent, until SIGTERM or SIGINT.
int agent_main(const Options& o) {
  pcm::daemon::AgentOptions ao = o.agent_options;
  ao.config = o.config;
  if (!o.pidfile.empty()) std::ofstream(o.pidfile) << ::getpid() << "\n";
  const int rc = pcm::daemon::run_agent(ao, g_stop);
  if (!o.pidfile.empty()) ::unlink(o.pidfile.c_str());
  return rc;
}

// pcmd --detach: serves in a child process of its own session.
int serve_detached(const Options& o) {
  // Fork before any ZeroMQ thread exists; the parent returns only once the child is listening,
  // so a script can use the configuration file as soon as `pcmd --detach` returns.
  int fds[2];
  if (::pipe(fds) != 0) {
    std::cerr << "pcmd: pipe: " << std::strerror(errno) << "\n";
    return 1;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    std::cerr << "pcmd: fork: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::setsid();
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      ::close(devnull);
    }
    return serve(o, fds[1]);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  if (msg != "ok") {
    std::cerr << "pcmd: failed to start: " << (msg.empty() ? "daemon exited" : msg) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Private by default: the data directory, stored data, versions and manifests are the user's
  // alone (0700 directories, 0600 files), whatever the caller's umask.
  ::umask(077);
  Options o;
  const char* home = std::getenv("HOME");
  o.config = pcm::common::default_config_path();
  o.data_dir = std::string(home && *home ? home : ".") + "/.pcm/data";
  CLI::App app{"pcmd — the PCM daemon: reconfiguration commands and stored data for PCM jobs"};
  add_server_options(app, o);
  add_policy_options(app, o);
  add_agent_options(app, o);
  CLI11_PARSE(app, argc, argv);
  const auto& pc = o.policy_config;
  if (pc.load_low > pc.load_high) {
    std::cerr << "pcmd: --policy-load-low (" << pc.load_low
              << ") must not exceed --policy-load-high (" << pc.load_high << ")\n";
    return 2;
  }
  install_signal_handlers();
  if (o.agent) return agent_main(o);
  if (!o.detach) return serve(o, -1);
  return serve_detached(o);
}
