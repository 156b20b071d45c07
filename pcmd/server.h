// server.h — pcmd's request loop: one socket, the gateway every request passes (version, secret,
// pieces), and the table that hands each kind of request (common/ops.h) to the owner of what it
// touches: the jobs, the command desk, the inventory and its drains, the data ops.
#pragma once

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "commands.h"
#include "data_ops.h"
#include "drains.h"
#include "durability.h"
#include "host_loss.h"
#include "inventory.h"
#include "jobs.h"
#include "log.h"
#include "loop_lag.h"
#include "ops.h"
#include "options.h"
#include "policy.h"
#include "protocol.h"
#include "slurm/slurm_growth.h"
#include "storage/checkpoint.h"
#include "storage/data_thread.h"
#include "storage/store.h"
#include "transfers.h"
#include "watch.h"
#include "zap.h"

namespace pcm::daemon {

class Server {
 public:
  Server(zmq::context_t& context, ServerOptions options);
  ~Server();  // finishes the data thread's queued work first
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The endpoint actually bound (with the port chosen by the system).
  const std::string& endpoint() const { return endpoint_; }
  // The watch port's endpoint, for the configuration file.
  const std::string& watch_endpoint() const { return watcher_->endpoint(); }

  // Serves until stop becomes true (checked at least every 200 ms).
  // Serves until stop; once ending is set (a SIGTERM with --stop-grace), until the running jobs
  // whose processes are alive have ended or the grace has passed.
  void run(const std::atomic<bool>& stop, const std::atomic<bool>* ending = nullptr);

  // For tests: runs f on the data thread, in turn with the requests' disk work (thread-safe).
  void run_on_data_thread(std::function<void()> f) {
    data_->post(nullptr, DataWork{[f = std::move(f)](std::vector<char>&) {
                                    f();
                                    return proto::ok_reply();
                                  },
                                  nullptr});
  }

  // The request path of serve_one without the socket: decodes one request's frames ([routing id,
  // (empty delimiter), header, (data)], as the router socket gives them) and handles it. Returns
  // the reply header (and fills reply_data), or nothing when the request's disk work went to the
  // data thread and the reply follows from there. disk_inline: do that disk work now instead
  // (the fuzz harness, which runs no request loop). Never throws for anything a peer sent.
  std::optional<proto::json> respond(std::shared_ptr<std::vector<zmq::message_t>> frames,
                                     std::vector<char>& reply_data, bool disk_inline = false);

  // Transfers in pieces under way (protocol.h).
  std::size_t transfers() const { return transfers_.size(); }

  // Handles one request; exposed for tests. data/size: the optional second frame.
  // Returns the reply header and fills reply_data for "load".
  proto::json handle(const proto::json& request, const void* data, std::size_t size,
                     std::vector<char>& reply_data);

 private:
  // A request's handler: its header (to be decoded as its kind's struct), data frame, reply data.
  using Handler = std::function<proto::json(const proto::json&, Payload, std::vector<char>&)>;
  // Sets the handler of R's kind: f(const R&, Payload, std::vector<char>& reply_data).
  template <class R, class F>
  void on(F f) {
    handlers_[ops::index(R::kOp)] = [f](const proto::json& req, Payload data,
                                        std::vector<char>& reply_data) {
      return f(R::from_json(req), data, reply_data);
    };
  }
  void set_handlers();

  void serve_one();
  // Sends a reply along the route of a request's frames.
  void send_reply(std::vector<zmq::message_t>& frames, const proto::json& reply,
                  const std::vector<char>& reply_data);
  // Replies to the requests whose disk work the data thread has finished.
  void finish_data_work();
  void check_jobs_alive();
  // The watch port's news now (before a poll or a report), and the hosts they make silent.
  void watch_now();
  // Refuses a request from a process that outlived its run (ops::Fence, JobTable::fence).
  void fence(ops::Op op, const proto::json& req);
  proto::json dispatch(ops::Op op, const proto::json& req, Payload data,
                       std::vector<char>& reply_data);
  // A piece of a transfer (protocol.h); the last one carries out the request with all the bytes.
  proto::json piece(ops::Op op, const proto::json& req, Payload data,
                    std::vector<char>& reply_data);
  proto::json do_register(const ops::Register& r, std::vector<char>& reply_data);
  proto::json do_reconfigured(const ops::Reconfigured& r);

  // The job table on disk (table_snapshot.cpp, journal.h).
  std::filesystem::path table_file() const;
  proto::json snapshot() const;
  void restore(const proto::json& table);
  void restore_table();

  ServerOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  Changes changes_;
  JobTable jobs_;
  Inventory inventory_;
  HostLoss host_loss_{jobs_, inventory_};
  std::unique_ptr<Policy> policy_;  // --policy auto
  CommandDesk desk_;
  Drains drains_;
  std::unique_ptr<SlurmGrowth> slurm_;  // --resources slurm
  std::unique_ptr<Watcher> watcher_;
  LoopLag lag_{*log_};               // the request loop's passes (run); log_ is made before it
  std::unique_ptr<ZapHandler> zap_;  // with CURVE: checks each client's key
  zmq::socket_t socket_;
  std::string endpoint_;
  Store store_;
  Checkpoints checkpoints_;
  // The data thread and the bell it rings when work is done (destroyed before the store and the
  // checkpoints it uses).
  zmq::socket_t bell_;
  std::unique_ptr<DataThread> data_;
  std::unique_ptr<DataOps> data_ops_;
  Transfers transfers_;
  LogLimiter refusals_{10};  // log lines about refused and malformed requests
  std::array<Handler, ops::kOpCount> handlers_;
  std::string boot_id_;
  std::unique_ptr<Durability> durability_;
};

}  // namespace pcm::daemon
