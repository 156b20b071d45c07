// buffer.h — memory for the buffers a reconfiguration hands to the application (free()-able).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "distribution.h"

namespace pcm::lib {

// A malloc-compatible buffer of `bytes` (huge pages from 4 MiB up, unless PCM_HUGEPAGES=0); NULL
// when memory runs out.
void* alloc_for_exchange(std::size_t bytes);

// A buffer for map d's rank with its ghost units zeroed (the owned units are left for the caller
// to fill). Throws PCM_ERR_INTERNAL when memory runs out.
char* new_buffer(const Distribution& d, int rank, std::size_t elem);

// The bytes new_buffer allocates for map d's rank.
std::size_t buffer_bytes(const Distribution& d, int rank, std::size_t elem);

// new_buffer with every page faulted in now (MADV_POPULATE_WRITE, or a write per page where the
// kernel lacks it): a split's new process makes it while the old world still iterates (overlap.h),
// so that the data later lands in memory already touched. Returns NULL when memory runs out.
char* prefaulted_buffer(const Distribution& d, int rank, std::size_t elem);

// old (malloc'd) resized with realloc to map d's rank, its ghost units zeroed: for a rank whose
// old buffer is a prefix of its new one (keeps_in_place). NULL, with old untouched, when memory
// runs out.
char* grow_buffer(void* old, const Distribution& d, int rank, std::size_t elem);

// Buffers a restart or migration allocated, freed unless handed to the application.
struct NewBuffers {
  std::vector<char*> bufs;
  NewBuffers() = default;
  NewBuffers(const NewBuffers&) = delete;
  NewBuffers& operator=(const NewBuffers&) = delete;
  ~NewBuffers();
  char* add(char* b) {
    bufs.push_back(b);
    return b;
  }
};

// Buffers faulted in ahead of a reconfiguration (overlap.h), each with what it was made for
// ({"to": map, "type": type}): the reconfiguration takes one where that is what it needs.
struct Prefaulted {
  NewBuffers bufs;  // NULL where there is none (memory ran out, or it was taken)
  std::vector<nlohmann::json> made_for;
  void add(char* buf, nlohmann::json what) {
    bufs.add(buf);
    made_for.push_back(std::move(what));
  }
  // Buffer i if it was made for what (then it is the caller's), else NULL.
  char* take(std::size_t i, const nlohmann::json& what);
  void clear();
};

// 0, 1, ..., n-1.
std::vector<int> identity(int n);

// MPI_Wtime.
double wtime();

}  // namespace pcm::lib
