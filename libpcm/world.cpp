// world.cpp — the world this process is in (World) and the job's parked processes (Parking): what
// rank 0 admits of a command, and the world a reconfiguration hands over (reshaper.h builds it).
#include "world.h"

#include <algorithm>
#include <string>

#include "log.h"

namespace pcm::lib {

using proto::Command;

// ---- the world ----------------------------------------------------------------------------

Parking::Decision Parking::bound(const Command& cmd, int size, int max_parked, bool adapts) const {
  if (!split_leaves || cmd.respawn) return {};  // nothing can leave: nothing to bound by
  const int adds = cmd.kind == Command::Kind::kMigrate ? 1 : std::max(0, size - cmd.size);
  const int cap = max_parked > 0 ? max_parked : adapts ? std::max(largest, size) : 0;
  if (adds == 0 || cap == 0 || parked + adds <= cap) return {};
  const bool respawn = adapts && cmd.hosts.size() == static_cast<std::size_t>(cmd.size);
  return {respawn ? Verdict::kRespawn : Verdict::kRefuse, parked + adds, cap};
}

bool Parking::admit(Command& cmd, int size, int max_parked, bool adapts,
                    std::string* refusal) const {
  // pcmd asks for a respawn where the command leaves a host it would give back (Slurm): a
  // PCM_Adapt job whose old world can leave does it, and so does PCM_Merge for a merge or a
  // shrinking resize (the paper's calls hand it the data); elsewhere the leavers park there.
  const bool shrinks =
      cmd.kind == Command::Kind::kMerge || (cmd.kind == Command::Kind::kResize && cmd.size < size);
  if (cmd.respawn && cmd.kind != Command::Kind::kSplit &&
      !((adapts || shrinks) && split_leaves &&
        cmd.hosts.size() == static_cast<std::size_t>(cmd.size))) {
    cmd.respawn = false;
    plog()->info(
        "[rank 0] {}: carried out in place, not by respawning the world as pcmd asked "
        "(only PCM_Adapt, or PCM_Merge, in a job whose old world can leave can respawn it)",
        cmd.describe());
  }
  const Decision d = bound(cmd, size, max_parked, adapts);
  if (d.verdict == Verdict::kKeep) return true;
  if (d.verdict == Verdict::kRespawn) {
    cmd.respawn = true;
    plog()->info(
        "[rank 0] {}: carried out by respawning the whole world, which lets the {} parked "
        "processes leave (it would park {}, over the cap of {})",
        cmd.describe(), parked, d.would_park, d.cap);
    return true;
  }
  *refusal = fmt::format(
      "refused: it would park {} processes, over the cap of {} "
      "(PCM_MAX_PARKED); {}",
      d.would_park, d.cap,
      adapts ? "pcmd sent no host for each new rank, which a respawn needs"
             : "a job that does not use PCM_Adapt cannot be respawned "
               "instead; a split or a growing resize lets every parked "
               "process leave");
  return false;
}

void World::begin(mpi::Comm dup, int rank, int size) {
  comm_ = std::move(dup);
  rank_ = rank;
  size_ = size;
}

void World::adopt(mpi::Comm comm) {
  comm_ = std::move(comm);
  MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_.get(), &rank_);
  MPI_Comm_size(comm_.get(), &size_);
  parking.largest = std::max(parking.largest, size_);
}

void World::leave() {
  comm_.reset();
  rank_ = -1;
  size_ = 0;
}

}  // namespace pcm::lib
