// transfers.h — data that travels in pieces (protocol.h): the bytes so far of each transfer under
// way, checked piece by piece, handed over whole with the last piece, dropped when abandoned.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pcm::daemon {

class Transfers {
 public:
  static constexpr std::int64_t kMaxTransfer = std::int64_t{1} << 40;  // bytes of data in pieces
  static constexpr std::size_t kMaxTransfers = 64;                     // transfers at once

  Transfers(std::chrono::milliseconds timeout, std::shared_ptr<spdlog::logger> log)
      : timeout_(timeout), log_(std::move(log)) {}

  // What a piece gave: all the bytes when it was the last one, else how many have come.
  struct Piece {
    std::shared_ptr<std::vector<char>> whole;
    std::uint64_t received = 0;
  };
  // A piece of transfer id (the client's) of op for job: total bytes in all, this one at offset.
  // Throws pcm::Error (and drops the transfer) for a piece that does not follow.
  Piece add_piece(const std::string& op, const std::string& job, std::int64_t id,
                  std::uint64_t total, std::uint64_t offset, const void* data, std::size_t size);
  // Transfers whose client went quiet: their memory is freed.
  void expire();
  std::size_t size() const { return transfers_.size(); }

 private:
  struct Transfer {
    std::string op, job;
    std::uint64_t total = 0;
    std::shared_ptr<std::vector<char>> bytes;
    std::chrono::steady_clock::time_point last;
  };
  std::chrono::milliseconds timeout_;
  std::shared_ptr<spdlog::logger> log_;
  std::map<std::int64_t, Transfer> transfers_;  // by the client's id
};

}  // namespace pcm::daemon
