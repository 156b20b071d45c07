// agent.cpp — a host's agent (agent.h).
#include "agent.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>

#include "client.h"
#include "config.h"
#include "error.h"
#include "log.h"
#include "ops.h"
#include "pcm_types.h"

namespace pcm::daemon {

using proto::json;

CpuTimes cpu_times(const std::string& proc_stat, const std::vector<int>& cpus) {
  CpuTimes t;
  std::istringstream in(proc_stat);
  std::string line;
  while (std::getline(in, line)) {
    // "cpuN user nice system idle iowait irq softirq steal ..." (the "cpu " line is the sum).
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream f(line.substr(3));
    int id = -1;
    f >> id;
    if (std::find(cpus.begin(), cpus.end(), id) == cpus.end()) continue;
    std::uint64_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (auto& x : v) f >> x;
    const std::uint64_t idle = v[3] + v[4];
    const std::uint64_t total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    t.busy += total - idle;
    t.total += total;
  }
  return t;
}

double busy_cores(const CpuTimes& before, const CpuTimes& after, int n) {
  if (after.total <= before.total || after.busy < before.busy) return 0;
  const double frac = static_cast<double>(after.busy - before.busy) /
                      static_cast<double>(after.total - before.total);
  return std::min(1.0, std::max(0.0, frac)) * n;
}

bool task_runnable(const std::string& stat, int* cpu) {
  *cpu = -1;
  // "pid (comm) S ppid ..." where comm may hold spaces and parentheses: fields after the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream f(stat.substr(close + 1));
  std::string field;
  std::vector<std::string> fields;
  while (f >> field) fields.push_back(field);
  // fields[0] is the state (field 3); the processor is field 39, fields[36].
  if (fields.size() < 37) return false;
  try {
    *cpu = std::stoi(fields[36]);
  } catch (const std::exception&) {
    *cpu = -1;
  }
  return fields[0] == "R";
}

namespace {

std::string read_file(const char* path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The CPUs this agent may run on: the host's (a namespace host of testbed/hosts.sh is pinned to
// its own; a real host has them all).
std::vector<int> my_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  if (cpus.empty())
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN); ++c) cpus.push_back(static_cast<int>(c));
  return cpus;
}

// The network namespace of process pid ("self" for this one), as its /proc link names it ("":
// unknown, e.g. the process has ended).
std::string net_namespace(const std::string& pid) {
  char link[64] = {0};
  const std::string path = "/proc/" + pid + "/ns/net";
  const ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
  return n > 0 ? std::string(link, static_cast<std::size_t>(n)) : std::string();
}

// Runnable tasks on cpus (those that last ran there), this agent excluded; with a namespace (not
// "") only those of processes in that network namespace (AgentOptions::own_namespace). With every
// CPU of the machine and every namespace: /proc/stat's procs_running; otherwise (a namespace host
// pinned to its CPUs) a scan of every task.
double runnable_on(const std::vector<int>& cpus, const std::string& namespace_only) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (static_cast<long>(cpus.size()) >= online && namespace_only.empty()) {
    std::istringstream in(read_file("/proc/stat"));
    std::string key;
    long value = 0;
    while (in >> key) {
      if (key == "procs_running" && in >> value) return std::max(0L, value - 1);
      in.ignore(1 << 20, '\n');
    }
    return 0;
  }
  const std::string self = std::to_string(::getpid());
  int count = 0;
  std::error_code ec;
  for (const auto& p : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = p.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid == self)
      continue;
    if (!namespace_only.empty() && net_namespace(pid) != namespace_only) continue;
    std::error_code tec;
    for (const auto& t : std::filesystem::directory_iterator(p.path() / "task", tec)) {
      int cpu = -1;
      if (task_runnable(read_file((t.path() / "stat").c_str()), &cpu) &&
          std::find(cpus.begin(), cpus.end(), cpu) != cpus.end())
        ++count;
    }
  }
  return count;
}

double load1() {
  std::istringstream in(read_file("/proc/loadavg"));
  double l = 0;
  in >> l;
  return l;
}

// Sleeps ms, or less once stop is set.
void nap(int ms, const std::atomic<bool>& stop) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stop.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, 50)));
}

// The host's name in the inventory: the one given, else gethostname(); "" (logged) if unusable.
std::string host_name(const AgentOptions& o, spdlog::logger& log) {
  std::string host = o.host;
  if (host.empty()) {
    char name[256] = {0};
    if (::gethostname(name, sizeof name - 1) != 0 || !proto::valid_host(name)) {
      log.error("this host's name is not usable: give one with --host");
      return "";
    }
    host = name;
  }
  if (!proto::valid_host(host)) {
    log.error("invalid host name '{}'", host);
    return "";
  }
  return host;
}

