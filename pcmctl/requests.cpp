// requests.cpp — pcmctl's connection to pcmd and the one place each request is built.
#include "ops.h"
#include "pcmctl.h"

namespace pcm::ctl {

using proto::json;

Connection::Connection(const ConnectOptions& options)
    : config_(read_config(options.config_path)),
      client_(context_, config_.endpoint, config_.secret, config_.curve),
      timeout_ms_(options.timeout_ms) {}

json Connection::request(const json& req) {
  return client_.request(req, nullptr, 0, timeout_ms_).header;
}

namespace {

// A reconfiguration's request with what the operator said about where and why.
template <class R>
json with_target(R r, const std::string& job, const Target& target) {
  r.job = job;
  if (!target.host.empty()) r.host = target.host;
  if (!target.placement.empty()) r.placement = target.placement;
  if (!target.why.empty()) r.why = target.why;
  return ops::request(r);
}

template <class R>
json for_job(const std::string& job) {
  R r;
  r.job = job;
  return ops::request(r);
}

template <class R>
json for_host(const std::string& host) {
  R r;
  r.host = host;
  return ops::request(r);
}

}  // namespace

json req_ping() { return ops::request(ops::Ping{}); }

json req_status() { return ops::request(ops::Status{}); }

json req_status(const std::string& job) { return ops::request(ops::Status{job}); }

json req_profile(const std::string& job) { return for_job<ops::Profile>(job); }

json req_migrate(const std::string& job, int rank, const Target& target) {
  ops::Migrate r;
  r.rank = rank;
  return with_target(r, job, target);
}

json req_split(const std::string& job, int rank, int into, const Target& target) {
  ops::Split r;
  r.rank = rank;
  r.into = into;
  return with_target(r, job, target);
}

json req_merge(const std::string& job, const std::vector<int>& ranks, const Target& target) {
  ops::Merge r;
  r.ranks = ranks;
  return with_target(r, job, target);
}

json req_resize(const std::string& job, int size, const Target& target) {
  ops::Resize r;
  r.size = size;
  return with_target(r, job, target);
}

json req_checkpoints(const std::string& job) { return for_job<ops::Checkpoints>(job); }

json req_verify(const std::string& job, long iteration) {
  ops::Verify r;
  r.job = job;
  if (iteration >= 0) r.iteration = iteration;
  return ops::request(r);
}

json req_checkpoint(const std::string& job, const std::string& why, bool at_once, bool stop) {
  ops::CheckpointRequest r;
  r.job = job;
  if (!why.empty()) r.why = why;
  r.at_once = at_once || stop;
  r.stop = stop;
  return ops::request(r);
}

json req_prune(const std::string& job, int keep) {
  ops::Prune r;
  r.job = job;
  r.keep = keep;
  return ops::request(r);
}

json req_host_add(const std::string& host, int slots, const std::string& site, double latency) {
  ops::HostAdd r;
  r.host = host;
  r.slots = slots;
  if (!site.empty()) r.site = site;
  if (latency >= 0) r.latency = latency;
  return ops::request(r);
}

json req_host_list() { return ops::request(ops::HostList{}); }

json req_host_remove(const std::string& host) { return for_host<ops::HostRemove>(host); }

json req_host_drain(const std::string& host) { return for_host<ops::HostDrain>(host); }

}  // namespace pcm::ctl
