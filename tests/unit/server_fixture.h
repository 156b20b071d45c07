// server_fixture.h — pcmd's server in-process on a loopback port, for the tests of its parts
// (test_gateway, test_jobs, test_commands, test_inventory, test_data_ops, test_watch): the
// ServerTest fixture and the helpers more than one of them uses.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "auth.h"
#include "client.h"
#include "error.h"
#include "pcm_types.h"
#include "probe.h"
#include "server.h"
#include "test_util.h"
#include "watch.h"

namespace fs = std::filesystem;
using pcm::common::Client;
using pcm::proto::json;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { start(dir_); }
  void start(const fs::path& data_dir) {
    pcm::daemon::ServerOptions o;
    o.bind = "tcp://127.0.0.1:*";
    o.data_dir = data_dir.string();
    o.secret = "right-secret";
    o.hosts = hosts_;
    o.site_links = site_links_;
    o.closed_sites = closed_sites_;
    o.more_hosts = more_hosts_;
    o.slurm_jobs = slurm_jobs_;
    o.probe_port = 0;  // made-up host names: no lookups (they could leave the machine)
    stop_ = false;
    o.transfer_timeout = transfer_timeout_;
    o.agent_timeout = std::chrono::milliseconds(1500);
    o.policy_auto = policy_auto_;
    o.policy.min_interval_s = 0;
    server_ = std::make_unique<pcm::daemon::Server>(ctx_, o);
    thread_ = std::thread([this] { server_->run(stop_); });
    client_ = std::make_unique<Client>(ctx_, server_->endpoint(), "right-secret");
  }
  void stop() {
    stop_ = true;
    thread_.join();
    client_.reset();
    server_.reset();
  }
  void TearDown() override { stop(); }
  // The job table's file in data_dir, parsed.
  json table(const fs::path& data_dir) {
    std::ifstream in(data_dir / "pcmd-jobs.json");
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str());
  }
  static const json* table_job(const json& t, const std::string& name) {
    for (const auto& j : t.at("jobs"))
      if (j.at("name") == name) return &j;
    return nullptr;
  }
  // The error code of a request, PCM_SUCCESS if it succeeded.
  int code(const json& req, Client* c = nullptr) {
    try {
      (c ? c : client_.get())->request(req, nullptr, 0, 5000);
    } catch (const pcm::Error& e) {
      last_error_ = e.what();
      return e.code();
    }
    return PCM_SUCCESS;
  }
  std::string register_job(const std::string& name, int size) {
    json req{{"op", "register"}, {"size", size}, {"hosts", json::array()}};
    for (int i = 0; i < size; ++i) req["hosts"].push_back("localhost");
    if (!name.empty()) req["job"] = name;
    return client_->request(req).header.at("job");
  }
  // Reports command id of job done, the new world on hosts (as rank 0 does).
  void reconfigured(const std::string& job, const json& id, const std::vector<std::string>& hosts) {
    client_->request({{"op", "reconfigured"},
                      {"job", job},
                      {"command", id},
                      {"success", true},
                      {"size", hosts.size()},
                      {"hosts", hosts}});
  }
  // Sends raw frames from a DEALER that mimics REQ, returns the reply header.
  json raw(const std::vector<std::string>& frames) {
    zmq::socket_t s(ctx_, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::rcvtimeo, 5000);
    s.connect(server_->endpoint());
    s.send(zmq::message_t(), zmq::send_flags::sndmore);
    for (std::size_t i = 0; i < frames.size(); ++i)
      s.send(zmq::buffer(frames[i]),
             i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    zmq::message_t delim, head;
    if (!s.recv(delim) || !s.recv(head)) return json{{"timeout", true}};
    return pcm::proto::decode(head.data(), head.size());
  }

  std::chrono::milliseconds transfer_timeout_{60000};
  bool policy_auto_ = false;
  std::vector<pcm::common::HostSlots> more_hosts_;  // as from --hostfile or --resources slurm
  std::vector<std::string> hosts_{"localhost:4", "nodeb:2"};  // as from --hosts
  bool closed_sites_ = false;                                 // as from --closed-sites
  std::vector<pcm::common::SiteLink> site_links_;             // as from --site-link
  std::map<std::string, std::string> slurm_jobs_;  // host -> its Slurm job (--resources slurm)
  zmq::context_t ctx_{1};
  TempDir tmp_;
  const fs::path& dir_ = tmp_.path();
  std::unique_ptr<pcm::daemon::Server> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::unique_ptr<Client> client_;
  std::string last_error_;
};

// A row of a host_list reply.
inline json host_row(const json& list, const std::string& name) {
  for (const auto& h : list.at("hosts"))
    if (h.at("host") == name) return h;
  return nullptr;
}

// ---- the watch port's protocol, spoken with raw sockets --------------------------------------

// A TCP connection to tcp://HOST:PORT; -1 on failure.
inline int connect_to(const std::string& endpoint) {
  auto rest = endpoint.substr(6);
  auto colon = rest.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(rest.substr(colon + 1))));
  ::inet_pton(AF_INET, rest.substr(0, colon).c_str(), &a.sin_addr);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline void say(int fd, const std::string& text) {
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

// The nonce of the challenge pcmd's watch port sends on connecting ("" if none within 3 s).
inline std::string challenge_nonce(int fd) {
  timeval tv{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string line;
  char c;
  while (line.size() < 256 && ::recv(fd, &c, 1, 0) == 1 && c != '\n') line += c;
  const std::string prefix = "PCM-WATCH 2 ";
  return line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : "";
}

// Answers the challenge on fd with a hello for FIELDS ("JOB PID HOST INCARNATION") signed with
// secret, as libpcm does.
inline void greet(int fd, const std::string& secret, const std::string& fields) {
  const std::string nonce = challenge_nonce(fd);
  ASSERT_EQ(nonce.size(), 32u);
  say(fd, "PCM-WATCH 2 " + pcm::common::watch_proof(secret, nonce, fields) + " " + fields + "\n");
}

// Events until n have come or 3 s have passed.
inline std::vector<pcm::daemon::WatchEvent> events(pcm::daemon::Watcher& w, std::size_t n) {
  std::vector<pcm::daemon::WatchEvent> all;
  for (int i = 0; i < 300 && all.size() < n; ++i) {
    auto e = w.take_events();
    all.insert(all.end(), e.begin(), e.end());
    if (all.size() < n) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return all;
}

// Whether the peer closed fd within 3 s (FIN; or RST when it closed with our bytes unread).
inline bool closed_by_peer(int fd) {
  timeval tv{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char c;
  ssize_t n = ::recv(fd, &c, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}
