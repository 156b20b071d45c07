// ops.cpp — the requests' validating decoders and their encoders (ops.h).
#include "ops.h"

#include <climits>
#include <set>

#include "command.h"
#include "error.h"
#include "hosts.h"
#include "pcm_types.h"

namespace pcm::ops {

using proto::get_bool;
using proto::get_int;
using proto::get_string;
using proto::opt_int;
using proto::opt_string;

namespace {

constexpr std::size_t kMaxSite = 64;

std::string job_of(const json& j) { return get_string(j, "job", proto::kMaxName); }

// Absent or null, or a number of `unit` in [0, hi] (hi as written in the message).
std::optional<double> opt_amount(const json& j, const char* key, double hi, const char* unit,
                                 const char* hi_text) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !(it->get<double>() >= 0) || it->get<double>() > hi)
    fail(PCM_ERR_ARG, "field \"{}\" must be a number of {} in [0, {}]", key, unit, hi_text);
  return it->get<double>();
}

std::optional<double> opt_seconds(const json& j, const char* key) {
  return opt_amount(j, key, 1e9, "seconds", "1e9");
}

// A job name that becomes a directory at once (checkpoint requests of jobs pcmd may not know).
std::string valid_job_of(const json& j) {
  auto name = job_of(j);
  if (!proto::valid_name(name)) fail(PCM_ERR_ARG, "invalid job name '{}'", name);
  return name;
}

std::string host_of(const json& j) {
  auto name = get_string(j, "host", proto::kMaxHost);
  if (!proto::valid_host(name)) fail(PCM_ERR_ARG, "invalid host name '{}'", name);
  return name;
}

std::string key_of(const json& j) {
  auto key = get_string(j, "key", proto::kMaxName);
  if (!proto::valid_name(key)) fail(PCM_ERR_ARG, "invalid key '{}'", key);
  return key;
}

std::string site_of(const json& j) {
  std::string site = opt_string(j, "site", kMaxSite).value_or("default");
  if (!proto::valid_name(site)) fail(PCM_ERR_ARG, "invalid site name '{}'", site);
  return site;
}

int rank_of(const json& j, const char* key, std::int64_t lo) {
  return static_cast<int>(get_int(j, key, lo, kMaxRanks));
}

std::vector<std::string> hosts_of(const json& j, std::size_t expected) {
  auto it = j.find("hosts");
  if (it == j.end() || !it->is_array()) fail(PCM_ERR_ARG, "field \"hosts\" must be an array");
  if (it->size() != expected)
    fail(PCM_ERR_ARG, "field \"hosts\" has {} entries for {} ranks", it->size(), expected);
  std::vector<std::string> hosts;
  for (const auto& h : *it) {
    if (!h.is_string() || !proto::valid_host(h.get_ref<const std::string&>()))
      fail(PCM_ERR_ARG, "field \"hosts\" holds an invalid host name");
    hosts.push_back(h.get<std::string>());
  }
  return hosts;
}

// A number in [0, hi] (an agent's figures).
double number_of(const json& j, const char* key, double hi) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !(it->get<double>() >= 0) || it->get<double>() > hi)
    fail(PCM_ERR_ARG, "field \"{}\" must be a number in [0, {}]", key, hi);
  return it->get<double>();
}

template <class T>
void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

}  // namespace

std::optional<Op> from_name(std::string_view name) {
  for (const OpTraits& t : kOps)
    if (name == t.name) return t.op;
  return std::nullopt;
}

Ping Ping::from_json(const json&) { return {}; }
json Ping::to_json() const { return json::object(); }

bool valid_reshape(const std::string& mode) {
  return mode == "spawn" || mode == "restart" || mode == "auto";
}

