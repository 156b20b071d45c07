// partner_copy.cpp — the partner level's exchange, driven by the application's thread, and its
// handoff to the writer thread (partner_copy.h).
#include "partner_copy.h"

#include <algorithm>

#include "protocol.h"

namespace pcm::lib {

using proto::json;

std::string describe_items(const std::vector<ShardItem>& items) {
  json d = json::array();
  for (const ShardItem& it : items) d.push_back(json::array({it.key, it.type, it.count}));
  return d.dump();
}

std::vector<ShardItem> items_of(const std::string& desc, const std::vector<char>& bytes) {
  std::vector<ShardItem> items;
  std::uint64_t at = 0;
  try {
    for (const json& e : json::parse(desc)) {
      ShardItem it;
      it.key = e.at(0).get<std::string>();
      it.type = e.at(1).get<int>();
      it.count = e.at(2).get<std::uint64_t>();
      const std::uint64_t size = proto::type_size(it.type);  // 0: not a type
      if (size == 0 || it.count > (bytes.size() - at) / size)
        fail(PCM_ERR_CORRUPT, "a partner's copy is shorter than its items");
      const std::uint64_t n = it.count * size;
      it.pieces = {{bytes.data() + at, n}};
      at += n;
      items.push_back(std::move(it));
    }
  } catch (const json::exception& e) {
    fail(PCM_ERR_CORRUPT, "a partner's copy has a bad description: {}", e.what());
  }
  if (at != bytes.size()) fail(PCM_ERR_CORRUPT, "a partner's copy is longer than its items");
  return items;
}

void PartnerHandoff::expect(bool expected) {
  std::lock_guard<std::mutex> lock(m_);
  expected_ = expected;
  delivered_ = false;
  outcome_ = {};
}

void PartnerHandoff::deliver(const Outcome& outcome) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (!expected_ || delivered_) return;
    delivered_ = true;
    outcome_ = outcome;
  }
  cv_.notify_all();
}

Outcome PartnerHandoff::wait() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return !expected_ || delivered_; });
  return expected_ ? outcome_ : Outcome{};
}

namespace {
constexpr int kTagSizes = 7311, kTagDesc = 7312, kTagData = 7313;
constexpr std::uint64_t kPiece = std::uint64_t{1} << 30;  // MPI counts are ints

void post(std::vector<MPI_Request>& reqs, char* data, std::uint64_t size, int peer, bool send,
          MPI_Comm comm, int tag) {
  std::uint64_t at = 0;
  do {  // a message of no bytes is one message too
    const int n = static_cast<int>(std::min(kPiece, size - at));
    reqs.emplace_back();
    mpi_check(send ? MPI_Isend(data + at, n, MPI_BYTE, peer, tag, comm, &reqs.back())
                   : MPI_Irecv(data + at, n, MPI_BYTE, peer, tag, comm, &reqs.back()),
              send ? "MPI_Isend" : "MPI_Irecv");
    at += static_cast<std::uint64_t>(n);
  } while (at < size);
}
}  // namespace

void PartnerCopy::begin(MPI_Comm world, const LevelPlan& plan, const char* staged,
                        std::uint64_t bytes, std::string desc, std::vector<KeptCopy>& kept,
                        PartnerHandoff& handoff) {
  // A communicator of its own: no message of the application's can match these.
  mpi_check(MPI_Comm_dup(world, comm_.out()), "MPI_Comm_dup");
  const MPI_Comm comm = comm_.get();
  kept_ = &kept;
  handoff_ = &handoff;
  kept.resize(plan.keeps.size());
  sizes_.assign(2 * plan.keeps.size(), 0);
  size_reqs_.clear();
  reqs_.clear();
  sizes_in_ = false;
  active_ = true;
  for (std::size_t i = 0; i < plan.keeps.size(); ++i) {
    kept[i].rank = plan.keeps[i];
    size_reqs_.emplace_back();
    mpi_check(MPI_Irecv(&sizes_[2 * i], 2, MPI_UNSIGNED_LONG_LONG, plan.keeps[i], kTagSizes, comm,
                        &size_reqs_.back()),
              "MPI_Irecv");
  }
  if (plan.partner >= 0) {
    my_desc_ = std::move(desc);
    my_sizes_[0] = my_desc_.size();
    my_sizes_[1] = bytes;
    reqs_.emplace_back();
    mpi_check(MPI_Isend(my_sizes_, 2, MPI_UNSIGNED_LONG_LONG, plan.partner, kTagSizes, comm,
                        &reqs_.back()),
              "MPI_Isend");
    post(reqs_, my_desc_.data(), my_desc_.size(), plan.partner, true, comm, kTagDesc);
    post(reqs_, const_cast<char*>(staged), bytes, plan.partner, true, comm, kTagData);
  }
}

void PartnerCopy::post_receives() {
  const MPI_Comm comm = comm_.get();
  for (std::size_t i = 0; i < kept_->size(); ++i) {
    KeptCopy& k = (*kept_)[i];
    k.desc.resize(static_cast<std::size_t>(sizes_[2 * i]));
    k.bytes.resize(static_cast<std::size_t>(sizes_[2 * i + 1]));
    post(reqs_, k.desc.data(), k.desc.size(), k.rank, false, comm, kTagDesc);
    post(reqs_, k.bytes.data(), k.bytes.size(), k.rank, false, comm, kTagData);
  }
  sizes_in_ = true;
}

void PartnerCopy::step(bool block) {
  if (!active_) return;
  const Outcome o = attempt([&] {
    auto done = [&](std::vector<MPI_Request>& reqs) {
      int flag = 1;
      const int n = static_cast<int>(reqs.size());
      if (block)
        mpi_check(MPI_Waitall(n, reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
      else
        mpi_check(MPI_Testall(n, reqs.data(), &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
      return flag != 0;
    };
    if (!sizes_in_ && done(size_reqs_)) post_receives();
    if (sizes_in_ && done(reqs_)) end({});
  });
  if (!o.ok()) end({o.code, "the copies for the partner level were not exchanged: " + o.msg});
}

void PartnerCopy::end(const Outcome& outcome) {
  active_ = false;
  // After a failure requests may still be posted: they and the communicator are left to MPI (the
  // job is losing a process), never freed under a transfer.
  if (outcome.ok())
    comm_.reset();
  else
    (void)comm_.release();
  handoff_->deliver(outcome);
}

}  // namespace pcm::lib
