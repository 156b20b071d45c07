// durability.h — what makes a change to pcmd's job table survive pcmd: the count of changes, the
// journal that writes the table (journal.h), and the replies held until their change is on disk.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "protocol.h"
#include "storage/journal.h"

namespace pcm::daemon {

// Changes to the job table (jobs, inventory, counters): the owners that change it count them.
class Changes {
 public:
  void bump() { ++count_; }
  std::uint64_t count() const { return count_; }

 private:
  std::uint64_t count_ = 0;
};

class Durability {
 public:
  using Frames = std::shared_ptr<std::vector<zmq::message_t>>;
  using Send = std::function<void(std::vector<zmq::message_t>& frames, const proto::json& reply,
                                  const std::vector<char>& reply_data)>;

  // snapshot: the table as it is now; bell_name: a fresh inproc name for the journal's bell.
  Durability(zmq::context_t& context, const Changes& changes, std::filesystem::path table_file,
             std::function<proto::json()> snapshot, const std::string& bell_name,
             std::shared_ptr<spdlog::logger> log);
  // The table as it is now is written (and fsynced) first.
  ~Durability();
  Durability(const Durability&) = delete;
  Durability& operator=(const Durability&) = delete;

  // Rung whenever the journal has written a generation (the request loop polls it).
  zmq::socket_t& bell() { return bell_; }
  // Hands the journal the table if it changed since it was last handed over; its generation.
  std::uint64_t persist();
  // Sends a reply, or holds it until the journal has written the table as it is now when the
  // request changed it (changes_before: the count when the request came in).
  void answer(Frames frames, const proto::json& reply, const std::vector<char>& reply_data,
              std::uint64_t changes_before, const Send& send);
  // Sends the held replies whose table is written.
  void release(const Send& send);
  // Whether replies wait for the journal.
  bool holding() const { return !held_.empty(); }

 private:
  struct HeldReply {
    Frames frames;
    proto::json reply;
    std::vector<char> reply_data;
    std::uint64_t gen;
  };
  const Changes& changes_;
  std::function<proto::json()> snapshot_;
  std::shared_ptr<spdlog::logger> log_;
  zmq::socket_t bell_;
  std::unique_ptr<Journal> journal_;
  std::uint64_t persisted_changes_ = 0, posted_gen_ = 0;
  std::vector<HeldReply> held_;
};

}  // namespace pcm::daemon
