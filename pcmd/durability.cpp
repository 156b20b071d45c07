// durability.cpp — the job table's changes, written by the journal before their replies go
// (durability.h).
#include "durability.h"

namespace pcm::daemon {

using proto::json;

Durability::Durability(zmq::context_t& context, const Changes& changes,
                       std::filesystem::path table_file, std::function<json()> snapshot,
                       const std::string& bell_name, std::shared_ptr<spdlog::logger> log)
    : changes_(changes),
      snapshot_(std::move(snapshot)),
      log_(std::move(log)),
      bell_(context, zmq::socket_type::pair) {
  bell_.bind(bell_name);
  journal_ = std::make_unique<Journal>(context, std::move(table_file), bell_name);
  persist();
}

Durability::~Durability() {
  persist();
  journal_->flush();
  journal_.reset();
}

std::uint64_t Durability::persist() {
  if (changes_.count() != persisted_changes_) {
    persisted_changes_ = changes_.count();
    posted_gen_ = journal_->post(snapshot_().dump());
  }
  return posted_gen_;
}

void Durability::answer(Frames frames, const json& reply, const std::vector<char>& reply_data,
                        std::uint64_t changes_before, const Send& send) {
  if (!frames) return;
  if (changes_.count() != changes_before) {
    const std::uint64_t gen = persist();
    if (journal_->written() < gen) {
      held_.push_back(HeldReply{std::move(frames), reply, reply_data, gen});
      return;
    }
  }
  send(*frames, reply, reply_data);
}

void Durability::release(const Send& send) {
  if (held_.empty()) return;
  const std::uint64_t written = journal_->written();
  if (const std::string why = journal_->error(); !why.empty())
    log_->warn("job table: cannot write it ({}); a pcmd restart would lose the latest changes",
               why);
  std::vector<HeldReply> later;
  for (auto& h : held_) {
    if (h.gen <= written)
      send(*h.frames, h.reply, h.reply_data);
    else
      later.push_back(std::move(h));
  }
  held_.swap(later);
}

}  // namespace pcm::daemon
