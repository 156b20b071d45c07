// checkpoint_levels.h — checkpoint levels (PCM_CHECKPOINT_LOCAL_DIR): each rank's shard of a
// version goes to a node-local directory, to the same directory on a partner host (the staged
// bytes sent over MPI behind the application, partner_copy.h, written by the partner's writer
// thread) and, on the first version of a run and every PCM_CHECKPOINT_FLUSH_EVERY-th, to the
// shared level (the version's directory). A restart takes each shard from the fastest level that
// holds a verified copy (checkpoint_levels.cpp, checkpointer.cpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "levels.h"
#include "shard.h"

namespace pcm::lib {

// Every rank's host, as pcmd knows it (processor_name), on every rank (collective over comm).
struct HostMap {
  std::vector<std::string> of_rank;  // host of each rank
  std::vector<std::string> hosts;    // distinct, in order of their first rank
  int index_of(const std::string& host) const;
  // The lowest rank on each host.
  bool first_on_host(int rank) const;
};
HostMap host_map(MPI_Comm comm);

// Where one rank's shard of one version goes.
struct LevelPlan {
  std::string dir;           // <local dir>/<job>/v<iteration>
  std::string job_dir;       // <local dir>/<job>
  std::string host;          // this rank's host
  int partner = -1;          // the rank that keeps a copy of this rank's shard (-1: none)
  std::string partner_host;  // its host
  std::vector<int> keeps;    // the ranks whose copies this rank keeps
  bool flush = true;         // also on the shared level
};
// The partner of a rank: the rank of the same index (modulo) on the next host, over the hosts in
// a ring. use_partner: PCM_CHECKPOINT_PARTNER (-1: when there is more than one host).
LevelPlan plan_levels(const HostMap& hosts, int rank, const std::string& local_dir,
                      const std::string& job, std::int64_t iteration, int use_partner, bool flush);

// Writes the shard of items to dir/name (dir made when missing) through a temporary name,
// fsynced, then renamed: a file left by an earlier run of the same version is replaced.
ShardRecord write_shard_replacing(const std::string& dir, const ShardHeader& header,
                                  const std::vector<ShardItem>& items, const std::string& name);
// Removes the local version directories of job_dir older than the newest `keep` other than the
// one of `current` (a version is kept until two newer ones exist).
void prune_local(const std::string& job_dir, std::int64_t current, std::size_t keep = 2);

// Whether the file at path holds the shard record describes: size and every chunk's checksum.
bool verify_copy(const std::string& path, const ShardRecord& record);

}  // namespace pcm::lib
