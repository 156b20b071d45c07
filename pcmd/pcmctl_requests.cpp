// pcmctl_requests.cpp — pcmctl's connection to pcmd and the one place each request is built.
#include "pcmctl.h"

namespace pcm::detail {

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
json with_target(json req, const Target& target) {
  if (!target.host.empty()) req["host"] = target.host;
  if (!target.placement.empty()) req["placement"] = target.placement;
  if (!target.why.empty()) req["why"] = target.why;
  return req;
}

}  // namespace

json req_ping() { return {{"op", "ping"}}; }

json req_status() { return {{"op", "status"}}; }

json req_status(const std::string& job) { return {{"op", "status"}, {"job", job}}; }

json req_profile(const std::string& job) { return {{"op", "profile"}, {"job", job}}; }

json req_migrate(const std::string& job, int rank, const Target& target) {
  return with_target({{"op", "migrate"}, {"job", job}, {"rank", rank}}, target);
}

json req_split(const std::string& job, int rank, int into, const Target& target) {
  return with_target({{"op", "split"}, {"job", job}, {"rank", rank}, {"into", into}}, target);
}

json req_merge(const std::string& job, const std::vector<int>& ranks, const Target& target) {
  return with_target({{"op", "merge"}, {"job", job}, {"ranks", ranks}}, target);
}

json req_resize(const std::string& job, int size, const Target& target) {
  return with_target({{"op", "resize"}, {"job", job}, {"size", size}}, target);
}

json req_checkpoints(const std::string& job) { return {{"op", "checkpoints"}, {"job", job}}; }

json req_verify(const std::string& job, long iteration) {
  json req{{"op", "verify"}, {"job", job}};
  if (iteration >= 0) req["iteration"] = iteration;
  return req;
}

json req_prune(const std::string& job, int keep) {
  return {{"op", "prune"}, {"job", job}, {"keep", keep}};
}

json req_host_add(const std::string& host, int slots, const std::string& site, double latency) {
  json req{{"op", "host_add"}, {"host", host}, {"slots", slots}};
  if (!site.empty()) req["site"] = site;
  if (latency >= 0) req["latency"] = latency;
  return req;
}

json req_host_list() { return {{"op", "host_list"}}; }

json req_host_remove(const std::string& host) { return {{"op", "host_remove"}, {"host", host}}; }

json req_host_drain(const std::string& host) { return {{"op", "host_drain"}, {"host", host}}; }

}  // namespace pcm::detail