Register Register::from_json(const json& j) {
  Register r;
  r.size = rank_of(j, "size", 1);
  r.hosts = hosts_of(j, static_cast<std::size_t>(r.size));
  r.nonce = opt_string(j, "nonce", 64);
  r.job = opt_string(j, "job", proto::kMaxName);
  r.restart = get_bool(j, "restart", false);
  r.executable = opt_string(j, "executable", 4096);
  if (auto pid = opt_int(j, "pid", 0, INT32_MAX)) r.pid = static_cast<long>(*pid);
  r.placement = opt_string(j, "placement", 32);
  r.reshape = opt_string(j, "reshape", 16);
  if (r.reshape && !valid_reshape(*r.reshape))
    fail(PCM_ERR_ARG, "reshape must be spawn, restart or auto");
  r.reshaped_command = opt_int(j, "reshaped_command", 1, INT64_MAX);
  r.supervised = get_bool(j, "supervised", false);
  r.launcher = opt_string(j, "launcher", 16);
  if (r.launcher && *r.launcher != "srun") fail(PCM_ERR_ARG, "launcher must be srun");
  return r;
}
json Register::to_json() const {
  json j{{"size", size}, {"hosts", hosts}, {"restart", restart}};
  put(j, "nonce", nonce);
  put(j, "job", job);
  put(j, "executable", executable);
  put(j, "pid", pid);
  put(j, "placement", placement);
  put(j, "reshape", reshape);
  put(j, "reshaped_command", reshaped_command);
  if (supervised) j["supervised"] = true;
  put(j, "launcher", launcher);
  return j;
}

Poll Poll::from_json(const json& j) {
  Poll r;
  r.job = job_of(j);
  r.iteration = get_int(j, "iteration", 0, INT64_MAX);
  if (auto it = j.find("profile"); it != j.end()) r.profile = *it;
  r.checkpoint_cost_s = opt_seconds(j, "checkpoint_cost_s");
  r.checkpoint_interval_s = opt_seconds(j, "checkpoint_interval_s");
  r.checkpoint_mtbf_s = opt_seconds(j, "checkpoint_mtbf_s");
  return r;
}
json Poll::to_json() const {
  json j{{"job", job}, {"iteration", iteration}};
  put(j, "profile", profile);
  put(j, "checkpoint_cost_s", checkpoint_cost_s);
  put(j, "checkpoint_interval_s", checkpoint_interval_s);
  put(j, "checkpoint_mtbf_s", checkpoint_mtbf_s);
  return j;
}

Reconfigured Reconfigured::from_json(const json& j) {
  Reconfigured r;
  r.job = job_of(j);
  r.command = get_int(j, "command", 0, INT64_MAX);
  r.retry = get_bool(j, "retry", false);
  r.success = get_bool(j, "success", true);
  if (r.success) {
    r.size = rank_of(j, "size", 1);
    r.hosts = hosts_of(j, static_cast<std::size_t>(r.size));
    if (auto pid = opt_int(j, "pid", 0, INT32_MAX)) r.pid = static_cast<long>(*pid);
    r.respawned = get_bool(j, "respawned", false);
    if (auto it = j.find("layout"); it != j.end() && !it->is_null()) r.layout = *it;
  } else {
    r.error = opt_string(j, "error", 4096);
  }
  r.iteration = opt_int(j, "iteration", 0, INT64_MAX);
  return r;
}
json Reconfigured::to_json() const {
  json j{{"job", job}, {"command", command}, {"success", success}};
  if (retry) j["retry"] = true;
  if (success) {
    j["size"] = size;
    j["hosts"] = hosts;
    if (respawned) j["respawned"] = true;
  }
  put(j, "pid", pid);
  put(j, "layout", layout);
  put(j, "error", error);
  put(j, "iteration", iteration);
  return j;
}

JobEvent JobEvent::from_json(const json& j) {
  return JobEvent{valid_job_of(j), get_string(j, "text", 2000),
                  opt_int(j, "stuck_command", 1, INT64_MAX)};
}
json JobEvent::to_json() const {
  json j{{"job", job}, {"text", text}};
  put(j, "stuck_command", stuck_command);
  return j;
}

JobMove JobMove::from_json(const json& j) {
  JobMove r;
  r.job = job_of(j);
  r.action = opt_string(j, "action", 16).value_or("ask");
  static const std::set<std::string> kActions{
      "ask", "supervise", "begin", "stop", "done", "failed", "reshape_failed", "reshape_stop"};
  if (kActions.count(r.action) == 0)
    fail(PCM_ERR_ARG,
         "field \"action\" must be ask, supervise, begin, stop, done, failed, "
         "reshape_stop or reshape_failed");
  if (r.action == "ask" || j.contains("site")) r.site = site_of(j);
  r.text = opt_string(j, "text", 2000);
  return r;
}
json JobMove::to_json() const {
  json j{{"job", job}, {"action", action}};
  put(j, "site", site);
  put(j, "text", text);
  return j;
}

