// slurm_resources.cpp — pcmd --resources slurm: the Slurm allocation as the inventory, and its
// refusals (slurm_resources.h).
#include "slurm/slurm_resources.h"

#include <sys/stat.h>

#include <charconv>
#include <cstdlib>
#include <map>
#include <optional>

#include "error.h"
#include "pcm_types.h"

namespace pcm::daemon {

namespace {

constexpr std::chrono::seconds kCommandTimeout{20};

std::optional<long> parse_number(std::string_view s) {
  long v = 0;
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// The words of a record, split on white space.
std::vector<std::string_view> words_of(std::string_view s) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' && s[j] != '\r') ++j;
    if (j > i) words.push_back(s.substr(i, j - i));
    i = j;
  }
  return words;
}

// The value of KEY= in word, if word is KEY=...
std::optional<std::string_view> value_of(std::string_view word, std::string_view key) {
  if (word.size() <= key.size() || word.substr(0, key.size()) != key || word[key.size()] != '=')
    return std::nullopt;
  return word.substr(key.size() + 1);
}

// The first lines of a command's output, for a message.
std::string first_lines(const std::string& text) {
  std::string s = text.substr(0, 400);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s.empty() ? "no output" : "'" + s + "'";
}

// A value as a second allocation would copy it: "" for Slurm's "(null)".
std::string shown(std::string_view v) { return v == "(null)" ? std::string() : std::string(v); }

[[noreturn]] void refuse(const std::string& why) {
  throw Error(PCM_ERR_CONFIG, "--resources slurm: " + why);
}

// Runs `argv` through run; refuses, saying how to fix it, unless it exited 0.
CommandResult must_run(const CommandRunner& run, const std::vector<std::string>& argv,
                       const std::string& fix) {
  std::string shown;
  for (const auto& a : argv) shown += (shown.empty() ? "" : " ") + a;
  CommandResult r = run(argv);
  if (!r.found) {
    const char* path = std::getenv("PATH");
    refuse(argv[0] + " is not on PATH (" + (path ? path : "unset") +
           "): install Slurm's client commands (Debian: slurm-client) or put their directory "
           "on PATH");
  }
  if (r.timed_out)
    refuse("'" + shown + "' did not answer within " + std::to_string(kCommandTimeout.count()) +
           " s: is slurmctld up and SLURM_CONF right (scontrol ping)?");
  if (r.exit_code != 0)
    refuse("'" + shown + "' failed (exit " + std::to_string(r.exit_code) +
           "): " + first_lines(r.output) + "; " + fix);
  return r;
}

}  // namespace

std::optional<std::time_t> parse_slurm_time(std::string_view text) {
  if (text.size() != 19 || text[10] != 'T') return std::nullopt;
  std::tm tm{};
  const std::string s(text);
  const char* end = ::strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return t;
}

