// partner_copy.cpp — the partner level's exchange, driven by the application's thread, and its
// handoff to the writer thread (partner_copy.h).
#include "partner_copy.h"

#include <algorithm>

#include "leftovers.h"
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
    requests::started();
    at += static_cast<std::uint64_t>(n);
  } while (at < size);
}
}  // namespace

void PartnerCopy::begin(MPI_Comm world, const LevelPlan& plan, const char* staged,
                        std::uint64_t bytes, std::string desc, std::vector<KeptCopy>& kept,
                        PartnerHandoff& handoff) {
  // A communicator of its own: no message of the application's can match these.
  requests::sweep();  // what a failed exchange before left running, if it has ended since
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
    requests::started();
  }
  out_ = std::make_shared<Outgoing>();
  if (plan.partner >= 0) {
    out_->desc = std::move(desc);
    out_->sizes[0] = out_->desc.size();
    out_->sizes[1] = bytes;
    reqs_.emplace_back();
    mpi_check(MPI_Isend(out_->sizes, 2, MPI_UNSIGNED_LONG_LONG, plan.partner, kTagSizes, comm,
                        &reqs_.back()),
              "MPI_Isend");
    requests::started();
    post(reqs_, out_->desc.data(), out_->desc.size(), plan.partner, true, comm, kTagDesc);
    post(reqs_, const_cast<char*>(staged), bytes, plan.partner, true, comm, kTagData);
  }
  sends_ = reqs_.size();
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
      if (flag) {
        requests::ended(n);
        reqs.clear();
      }
      return flag != 0;
    };
    if (!sizes_in_ && done(size_reqs_)) post_receives();
    if (sizes_in_ && done(reqs_)) end({});
  });
  if (!o.ok()) end({o.code, "the copies for the partner level were not exchanged: " + o.msg});
}

void PartnerCopy::end(const Outcome& outcome) {
  active_ = false;
  if (!outcome.ok()) orphan_all();
  comm_.reset();
  out_.reset();
  handoff_->deliver(outcome);
}

// After a failure (a process of the job is lost) requests may still be posted. The receives not
// yet matched are cancelled (MPI_Cancel: allowed on a receive); every request left becomes an
// orphan (leftovers.h) holding what it reads or writes that this exchange owns: the outgoing
// sizes and description, the sizes' array and the kept copies (the vector's storage moves, the
// copies in it stay where MPI writes them; the next version starts from an empty one). The
// communicator goes with the last of them. The data's sends read the shard writer's staging
// memory, which is not this exchange's: a send larger than MPI's eager size reads it only once its
// receiver has matched it, and each exchange's receives are cancelled or failed here; the next
// version sweeps the orphans first (begin).
void PartnerCopy::orphan_all() {
  struct Kept {
    mpi::Comm comm;
    std::shared_ptr<Outgoing> out;
    std::vector<unsigned long long> sizes;
    std::vector<KeptCopy> kept;
  };
  auto keep = std::make_shared<Kept>();
  for (MPI_Request& r : size_reqs_)
    if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
  for (std::size_t i = sends_; i < reqs_.size(); ++i)  // the data's receives
    if (reqs_[i] != MPI_REQUEST_NULL) MPI_Cancel(&reqs_[i]);
  long gone = 0;
  for (auto* reqs : {&size_reqs_, &reqs_}) {
    for (MPI_Request& r : *reqs) {
      if (r == MPI_REQUEST_NULL) ++gone;  // completed by the failed Testall/Waitall
      requests::orphan(&r, keep);
    }
    reqs->clear();
  }
  requests::ended(gone);
  keep->comm = std::move(comm_);
  keep->out = out_;
  keep->sizes.swap(sizes_);
  keep->kept.swap(*kept_);
}

}  // namespace pcm::lib