Finished Finished::from_json(const json& j) {
  return Finished{job_of(j), opt_int(j, "iteration", 0, INT64_MAX), opt_string(j, "error", 2000),
                  opt_string(j, "stopped", 200), opt_int(j, "stopped_version", 0, INT64_MAX)};
}
json Finished::to_json() const {
  json j{{"job", job}};
  put(j, "iteration", iteration);
  put(j, "error", error);
  put(j, "stopped", stopped);
  put(j, "stopped_version", stopped_version);
  return j;
}

Status Status::from_json(const json& j) { return Status{opt_string(j, "job", proto::kMaxName)}; }
json Status::to_json() const {
  json j = json::object();
  put(j, "job", job);
  return j;
}

Profile Profile::from_json(const json& j) { return Profile{job_of(j)}; }
json Profile::to_json() const { return json{{"job", job}}; }

Store Store::from_json(const json& j) {
  Store r;
  r.job = job_of(j);
  r.rank = rank_of(j, "rank", 0);
  r.key = key_of(j);
  r.type = static_cast<int>(get_int(j, "type", 0, 1000));
  if (proto::type_size(r.type) == 0) fail(PCM_ERR_ARG, "unknown element type {}", r.type);
  r.count = get_int(j, "count", 0, INT64_MAX / 16);
  return r;
}
json Store::to_json() const {
  return json{{"job", job}, {"rank", rank}, {"key", key}, {"type", type}, {"count", count}};
}

Load Load::from_json(const json& j) {
  Load r;
  r.job = job_of(j);
  r.rank = rank_of(j, "rank", 0);
  r.key = key_of(j);
  r.meta_only = get_bool(j, "meta_only", false);
  r.version = opt_int(j, "version", 0, INT64_MAX);
  return r;
}
json Load::to_json() const {
  json j{{"job", job}, {"rank", rank}, {"key", key}};
  if (meta_only) j["meta_only"] = true;
  put(j, "version", version);
  return j;
}

Commit Commit::from_json(const json& j) {
  Commit r;
  r.job = valid_job_of(j);
  r.iteration = get_int(j, "iteration", 0, INT64_MAX);
  r.size = rank_of(j, "size", 1);
  r.retry = get_bool(j, "retry", false);
  r.after_stores = get_bool(j, "after_stores", false);
  return r;
}
json Commit::to_json() const {
  json j{{"job", job}, {"iteration", iteration}, {"size", size}};
  if (retry) j["retry"] = true;
  if (after_stores) j["after_stores"] = true;
  return j;
}

Checkpoints Checkpoints::from_json(const json& j) { return Checkpoints{valid_job_of(j)}; }
json Checkpoints::to_json() const { return json{{"job", job}}; }

Verify Verify::from_json(const json& j) {
  Verify r;
  r.job = valid_job_of(j);
  r.iteration = opt_int(j, "iteration", 0, INT64_MAX);
  return r;
}
json Verify::to_json() const {
  json j{{"job", job}};
  put(j, "iteration", iteration);
  return j;
}

Prune Prune::from_json(const json& j) {
  Prune r;
  r.job = valid_job_of(j);
  r.keep = get_int(j, "keep", 1, 1 << 20);
  return r;
}
json Prune::to_json() const { return json{{"job", job}, {"keep", keep}}; }

CheckpointRequest CheckpointRequest::from_json(const json& j) {
  CheckpointRequest r;
  r.job = valid_job_of(j);
  if (auto it = j.find("why"); it != j.end() && !it->is_null())
    r.why = proto::Command::clean_why(get_string(j, "why", 4 * proto::Command::kMaxWhy));
  r.stop = get_bool(j, "stop", false);
  r.at_once = r.stop || get_bool(j, "at_once", false);
  return r;
}
json CheckpointRequest::to_json() const {
  json j{{"job", job}};
  put(j, "why", why);
  if (at_once) j["at_once"] = true;
  if (stop) j["stop"] = true;
  return j;
}

CheckpointBegin CheckpointBegin::from_json(const json& j) {
  return CheckpointBegin{job_of(j), get_int(j, "iteration", 0, INT64_MAX)};
}
json CheckpointBegin::to_json() const { return json{{"job", job}, {"iteration", iteration}}; }

