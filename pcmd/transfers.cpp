// transfers.cpp — reassembly of data sent in pieces (transfers.h).
#include "transfers.h"

#include "error.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::daemon {

Transfers::Piece Transfers::add_piece(const std::string& op, const std::string& job,
                                      std::int64_t id, std::uint64_t total, std::uint64_t offset,
                                      const void* data, std::size_t size) {
  if (size > proto::kMaxPiece)
    fail(PCM_ERR_ARG, "a piece of {} bytes (at most {})", size, proto::kMaxPiece);
  const auto now = std::chrono::steady_clock::now();
  auto it = transfers_.find(id);
  if (offset == 0) {
    if (it != transfers_.end()) {
      transfers_.erase(it);
      fail(PCM_ERR_ARG, "transfer {} began twice; dropped, nothing was done", id);
    }
    if (transfers_.size() >= kMaxTransfers)
      fail(PCM_ERR_REFUSED, "{} transfers are under way already; try again later", kMaxTransfers);
    auto bytes = std::make_shared<std::vector<char>>();
    try {
      bytes->reserve(total);  // address space only: pages are taken as the pieces fill them
    } catch (const std::exception&) {
      fail(PCM_ERR_REFUSED, "pcmd cannot hold a transfer of {} bytes", total);
    }
    it = transfers_.emplace(id, Transfer{op, job, total, std::move(bytes), now}).first;
  } else if (it == transfers_.end()) {
    fail(PCM_ERR_REFUSED,
         "transfer {} is not under way (a piece went missing, or none came for {} s): nothing "
         "was done",
         id, std::chrono::duration<double>(timeout_).count());
  }
  Transfer& t = it->second;
  if (t.op != op || t.job != job || t.total != total || offset != t.bytes->size() ||
      size > total - offset) {
    const Transfer gone = std::move(t);  // (t is erased next)
    transfers_.erase(it);
    fail(PCM_ERR_ARG,
         "transfer {}: a piece of {} bytes at byte {} does not follow the {} bytes of {} received "
         "for '{}' of job '{}'; dropped, nothing was done",
         id, size, offset, gone.bytes->size(), gone.total, gone.op, gone.job);
  }
  if (size > 0) {
    const char* p = static_cast<const char*>(data);
    t.bytes->insert(t.bytes->end(), p, p + size);
  }
  t.last = now;
  if (t.bytes->size() < total) return Piece{nullptr, t.bytes->size()};
  Piece done{std::move(t.bytes), total};
  transfers_.erase(it);
  return done;
}

void Transfers::expire() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = transfers_.begin(); it != transfers_.end();) {
    const Transfer& t = it->second;
    if (now - t.last <= timeout_) {
      ++it;
      continue;
    }
    log_->warn("job {}: '{}' stopped after {} of {} bytes sent in pieces; dropped", t.job, t.op,
               t.bytes->size(), t.total);
    it = transfers_.erase(it);
  }
}

}  // namespace pcm::daemon
