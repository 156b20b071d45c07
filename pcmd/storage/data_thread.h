// data_thread.h — pcmd's thread for work that touches the disk (the working store, checkpoint
// versions: HDF5, reads, writes, fsyncs), so that the request loop never waits on it: status,
// polls and other jobs' requests are answered while one job stores, commits or restarts a GiB.
// One thread, first in first out (HDF5 is not thread-safe, and a job's requests keep their order);
// the request loop never touches the store or the checkpoints itself while it runs.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "protocol.h"
#include "storage/disk_work.h"

namespace pcm::daemon {

class DataThread : public DiskWork {
 public:
  // A finished piece of work: the request's frames (for the route back), the reply, the data.
  struct Done {
    std::shared_ptr<std::vector<zmq::message_t>> frames;
    DataWork work;
    proto::json reply;
    std::vector<char> reply_data;
    bool failed = false;
  };

  // wake: an inproc endpoint the request loop listens on (a PAIR socket bound there).
  DataThread(zmq::context_t& context, const std::string& wake);
  ~DataThread();  // finishes the queued work first
  DataThread(const DataThread&) = delete;
  DataThread& operator=(const DataThread&) = delete;

  // frames: null for work nobody waits for (its reply is dropped).
  void post(std::shared_ptr<std::vector<zmq::message_t>> frames, DataWork work);
  std::vector<Done> take_done();
  std::size_t queued() const;

  // DiskWork: between begin_request and end_request, work is handed over (the request loop
  // serving a request, async) or done at once (a request handled directly: tests, the fuzz
  // harness); outside, at once.
  proto::json defer(DataWork work, std::vector<char>& reply_data) override;
  void background(std::function<void()> f) override;
  void begin_request(bool async);
  // Bytes the request's work reads (data reassembled from pieces): kept alive with that work.
  void keep(std::shared_ptr<std::vector<char>> bytes) { keep_ = std::move(bytes); }
  // The work defer() handed over for the request, if any (post it with the request's frames).
  std::optional<DataWork> end_request();

 private:
  void run(zmq::context_t& context, std::string wake);
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Done> queue_;
  std::vector<Done> done_;
  bool stop_ = false;
  bool async_ = false;                // a request is being served: defer() hands work over
  std::optional<DataWork> deferred_;  // what defer() handed over for that request
  std::shared_ptr<std::vector<char>> keep_;
  std::thread thread_;
};

}  // namespace pcm::daemon
