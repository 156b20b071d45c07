// data_thread.cpp — the disk work of pcmd's requests, off the request loop (data_thread.h).
#include "storage/data_thread.h"

#include "error.h"
#include "pcm_types.h"

namespace pcm::daemon {

using proto::json;

DataThread::DataThread(zmq::context_t& context, const std::string& wake)
    : thread_([this, &context, wake] { run(context, wake); }) {}

DataThread::~DataThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void DataThread::post(std::shared_ptr<std::vector<zmq::message_t>> frames, DataWork work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(Done{std::move(frames), std::move(work), {}, {}, false});
  }
  cv_.notify_one();
}

std::vector<DataThread::Done> DataThread::take_done() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Done> out;
  out.swap(done_);
  return out;
}

json DataThread::defer(DataWork work, std::vector<char>& reply_data) {
  // Data reassembled from pieces lives as long as the work that reads it.
  if (keep_)
    work.run = [keep = keep_, run = std::move(work.run)](std::vector<char>& out) {
      return run(out);
    };
  if (async_) {
    deferred_ = std::move(work);
    return json{{"ok", true}, {"deferred", true}};
  }
  json reply = work.run(reply_data);
  if (work.then) work.then(reply);
  return reply;
}

void DataThread::background(std::function<void()> f) {
  if (!async_) {
    f();
    return;
  }
  post(nullptr, DataWork{[f = std::move(f)](std::vector<char>&) {
                           f();
                           return proto::ok_reply();
                         },
                         nullptr});
}

void DataThread::begin_request(bool async) {
  async_ = async;
  deferred_.reset();
  keep_.reset();
}

std::optional<DataWork> DataThread::end_request() {
  async_ = false;
  keep_.reset();
  std::optional<DataWork> work = std::move(deferred_);
  deferred_.reset();
  return work;
}

std::size_t DataThread::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void DataThread::run(zmq::context_t& context, std::string wake) {
  zmq::socket_t bell(context, zmq::socket_type::pair);
  bell.set(zmq::sockopt::linger, 0);
  bell.connect(wake);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    Done d = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      d.reply = d.work.run(d.reply_data);
    } catch (const Error& e) {
      d.reply = proto::error_reply(e.code(), e.what());
      d.reply_data.clear();
      d.failed = true;
    } catch (const std::exception& e) {
      d.reply = proto::error_reply(PCM_ERR_INTERNAL, std::string("pcmd: ") + e.what());
      d.reply_data.clear();
      d.failed = true;
    }
    lock.lock();
    done_.push_back(std::move(d));
    lock.unlock();
    try {
      bell.send(zmq::str_buffer("."), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
      // The loop still finds the work done at its next turn (it looks at least every 200 ms).
    }
    lock.lock();
  }
}

}  // namespace pcm::daemon
