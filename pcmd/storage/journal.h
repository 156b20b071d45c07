// journal.h — pcmd's job table on disk, so that a pcmd restart (kill -9, SIGTERM, a crash of
// pcmd alone) loses no job. The request loop hands over a snapshot of the table after every
// change; a thread of its own writes the newest one (temporary file and rename: whole or not at
// all), skipping older ones it has not reached, and rings a bell when a generation is in the
// file. A request that changes the table is answered only then: what a client was told survives
// pcmd's death. No fsync per change (a crash of the machine ends the jobs too, and an fsync would
// wait behind other jobs' gigabytes); the last table, when pcmd stops, is fsynced.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <zmq.hpp>

namespace pcm::daemon {

class Journal {
 public:
  // file: where the table lives (its directory must exist); wake: an inproc endpoint the request
  // loop listens on (a PAIR socket bound there), rung after each write.
  Journal(zmq::context_t& context, std::filesystem::path file, const std::string& wake);
  ~Journal();  // writes the newest snapshot handed over, then stops
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Reads the table an earlier pcmd left: nullopt when there is none, or when it cannot be read
  // (then it is set aside and *problem says why).
  static std::optional<std::string> load(const std::filesystem::path& file, std::string* problem);
  // Renames a table that cannot be used to NAME.bad, where a person can look at it.
  static void set_aside(const std::filesystem::path& file);

  // Hands over a snapshot; returns its generation (1, 2, ...).
  std::uint64_t post(std::string bytes);
  // The newest generation in the file (0: none yet).
  std::uint64_t durable() const;
  // The newest generation whose write is over, whether it succeeded or failed.
  std::uint64_t written() const;
  // The last write's failure ("" when it succeeded); the thread retries with the next snapshot.
  std::string error() const;
  // Waits until every generation handed over is on disk (or has failed).
  void flush();

 private:
  void run(zmq::context_t& context, std::string wake);
  void write(const std::string& bytes);

  std::filesystem::path file_;
  mutable std::mutex mutex_;
  std::condition_variable cv_, written_;
  std::optional<std::string> next_;  // the newest snapshot not yet written
  std::uint64_t posted_ = 0, durable_ = 0, attempted_ = 0;
  std::string error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pcm::daemon
