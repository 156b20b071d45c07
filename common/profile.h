// profile.h — a job's profile as libpcm measures it through the MPI profiling interface and pcmd
// keeps it: per rank, the iterations (time between PCM_Status calls), the time inside the MPI
// calls the application made and the calls, and the bytes and messages it sent to each rank of
// the world. One profile covers one interval (PCM_PROFILE_MS); rank 0 gathers it and sends it
// with a poll. Shared by libpcm (builds it), pcmd (validates and keeps it) and pcmctl (prints it).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "namespaces.h"

namespace pcm::common {

// One rank's figures over the interval.
struct RankProfile {
  std::int64_t iterations = 0;  // PCM_Status calls measured (each ends an iteration)
  double iter_s = 0;            // the time of those iterations, summed
  double iter_min_s = 0;        // the shortest and longest mean iteration of an agreement window
  double iter_max_s = 0;        // (PCM_Status's windows: about 1 ms, or 256 calls)
  double mpi_s = 0;             // time inside the application's MPI calls
  std::int64_t mpi_calls = 0;
  std::uint64_t bytes_out = 0;  // sent to any process (the matrix's row, plus outside the world)
};

struct JobProfile {
  // Ranks beyond which no communication matrix is kept (a row per rank would not fit a message).
  static constexpr int kMaxMatrixRanks = 64;
  static constexpr int kMaxRanks = 4096;

  double interval_s = 0;       // wall time the profile covers (rank 0's clock)
  std::int64_t iteration = 0;  // rank 0's iteration when it was gathered
  std::vector<RankProfile> ranks;
  // size x size, row = sender, column = receiver (world ranks); empty above kMaxMatrixRanks.
  std::vector<std::uint64_t> bytes;
  std::vector<std::uint64_t> messages;

  nlohmann::json to_json() const;
  // Validates a profile from the network (sizes, finite non-negative figures); throws
  // pcm::Error(PCM_ERR_ARG) naming what is wrong. world_size: the job's (0: any).
  static JobProfile from_json(const nlohmann::json& j, int world_size);
  // pcmctl's table: per rank, iterations, ms per iteration (mean, min, max), MPI share, calls,
  // bytes sent; then the matrix of bytes (when there is one).
  std::string describe() const;
};

}  // namespace pcm::common
