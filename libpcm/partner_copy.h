// partner_copy.h — the partner level of a checkpoint version, behind the application: the
// staged bytes of this rank's shard go to its partner, and the partners' bytes it keeps come in,
// over MPI requests that PCM_Checkpoint posts and that the application's own thread completes
// later (PCM_Status tests them at every call; a settle waits for them). The writer thread, which
// makes no MPI call, writes this rank's shard meanwhile and waits for the kept bytes (handed
// over through a PartnerHandoff) only to write the partners' copies beside it.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "checkpoint_levels.h"
#include "error.h"
#include "mpi_util.h"
#include "shard.h"

namespace pcm::lib {

// A partner's shard kept by this rank: its staged bytes and what they hold.
struct KeptCopy {
  int rank = -1;
  std::string desc;         // describe_items' encoding
  std::vector<char> bytes;  // kept from one version to the next: only the first fill is new memory
};

// The items of a staged shard (one piece each, one after the other) as a string, and back, with
// the pieces pointing into bytes. Throws pcm::Error where desc does not fit bytes.
std::string describe_items(const std::vector<ShardItem>& items);
std::vector<ShardItem> items_of(const std::string& desc, const std::vector<char>& bytes);

// Between the application's thread (deliver) and the writer thread (wait): whether the kept
// copies of the version in flight are in, or will not come.
class PartnerHandoff {
 public:
  // A new version: the writer waits for a delivery only when expected.
  void expect(bool expected);
  // The kept copies are in (ok), or the reason they will not come. The first delivery counts.
  void deliver(const Outcome& outcome);
  // Blocks until a delivery where one is expected; success where none is.
  Outcome wait();

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool expected_ = false, delivered_ = false;
  Outcome outcome_;
};

// The exchange of one version, driven by the application's thread only.
class PartnerCopy {
 public:
  // Posts this rank's part (collective over world: a duplicate communicator is made): sends
  // staged[0, bytes) and desc to plan.partner, and receives of the sizes from plan.keeps into
  // kept. staged and kept must stay put until the handoff is delivered.
  void begin(MPI_Comm world, const LevelPlan& plan, const char* staged, std::uint64_t bytes,
             std::string desc, std::vector<KeptCopy>& kept, PartnerHandoff& handoff);
  bool active() const { return active_; }
  // Tests the requests, posts the data receives once the sizes are in, and delivers once all is
  // done. Never throws: a failure is delivered (and reported by the writer).
  void pump() { step(false); }
  // Waits until delivered.
  void complete() {
    while (active_) step(true);
  }

 private:
  void step(bool block);
  void post_receives();
  void end(const Outcome& outcome);

  // What this rank sends (on the heap: a failed exchange's sends keep it, leftovers.h).
  struct Outgoing {
    unsigned long long sizes[2] = {0, 0};
    std::string desc;
  };
  void orphan_all();

  bool active_ = false, sizes_in_ = false;
  mpi::Comm comm_;
  std::vector<MPI_Request> size_reqs_, reqs_;  // reqs_: this rank's sends_ sends, then receives
  std::size_t sends_ = 0;
  std::vector<unsigned long long> sizes_;  // per kept rank: desc length, bytes
  std::shared_ptr<Outgoing> out_;
  std::vector<KeptCopy>* kept_ = nullptr;
  PartnerHandoff* handoff_ = nullptr;
};

}  // namespace pcm::lib
