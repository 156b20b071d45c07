// table_snapshot.cpp — what of pcmd's state survives a pcmd restart: the jobs (sizes, hosts,
// pending and last commands, iterations, events, the version a restarted job reads), the inventory
// (hosts added, drains), and the counters that number jobs, commands and runs, so that a command id
// is never given twice. Written by the journal (durability.h) after every change; read at start.
// Each owner writes and reads its part; the Server puts them together. Also the jobs as the status
// request shows them (JobTable::status), beside the form the table keeps.
#include <fstream>

#include "error.h"
#include "pcm_types.h"
#include "server.h"

namespace pcm::daemon {

using proto::json;

namespace {

constexpr int kTableVersion = 1;

using Clock = std::chrono::steady_clock;

double age(Clock::time_point since, Clock::time_point now) {
  return std::chrono::duration<double>(now - since).count();
}
// The time point j["seconds"] before now (a negative or absurd age counts as now).
Clock::time_point aged(const json& j, Clock::time_point now) {
  const double s = j.at("seconds").get<double>();
  if (!(s > 0 && s < 1e9)) return now;
  return now - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// This boot of the machine: a job whose processes ran before a reboot is gone.
std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

JobState state_from(const std::string& s) {
  if (s == "running") return JobState::kRunning;
  if (s == "finished") return JobState::kFinished;
  if (s == "failed") return JobState::kFailed;
  if (s == "stopped") return JobState::kStopped;
  fail(PCM_ERR_ARG, "unknown job state '{}'", s);
}

// The version a restarted job reads, as the table keeps it: a large one by reference (its
// manifest is in its directory; written whole, 16,384 shards' records made every change to the
// table cost 100 ms of the request loop), a small one whole, as before.
constexpr int kManifestByRef = -1;
json restarted_json(const Job& job) {
  const auto& m = job.restarted_from;
  if (!m) return json();
  if (m->format == 2 && m->shards.size() > 64)
    return json{{"ref", true}, {"iteration", m->iteration}, {"nprocs", m->nprocs}};
  return m->to_json();
}

json job_to_json(const Job& job) {
  json j{{"name", job.name},
         {"state", state_name(job.state)},
         {"size", job.size},
         {"hosts", job.hosts},
         {"executable", job.executable},
         {"iteration", job.iteration},
         {"reconfigurations", job.reconfigurations},
         {"pending", job.pending.command ? job.pending.command->to_json() : json()},
         {"pending_delivered", job.pending.delivered},
         {"pending_drain", job.pending.drain},
         {"pending_by_restart", job.pending.by_restart},
         {"pending_hung", job.pending.hung},
         {"last_done_command", job.last_done_command},
         {"last_event", job.last_event},
         {"layout_command", job.layout_command},
         {"layout", job.layout},
         {"restarted_from", restarted_json(job)},
         {"placement", job.placement ? placement_name(*job.placement) : ""},
         {"drain_stalled", job.drain_stalled},
         {"rank0_pid", job.liveness.rank0_pid},
         {"rank0_host", job.liveness.rank0_host},
         {"incarnation", job.incarnation},
         {"nonce", job.nonce},
         {"reshape", job.reshape},
         {"supervised", job.supervised},
         {"launcher", job.launcher},
         {"lost", job.liveness.lost}};
  job.put_events(j);
  // What the job waits for, as status shows it (with its age: a new pcmd counts on from there).
  const auto now = std::chrono::steady_clock::now();
  if (job.checkpoint_wanted) j["checkpoint_wanted"] = job.checkpoint_wanted->to_json(now);
  if (job.allocating) j["allocating"] = job.allocating->to_json(now);
  if (job.move) j["move"] = job.move->to_json(now);
  return j;
}

Job job_from_json(const json& j, std::chrono::steady_clock::time_point now) {
  Job job;
  job.name = j.at("name").get<std::string>();
  if (!proto::valid_name(job.name)) fail(PCM_ERR_ARG, "invalid job name '{}'", job.name);
  job.state = state_from(j.at("state").get<std::string>());
  job.size = j.at("size").get<int>();
  job.hosts = j.at("hosts").get<std::vector<std::string>>();
  if (job.size < 1 || job.hosts.size() != static_cast<std::size_t>(job.size))
    fail(PCM_ERR_ARG, "job '{}': {} hosts for {} processes", job.name, job.hosts.size(), job.size);
  job.executable = j.at("executable").get<std::string>();
  job.iteration = j.at("iteration").get<std::int64_t>();
  job.reconfigurations = j.at("reconfigurations").get<int>();
  if (!j.at("pending").is_null())
    job.pending.command = proto::Command::from_json(j.at("pending"), job.size);
  job.pending.delivered = j.at("pending_delivered").get<bool>();
  job.pending.drain = j.at("pending_drain").get<bool>();
  job.pending.by_restart = j.value("pending_by_restart", false);
  job.pending.hung = j.value("pending_hung", false);
  job.last_done_command = j.at("last_done_command").get<std::int64_t>();
  job.last_event = j.at("last_event").get<std::string>();
  const auto texts = j.at("events").get<std::vector<std::string>>();
  const auto times = j.value("event_times", std::vector<double>());  // none before they were kept
  for (std::size_t k = 0; k < texts.size(); ++k)
    job.events.push_back(JobEvent{k < times.size() ? times[k] : 0.0, texts[k]});
  job.layout_command = j.at("layout_command").get<std::int64_t>();
  job.layout = j.at("layout");
  if (const json& m = j.at("restarted_from"); m.is_object() && m.value("ref", false)) {
    job.restarted_from.emplace();  // read from the version's directory (Server::restore)
    job.restarted_from->format = kManifestByRef;
    job.restarted_from->iteration = m.at("iteration").get<std::int64_t>();
    job.restarted_from->nprocs = m.at("nprocs").get<int>();
  } else if (!m.is_null()) {
    job.restarted_from = Manifest::from_json(m);
  }
  if (auto p = j.at("placement").get<std::string>(); !p.empty()) {
    job.placement = parse_placement(p);
    if (!job.placement) fail(PCM_ERR_ARG, "unknown placement '{}'", p);
  }
  job.drain_stalled = j.at("drain_stalled").get<std::string>();
  job.liveness.rank0_pid = j.at("rank0_pid").get<long>();
  job.liveness.rank0_host = j.at("rank0_host").get<std::string>();
  job.incarnation = j.at("incarnation").get<long long>();
  job.supervised = j.value("supervised", false);
  job.launcher = j.value("launcher", "");
  job.reshape = j.value("reshape", "spawn");  // absent from tables before restart reshapes
  if (!ops::valid_reshape(job.reshape))
    fail(PCM_ERR_ARG, "job '{}': unknown reshape '{}'", job.name, job.reshape);
  job.nonce = j.at("nonce").get<std::string>();
  job.liveness.lost = j.at("lost").get<std::vector<std::string>>();
  // Absent in the tables of a pcmd before they were kept.
  if (auto c = j.find("checkpoint_wanted"); c != j.end() && !c->is_null())
    job.checkpoint_wanted = Job::CheckpointWanted::from_json(*c, now);
  if (auto a = j.find("allocating"); a != j.end() && !a->is_null())
    job.allocating = Job::Allocating::from_json(*a, now);
  if (auto m = j.find("move"); m != j.end() && !m->is_null())
    job.move = Job::Move::from_json(*m, now);
  job.last_seen = now;  // its processes have the time a reconnection takes
  return job;
}

}  // namespace

// The parts of a job the table keeps with their age ("seconds": the clock's).
json Job::Allocating::to_json(Clock::time_point now) const {
  return json{{"text", text},
              {"slurm_job", slurm_job.empty() ? json(nullptr) : json(slurm_job)},
              {"seconds", age(since, now)}};
}
Job::Allocating Job::Allocating::from_json(const json& j, Clock::time_point now) {
  const json& id = j.at("slurm_job");
  return {j.at("text").get<std::string>(), id.is_null() ? "" : id.get<std::string>(), aged(j, now)};
}

json Job::CheckpointWanted::to_json(Clock::time_point now) const {
  json j{
      {"id", id}, {"why", why}, {"seconds", age(since, now)}, {"at_once", at_once}, {"stop", stop}};
  if (by_move) j["by_move"] = true;
  return j;
}
Job::CheckpointWanted Job::CheckpointWanted::from_json(const json& j, Clock::time_point now) {
  return {
      j.at("id").get<std::int64_t>(), j.at("why").get<std::string>(), aged(j, now),
      j.value("at_once", false),      j.value("stop", false),         j.value("by_move", false)};
}

json Job::Move::to_json(Clock::time_point now) const {
  return json{{"site", site}, {"state", state}, {"text", text}, {"seconds", age(since, now)}};
}
Job::Move Job::Move::from_json(const json& j, Clock::time_point now) {
  return {j.at("site").get<std::string>(), j.at("state").get<std::string>(),
          j.at("text").get<std::string>(), aged(j, now)};
}

json move_json(const Job& job) { return job.move ? job.move->to_json(Clock::now()) : json(); }

// ---- the jobs ------------------------------------------------------------------------------

// ---- status --------------------------------------------------------------------------------

json JobTable::job_json(const Job& job) const {
  json j{{"job", job.name},
         {"state", state_name(job.state)},
         {"size", job.size},
         {"hosts", job.hosts},
         {"iteration", job.iteration},
         {"reconfigurations", job.reconfigurations},
         {"layout_command", job.layout_command},
         {"last_event", job.last_event},
         {"lost", job.liveness.lost},
         {"seconds_since_seen",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - job.last_seen).count()},
         {"pending", nullptr},
         {"allocating", nullptr},
         {"checkpoint_wanted", nullptr},
         {"checkpoint_schedule", job.checkpoint_schedule}};
  job.put_events(j);
  j["watched"] = job.liveness.watched.size();  // processes holding a watch connection
  j["supervised"] = job.supervised;
  j["incarnation"] = job.incarnation;  // this run of the job (each registration has a new one)
  j["reshape"] = job.reshape;
  j["launcher"] = job.launcher;
  j["reshaping"] = job.stopping ? json(job.stopping->command) : json(nullptr);
  j["move"] = move_json(job);
  const auto now = std::chrono::steady_clock::now();
  if (job.allocating) j["allocating"] = job.allocating->to_json(now);
  if (job.checkpoint_wanted) j["checkpoint_wanted"] = job.checkpoint_wanted->to_json(now);
  if (job.pending.command) {
    j["pending"] = job.pending.command->to_json();
    j["pending"]["delivered"] = job.pending.delivered;
    j["pending"]["text"] = job.pending.command->describe();
    j["pending"]["by_restart"] = job.restart_pending();
    j["pending"]["hung"] = job.pending.hung;
  }
  return j;
}

json JobTable::status(const std::optional<std::string>& name) {
  json jobs = json::array();
  if (name) {
    jobs.push_back(job_json(find(*name)));
  } else {
    for (const auto& [n, job] : jobs_) jobs.push_back(job_json(job));
  }
  return jobs;
}

// ---- the table ---------------------------------------------------------------------------

json JobTable::jobs_json() const {
  json jobs = json::array();
  for (const auto& [name, job] : jobs_) jobs.push_back(job_to_json(job));
  return jobs;
}

void JobTable::put_counters(json& t) const {
  t["next_job"] = next_job_;
  t["next_incarnation"] = next_incarnation_;
  t["last_checkpoint_id"] = last_checkpoint_id_;
}

std::map<std::string, Job> JobTable::parse_jobs(const json& t) {
  std::map<std::string, Job> jobs;
  const auto now = std::chrono::steady_clock::now();
  for (const json& j : t.at("jobs")) {
    Job job = job_from_json(j, now);
    jobs[job.name] = std::move(job);
  }
  return jobs;
}

void JobTable::take_over(std::map<std::string, Job> jobs, const json& t, bool rebooted) {
  next_job_ = std::max(next_job_, t.at("next_job").get<std::int64_t>());
  next_incarnation_ = std::max(next_incarnation_, t.at("next_incarnation").get<long long>());
  last_checkpoint_id_ =
      std::max(last_checkpoint_id_, t.value("last_checkpoint_id", std::int64_t{0}));
  jobs_ = std::move(jobs);
  for (auto& [name, job] : jobs_) {
    // A second allocation being asked for is not asked any more (SlurmGrowth::sweep cancels what
    // the last pcmd submitted): the command that waited for it is not carried out.
    if (job.allocating) {
      note(job, fmt::format("pcmd restarted while {} waited for a Slurm allocation{}: that "
                            "command is not carried out and the allocation is cancelled; ask again",
                            job.allocating->text,
                            job.allocating->slurm_job.empty()
                                ? std::string()
                                : fmt::format(" (Slurm job {})", job.allocating->slurm_job)));
      log_->warn("job {}: {}", name, job.last_event);
      job.allocating.reset();
    }
    if (job.state != JobState::kRunning) continue;
    if (rebooted) {
      fail_job(job, "the machine pcmd runs on restarted: the job's processes are gone");
      continue;
    }
    if (rank0_gone(job)) {
      fail_job(job,
               fmt::format("rank 0 (pid {}) ended while pcmd was away", job.liveness.rank0_pid));
      continue;
    }
    note(job, "pcmd restarted; waiting for the job to reconnect");
  }
}

// ---- the inventory -------------------------------------------------------------------------

json Inventory::to_json() const {
  json hosts = json::array();
  for (const auto& h : hosts_)
    hosts.push_back(json{{"name", h.name},
                         {"slots", h.slots},
                         {"site", h.site},
                         {"latency_ms", h.latency_ms ? json(*h.latency_ms) : json()},
                         {"draining", h.draining},
                         {"agent", h.agent},
                         {"slurm_job", h.slurm_job}});
  return hosts;
}

std::vector<InventoryHost> Inventory::parse(const json& t) {
  std::vector<InventoryHost> hosts;
  for (const json& h : t.at("inventory")) {
    InventoryHost host;
    host.name = h.at("name").get<std::string>();
    if (!proto::valid_host(host.name)) fail(PCM_ERR_ARG, "invalid host name '{}'", host.name);
    host.slots = h.at("slots").get<int>();
    host.site = h.at("site").get<std::string>();
    if (!h.at("latency_ms").is_null()) host.latency_ms = h.at("latency_ms").get<double>();
    host.draining = h.at("draining").get<bool>();
    host.agent = h.value("agent", false);  // its agent has the timeout to report to this pcmd
    host.slurm_job = h.value("slurm_job", "");
    hosts.push_back(std::move(host));
  }
  return hosts;
}

// Hosts named on pcmd's command line keep the slots given there; what pcmctl changed (sites,
// latencies, drains, hosts added) comes back.
void Inventory::take_over(std::vector<InventoryHost> hosts) {
  for (auto& h : hosts) {
    if (InventoryHost* mine = find(h.name)) {
      mine->site = h.site;
      mine->latency_ms = h.latency_ms;
      mine->draining = h.draining;
      mine->agent = h.agent;
      if (mine->slurm_job.empty()) mine->slurm_job = h.slurm_job;  // this allocation's wins
    } else {
      add(h.name, h.slots, h.site, h.latency_ms);
      find(h.name)->draining = h.draining;
      find(h.name)->agent = h.agent;
      find(h.name)->slurm_job = h.slurm_job;
    }
    find(h.name)->last_report = std::chrono::steady_clock::now();
  }
}

// ---- the whole table -----------------------------------------------------------------------

std::filesystem::path Server::table_file() const {
  return std::filesystem::path(options_.data_dir) / "pcmd-jobs.json";
}

json Server::snapshot() const {
  json t{{"version", kTableVersion},
         {"boot_id", boot_id_},
         {"next_command", desk_.next_command()},
         {"jobs", jobs_.jobs_json()},
         {"inventory", inventory_.to_json()}};
  jobs_.put_counters(t);
  return t;
}

// Takes the table over, or throws (pcm::Error, json::exception) leaving the server as it was.
void Server::restore(const json& t) {
  if (t.at("version").get<int>() != kTableVersion)
    fail(PCM_ERR_ARG, "job table version {} is not {}", t.at("version").get<int>(), kTableVersion);
  const bool rebooted = t.at("boot_id").get<std::string>() != boot_id_;
  std::map<std::string, Job> jobs = JobTable::parse_jobs(t);
  std::vector<InventoryHost> hosts = Inventory::parse(t);
  const auto next_command = t.at("next_command").get<std::int64_t>();
  (void)t.at("next_job").get<std::int64_t>();  // read before anything is taken over
  (void)t.at("next_incarnation").get<long long>();
  // Everything read: take it over.
  desk_.take_next_command(next_command);
  for (auto& [name, job] : jobs)  // versions kept by reference: their manifests, from disk
    if (job.restarted_from && job.restarted_from->format == kManifestByRef) {
      std::string why;
      const std::int64_t it = job.restarted_from->iteration;
      job.restarted_from = checkpoints_.manifest_of(name, it, &why);
      if (!job.restarted_from)
        log_->warn("job {}: the version it restarted from (iteration {}) cannot be read: {}", name,
                   it, why);
    }
  inventory_.take_over(std::move(hosts));
  jobs_.take_over(std::move(jobs), t, rebooted);
  int running = 0;
  for (const auto& [name, job] : jobs_.all())
    if (job.state == JobState::kRunning) ++running;
  log_->info("job table: {} jobs ({} running) taken over from {}", jobs_.all().size(), running,
             table_file().string());
}

// At start: the table an earlier pcmd left, if any. One that cannot be used is set aside with a
// warning, and pcmd starts with no job (it never refuses to start over it).
void Server::restore_table() {
  boot_id_ = boot_id();
  std::string problem;
  auto text = Journal::load(table_file(), &problem);
  if (!text) {
    if (!problem.empty()) log_->warn("job table: {}; starting with no job", problem);
    return;
  }
  try {
    restore(json::parse(*text));
  } catch (const std::exception& e) {
    Journal::set_aside(table_file());
    log_->warn("job table {} cannot be used ({}); set aside as {}.bad; starting with no job",
               table_file().string(), e.what(), table_file().string());
  }
}

}  // namespace pcm::daemon