CheckpointCommit CheckpointCommit::from_json(const json& j) {
  CheckpointCommit r;
  r.job = job_of(j);
  r.iteration = get_int(j, "iteration", 0, INT64_MAX);
  r.size = rank_of(j, "size", 1);
  if (j.contains("layout")) r.layout = j.at("layout");
  r.retry = get_bool(j, "retry", false);
  return r;
}
json CheckpointCommit::to_json() const {
  json j{{"job", job}, {"iteration", iteration}, {"size", size}};
  put(j, "layout", layout);
  if (retry) j["retry"] = true;
  return j;
}

CheckpointBad CheckpointBad::from_json(const json& j) {
  CheckpointBad r;
  r.job = job_of(j);
  r.iteration = get_int(j, "iteration", 0, INT64_MAX);
  r.why = get_string(j, "why", 2000);
  r.unreachable = get_bool(j, "unreachable", false);
  return r;
}
json CheckpointBad::to_json() const {
  json j{{"job", job}, {"iteration", iteration}, {"why", why}};
  if (unreachable) j["unreachable"] = true;  // absent: damaged, as an older libpcm says it
  return j;
}

CheckpointManifest CheckpointManifest::from_json(const json& j) {
  return CheckpointManifest{job_of(j), get_int(j, "iteration", 0, INT64_MAX)};
}
json CheckpointManifest::to_json() const { return json{{"job", job}, {"iteration", iteration}}; }

ShardPut ShardPut::from_json(const json& j) {
  ShardPut r;
  r.job = job_of(j);
  r.iteration = get_int(j, "iteration", 0, INT64_MAX);
  r.rank = rank_of(j, "rank", 0);
  return r;
}
json ShardPut::to_json() const {
  return json{{"job", job}, {"iteration", iteration}, {"rank", rank}};
}

ShardDone ShardDone::from_json(const json& j) {
  ShardDone r;
  r.job = job_of(j);
  r.iteration = get_int(j, "iteration", 0, INT64_MAX);
  r.rank = rank_of(j, "rank", 0);
  r.size = rank_of(j, "size", 1);
  r.error = opt_string(j, "error", 2000);
  r.retry = get_bool(j, "retry", false);
  if (auto it = j.find("levels"); it != j.end() && !it->is_null())
    r.levels = pcm::common::ShardLevels::from_json(*it);
  return r;
}
json ShardDone::to_json() const {
  json j{{"job", job}, {"iteration", iteration}, {"rank", rank}, {"size", size}};
  put(j, "error", error);
  if (retry) j["retry"] = true;
  if (levels) j["levels"] = levels->to_json();
  return j;
}

StoresDone StoresDone::from_json(const json& j) {
  StoresDone r;
  r.job = valid_job_of(j);
  r.iteration = get_int(j, "iteration", 0, INT64_MAX);
  r.rank = rank_of(j, "rank", 0);
  r.size = rank_of(j, "size", 1);
  r.error = opt_string(j, "error", 2000);
  return r;
}
json StoresDone::to_json() const {
  json j{{"job", job}, {"iteration", iteration}, {"rank", rank}, {"size", size}};
  put(j, "error", error);
  return j;
}

DirectDir DirectDir::from_json(const json& j) { return DirectDir{valid_job_of(j)}; }
json DirectDir::to_json() const { return json{{"job", job}}; }

StoreDirect StoreDirect::from_json(const json& j) {
  StoreDirect r;
  r.job = valid_job_of(j);
  r.rank = rank_of(j, "rank", 0);
  r.key = key_of(j);
  if (auto it = j.find("record"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) fail(PCM_ERR_ARG, "'record' must be an object");
    r.record = *it;
  }
  r.error = opt_string(j, "error", 2000);
  if (r.record.has_value() == r.error.has_value())
    fail(PCM_ERR_ARG, "a direct store carries a record or an error, one of the two");
  return r;
}
json StoreDirect::to_json() const {
  json j{{"job", job}, {"rank", rank}, {"key", key}};
  put(j, "record", record);
  put(j, "error", error);
  return j;
}

void CommandFields::read(const json& j) {
  job = job_of(j);
  host = opt_string(j, "host", proto::kMaxHost);
  placement = opt_string(j, "placement", 32);
  if (auto it = j.find("why"); it != j.end() && !it->is_null())
    why = proto::Command::clean_why(get_string(j, "why", 4 * proto::Command::kMaxWhy));
}
void CommandFields::write(json& j) const {
  j["job"] = job;
  put(j, "host", host);
  put(j, "placement", placement);
  put(j, "why", why);
}

