// journal.cpp — pcmd's job table on disk, written by a thread of its own (see journal.h).
#include "storage/journal.h"

#include <fstream>
#include <sstream>
#include <system_error>

#include "durable.h"
#include "error.h"

namespace pcm::daemon {

namespace fs = std::filesystem;

Journal::Journal(zmq::context_t& context, fs::path file, const std::string& wake)
    : file_(std::move(file)), thread_([this, &context, wake] { run(context, wake); }) {}

Journal::~Journal() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
  // pcmd stops: the table as last written goes to the disk too.
  if (durable_ > 0) {
    try {
      fsync_path(file_, false);
      fsync_path(file_.parent_path(), true);
    } catch (const Error&) {
      // Nothing more to do: the table is in the file, as a crash of pcmd would leave it.
    }
  }
}

std::optional<std::string> Journal::load(const fs::path& file, std::string* problem) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  if (in) return text.str();
  *problem = "cannot read " + file.string();
  set_aside(file);
  return std::nullopt;
}

void Journal::set_aside(const fs::path& file) {
  std::error_code ec;
  fs::rename(file, file.string() + ".bad", ec);
}

std::uint64_t Journal::post(std::string bytes) {
  std::uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    next_ = std::move(bytes);
    gen = ++posted_;
  }
  cv_.notify_one();
  return gen;
}

std::uint64_t Journal::durable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return durable_;
}

std::string Journal::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

std::uint64_t Journal::written() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return attempted_;
}

void Journal::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  written_.wait(lock, [this] { return attempted_ >= posted_; });
}

void Journal::run(zmq::context_t& context, std::string wake) {
  zmq::socket_t bell(context, zmq::socket_type::pair);
  bell.set(zmq::sockopt::linger, 0);
  bell.connect(wake);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || next_.has_value(); });
    if (!next_) return;  // stopping, and everything handed over is written
    std::string bytes = std::move(*next_);
    next_.reset();
    const std::uint64_t gen = posted_;
    lock.unlock();
    std::string why;
    try {
      // What a reply waits for survives pcmd's death without an fsync (the kernel has it), and
      // a crash of the machine ends every job anyway (pcmd fails them at its next start, by the
      // boot id): an fsync would only make the replies wait behind other jobs' gigabytes (a
      // registration took up to 0.7 s so while a job wrote 1 GiB). The destructor fsyncs the
      // last one.
      write_replaced(file_, bytes);
    } catch (const std::exception& e) {
      why = e.what();
    }
    lock.lock();
    attempted_ = gen;
    if (why.empty()) durable_ = gen;
    error_ = why;
    written_.notify_all();
    lock.unlock();
    try {
      bell.send(zmq::str_buffer("."), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
      // The loop looks at durable() at least every 200 ms anyway.
    }
    lock.lock();
  }
}

}  // namespace pcm::daemon