// Runnable tasks on cpus, sampled every 100 ms over a period and averaged (0 if stopped at once).
double mean_runnable(const std::vector<int>& cpus, const std::string& namespace_only, int period_ms,
                     const std::atomic<bool>& stop) {
  double runnable = 0;
  int samples = 0;
  const auto period_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(period_ms);
  while (!stop.load() && std::chrono::steady_clock::now() < period_end) {
    runnable += runnable_on(cpus, namespace_only);
    ++samples;
    nap(std::min(period_ms, 100), stop);
  }
  return samples ? runnable / samples : 0.0;
}

// Once pcmd drains the host: waits until it has left the inventory (0), logging progress and
// sending report() meanwhile, since a draining host whose agent falls silent would be marked
// lost; 1 if it has not left within the leave timeout.
int wait_until_left(Client& client, const std::string& host, const AgentOptions& o, int timeout_ms,
                    spdlog::logger& log, const std::function<ops::AgentReport()>& report) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.leave_timeout_s);
  int last_used = -1;
  std::atomic<bool> never{false};
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      auto r = client.request(ops::request(ops::HostList{}), nullptr, 0, timeout_ms);
      const json* mine = nullptr;
      for (const auto& h : r.header.at("hosts"))
        if (h.at("host") == host) mine = &h;
      if (!mine) {
        log.info("host {} has left pcmd's inventory", host);
        return 0;
      }
      const int used = mine->at("used").get<int>();
      if (used != last_used) log.info("host {}: {} processes still to move off", host, used);
      last_used = used;
      client.request(ops::request(report()), nullptr, 0, timeout_ms);
    } catch (const Error& e) {
      if (e.code() == PCM_ERR_REFUSED) {  // it left between the two requests
        log.info("host {} has left pcmd's inventory", host);
        return 0;
      }
      log.warn("no answer from pcmd ({}); still waiting for the drain", e.what());
    }
    nap(std::min(o.period_ms, 500), never);
  }
  log.error("host {} did not leave within {} s (processes still on it: {})", host,
            o.leave_timeout_s, last_used);
  return 1;
}

}  // namespace

int run_agent(const AgentOptions& o, const std::atomic<bool>& stop) {
  auto log = logger("pcmd-agent", spdlog::level::info);
  const std::string host = host_name(o, *log);
  if (host.empty()) return 2;
  zmq::context_t context;
  std::unique_ptr<Client> client;
  try {
    const Config config = read_config(o.config);
    client = std::make_unique<Client>(context, config.endpoint, config.secret, config.curve);
  } catch (const Error& e) {
    log->error("{}", e.what());
    return 1;
  }
  const std::vector<int> cpus = my_cpus();
  const int cores = static_cast<int>(cpus.size());
  const std::string namespace_only = o.own_namespace ? net_namespace("self") : std::string();
  CpuTimes before = cpu_times(read_file("/proc/stat"), cpus);
  // A report: busy cores since the last one, the runnable tasks measured, the load average.
  auto report = [&](double runnable) {
    const CpuTimes now = cpu_times(read_file("/proc/stat"), cpus);
    ops::AgentReport r;
    r.host = host;
    r.cores = cores;
    r.busy = busy_cores(before, now, cores);
    r.runnable = runnable;
    r.load1 = load1();
    before = now;
    return r;
  };
  bool joined = false;
  int failures = 0;
  const int timeout_ms = std::max(1000, o.period_ms * 2);
  log->info("agent of host {} ({} cores), reporting to {} every {} ms", host, cores,
            client->endpoint(), o.period_ms);
  while (!stop.load()) {
    const double runnable = mean_runnable(cpus, namespace_only, o.period_ms, stop);
    if (stop.load()) break;
    ops::AgentReport req = report(runnable);
    req.join = !joined;
    if (o.slots > 0) req.slots = o.slots;
    if (!o.site.empty()) req.site = o.site;
    try {
      auto r = client->request(ops::request(req), nullptr, 0, timeout_ms);
      if (!joined)
        log->info("host {} joined pcmd's inventory ({} slots)", host, r.header.value("slots", 0));
      joined = true;
      failures = 0;
    } catch (const Error& e) {
      if (e.code() == PCM_ERR_REFUSED || e.code() == PCM_ERR_ARG) {
        log->error("pcmd refused the report: {}", e.what());
        return 1;
      }
      if (failures++ % 10 == 0) log->warn("no answer from pcmd ({}); still trying", e.what());
    }
  }
  if (!joined) return 0;
  // Leaving: pcmd drains the host; wait until it has left the inventory.
  log->info("leaving: pcmd drains host {} first", host);
  try {
    client->request(ops::request(ops::AgentLeave{host}), nullptr, 0, timeout_ms);
  } catch (const Error& e) {
    log->error("pcmd did not start the drain of {}: {}", host, e.what());
    return 1;
  }
  return wait_until_left(*client, host, o, timeout_ms, *log,
                         [&] { return report(runnable_on(cpus, namespace_only)); });
}

}  // namespace pcm::daemon
