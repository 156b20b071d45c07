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
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "protocol.h"

namespace pcm::detail {

// A request's disk part and what the request loop does with its result.
struct DataWork {
  // On the data thread: disk and HDF5 only, never the job table. Returns the reply (and fills
  // reply_data); a pcm::Error becomes an error reply.
  std::function<proto::json(std::vector<char>& reply_data)> run;
  // On the request loop, with the reply of a run that succeeded (may be empty).
  std::function<void(proto::json& reply)> then;
};

class DataThread {
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

 private:
  void run(zmq::context_t& context, std::string wake);
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Done> queue_;
  std::vector<Done> done_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pcm::detail