Migrate Migrate::from_json(const json& j) {
  Migrate r;
  r.read(j);
  r.rank = rank_of(j, "rank", -1);
  return r;
}
json Migrate::to_json() const {
  json j{{"rank", rank}};
  write(j);
  return j;
}

Split Split::from_json(const json& j) {
  Split r;
  r.read(j);
  r.rank = rank_of(j, "rank", -1);
  r.into = rank_of(j, "into", 0);
  return r;
}
json Split::to_json() const {
  json j{{"rank", rank}, {"into", into}};
  write(j);
  return j;
}

Merge Merge::from_json(const json& j) {
  Merge r;
  r.read(j);
  auto it = j.find("ranks");
  if (it == j.end() || !it->is_array()) fail(PCM_ERR_ARG, "field \"ranks\" must be an array");
  for (const auto& v : *it) {
    if (!v.is_number_integer()) fail(PCM_ERR_ARG, "field \"ranks\" must hold integers");
    r.ranks.push_back(v.get<int>());
  }
  return r;
}
json Merge::to_json() const {
  json j{{"ranks", ranks}};
  write(j);
  return j;
}

Resize Resize::from_json(const json& j) {
  Resize r;
  r.read(j);
  r.size = rank_of(j, "size", -1);
  return r;
}
json Resize::to_json() const {
  json j{{"size", size}};
  write(j);
  return j;
}

HostAdd HostAdd::from_json(const json& j) {
  HostAdd r;
  r.host = host_of(j);
  r.slots = static_cast<int>(get_int(j, "slots", 1, pcm::common::kMaxSlots));
  r.site = site_of(j);
  r.latency = opt_amount(j, "latency", 1e6, "milliseconds", "1e6");
  return r;
}
json HostAdd::to_json() const {
  json j{{"host", host}, {"slots", slots}, {"site", site}};
  put(j, "latency", latency);
  return j;
}

HostList HostList::from_json(const json&) { return {}; }
json HostList::to_json() const { return json::object(); }

HostDrain HostDrain::from_json(const json& j) { return HostDrain{host_of(j)}; }
json HostDrain::to_json() const { return json{{"host", host}}; }

HostRemove HostRemove::from_json(const json& j) { return HostRemove{host_of(j)}; }
json HostRemove::to_json() const { return json{{"host", host}}; }

AgentReport AgentReport::from_json(const json& j) {
  AgentReport r;
  r.host = host_of(j);
  r.cores = static_cast<int>(get_int(j, "cores", 1, pcm::common::kMaxSlots));
  r.busy = number_of(j, "busy", r.cores);
  r.load1 = number_of(j, "load1", 1e6);
  r.runnable = j.contains("runnable") ? number_of(j, "runnable", 1e6) : 0.0;
  r.join = get_bool(j, "join", false);
  if (auto slots = opt_int(j, "slots", 1, pcm::common::kMaxSlots))
    r.slots = static_cast<int>(*slots);
  r.site = site_of(j);
  return r;
}
json AgentReport::to_json() const {
  json j{{"host", host},   {"cores", cores},       {"busy", busy},
         {"load1", load1}, {"runnable", runnable}, {"site", site}};
  if (join) j["join"] = true;
  put(j, "slots", slots);
  return j;
}

AgentLeave AgentLeave::from_json(const json& j) { return AgentLeave{host_of(j)}; }
json AgentLeave::to_json() const { return json{{"host", host}}; }

Topology Topology::from_json(const json& j) {
  auto it = j.find("hosts");
  if (it == j.end() || !it->is_array()) fail(PCM_ERR_ARG, "field \"hosts\" must be an array");
  if (it->size() > static_cast<std::size_t>(1 << 20)) fail(PCM_ERR_ARG, "too many hosts");
  Topology r;
  for (const auto& h : *it) {
    if (!h.is_string() || !proto::valid_host(h.get_ref<const std::string&>()))
      fail(PCM_ERR_ARG, "field \"hosts\" holds an invalid host name");
    r.hosts.push_back(h.get<std::string>());
  }
  return r;
}
json Topology::to_json() const { return json{{"hosts", hosts}}; }

}  // namespace pcm::ops