int count_cpu_ids(std::string_view ids) {
  long n = 0;
  std::size_t start = 0;
  if (ids.empty()) fail(PCM_ERR_ARG, "empty CPU id list");
  while (start <= ids.size()) {
    std::size_t comma = ids.find(',', start);
    if (comma == std::string_view::npos) comma = ids.size();
    std::string_view item = ids.substr(start, comma - start);
    std::size_t dash = item.find('-');
    auto lo = parse_number(item.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : parse_number(item.substr(dash + 1));
    if (!lo || !hi || *hi < *lo) fail(PCM_ERR_ARG, "bad CPU ids '{}'", std::string(ids));
    n += *hi - *lo + 1;
    if (n > kMaxSlots) fail(PCM_ERR_ARG, "CPU ids '{}': more than {}", std::string(ids), kMaxSlots);
    start = comma + 1;
  }
  return static_cast<int>(n);
}

SlurmAllocation parse_scontrol_job(std::string_view record) {
  const std::vector<std::string_view> words = words_of(record.substr(0, record.find('\n')));
  SlurmAllocation a;
  std::string nodelist;
  long num_cpus = 0, num_nodes = 0;
  std::map<std::string, int> cpus_of;  // from the detail words
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string_view w = words[i];
    if (auto v = value_of(w, "JobId")) a.job_id = std::string(*v);
    if (auto v = value_of(w, "JobState")) a.state = std::string(*v);
    if (auto v = value_of(w, "NodeList")) nodelist = std::string(*v);
    if (auto v = value_of(w, "Partition")) a.partition = shown(*v);
    if (auto v = value_of(w, "Account")) a.account = shown(*v);
    if (auto v = value_of(w, "QOS")) a.qos = shown(*v);
    if (auto v = value_of(w, "EndTime")) a.end_time = parse_slurm_time(*v);
    if (auto v = value_of(w, "BatchHost")) a.batch_host = shown(*v);
    if (auto v = value_of(w, "NumCPUs")) num_cpus = parse_number(*v).value_or(0);
    if (auto v = value_of(w, "NumNodes")) num_nodes = parse_number(*v).value_or(0);
    auto nodes = value_of(w, "Nodes");
    auto ids = i + 1 < words.size() ? value_of(words[i + 1], "CPU_IDs") : std::nullopt;
    if (nodes && ids) {
      const int n = count_cpu_ids(*ids);
      for (const auto& name : expand_slurm_nodelist(*nodes)) cpus_of[name] = n;
    }
  }
  if (a.job_id.empty() || !parse_number(a.job_id))
    fail(PCM_ERR_ARG, "no JobId=NUMBER in the job's record");
  if (a.state.empty()) fail(PCM_ERR_ARG, "no JobState= in the record of job {}", a.job_id);
  if (nodelist.empty() || nodelist == "(null)")
    fail(PCM_ERR_ARG, "job {} ({}) holds no nodes (NodeList={})", a.job_id, a.state, nodelist);
  const int even = static_cast<int>(num_nodes > 0 ? std::max(1L, num_cpus / num_nodes) : 1);
  for (const auto& name : expand_slurm_nodelist(nodelist)) {
    auto it = cpus_of.find(name);
    a.hosts.push_back(HostSlots{name, it != cpus_of.end() ? it->second : even, {}});
  }
  return a;
}

SlurmAllocation slurm_allocation(const EnvGetter& env, const CommandRunner& run) {
  const char* id = env("SLURM_JOB_ID");
  if (!id || !*id)
    refuse(
        "SLURM_JOB_ID is not set: pcmd is not inside a Slurm allocation. Start it inside one (in "
        "an sbatch script, under salloc, or as a step: srun --jobid=J -N1 -n1 --overlap pcmd "
        "...), or name the hosts with --hosts or --hostfile instead");
  if (!parse_number(id)) refuse(std::string("SLURM_JOB_ID='") + id + "' is not a job id");
  if (const char* conf = env("SLURM_CONF"); conf && *conf) {
    struct stat st {};
    if (::stat(conf, &st) != 0)
      refuse(std::string("SLURM_CONF=") + conf +
             " names no file (scontrol would retry for a minute): set SLURM_CONF to the "
             "cluster's slurm.conf, or unset it");
  }
  const std::string job = id;
  const CommandResult r = must_run(run, {"scontrol", "show", "job", "-o", "-d", job},
                                   "is job " + job + " still there (squeue -j " + job + ")?");
  SlurmAllocation a;
  try {
    a = parse_scontrol_job(r.output);
  } catch (const Error& e) {
    refuse("'scontrol show job -o -d " + job + "': " + e.what());
  }
  if (a.job_id != job) refuse("scontrol showed job " + a.job_id + ", not job " + job);
  if (a.state != "RUNNING")
    refuse("job " + job + " is " + a.state +
           ", not RUNNING: start pcmd once the allocation is granted");
  must_run(run, {"srun", "--version"}, "new processes are started with srun");
  return a;
}

SlurmAllocation slurm_allocation() {
  return slurm_allocation(
      [](const char* name) { return std::getenv(name); },
      [](const std::vector<std::string>& argv) { return run_command(argv, kCommandTimeout); });
}

}  // namespace pcm::daemon
