// buffer.cpp — memory for the buffers a reconfiguration hands to the application.
#include "buffer.h"

#include <mpi.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <utility>

#include "error.h"
#include "mpi_util.h"
#include "pcm_types.h"
#include "settings.h"

namespace pcm::lib {

// Memory for a new buffer, which the user frees with free(). From 4 MiB up it is 2 MiB-aligned
// and asks for transparent huge pages: the exchange's first touch of a new page is most of a
// redistribution's cost on VMs where a page fault is dear (1 GiB: 3 s in 4 KiB pages, 0.1-1.4 s
// in 2 MiB pages, on the project's machine). PCM_HUGEPAGES=0 keeps plain malloc.
void* alloc_for_exchange(std::size_t bytes) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  const bool huge = Settings::hugepages();
  if (!huge || bytes < 2 * kHuge) return std::malloc(bytes);
  void* p = nullptr;
  if (posix_memalign(&p, kHuge, bytes) != 0) return nullptr;
  int rc = -1;
#ifdef MADV_HUGEPAGE
  rc = madvise(p, bytes / kHuge * kHuge, MADV_HUGEPAGE);  // advice: without THP it does nothing
#endif
  plog()->debug("new buffer of {} bytes: huge pages {}", bytes, rc == 0 ? "requested" : "refused");
  return p;
}

namespace {

// Zeroes the ghost units of map d's rank in buf.
void zero_halos(const Distribution& d, int rank, std::size_t elem, char* buf) {
  const std::size_t halo = static_cast<std::size_t>(d.halo() * d.unit_len()) * elem;
  if (halo == 0) return;
  const auto& segs = d.segments(rank);
  for (std::size_t i = 0; i < segs.size(); ++i) {
    std::size_t off = static_cast<std::size_t>(d.segment_offset(rank, i)) * elem;
    std::memset(buf + off - halo, 0, halo);
    std::memset(buf + off + static_cast<std::size_t>(segs[i].count * d.unit_len()) * elem, 0, halo);
  }
}

// Faults in [p, p + bytes): one madvise where the kernel has MADV_POPULATE_WRITE (5.14), which
// on this project's VM faults new memory in faster than the writes of a copy do (1 GiB: 0.46 s
// against 0.8-0.9 s); else a write per page.
void populate(char* p, std::size_t bytes) {
  const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const std::uintptr_t lo = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
  const std::uintptr_t hi = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(page - 1);
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux's value; older headers lack it
#endif
  if (hi > lo && madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE) == 0) return;
  for (std::size_t off = 0; off < bytes; off += page) static_cast<volatile char*>(p)[off] = 0;
}

}  // namespace

std::size_t buffer_bytes(const Distribution& d, int rank, std::size_t elem) {
  return static_cast<std::size_t>(std::max<std::int64_t>(1, d.local_elements(rank))) * elem;
}

char* prefaulted_buffer(const Distribution& d, int rank, std::size_t elem) {
  const std::size_t bytes = buffer_bytes(d, rank, elem);
  char* buf = static_cast<char*>(alloc_for_exchange(bytes));
  if (!buf) return nullptr;
  populate(buf, bytes);
  zero_halos(d, rank, elem, buf);
  return buf;
}

// A buffer for map d's rank: owned units are all overwritten by the exchange, so only the halos
// are zeroed (zeroing all would touch every page twice).
char* new_buffer(const Distribution& d, int rank, std::size_t elem) {
  const std::size_t bytes = buffer_bytes(d, rank, elem);
  char* buf = static_cast<char*>(alloc_for_exchange(bytes));
  if (!buf) fail(PCM_ERR_INTERNAL, "out of memory for {} bytes", bytes);
  zero_halos(d, rank, elem, buf);
  return buf;
}

// realloc keeps the old bytes where they are; glibc grows a large (mmapped) block with mremap,
// which moves page tables, not data. The grown part asks for huge pages as new buffers do.
char* grow_buffer(void* old, const Distribution& d, int rank, std::size_t elem) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const bool huge = Settings::hugepages();
  const std::size_t bytes = buffer_bytes(d, rank, elem);
  char* buf = static_cast<char*>(std::realloc(old, bytes));
  if (!buf) return nullptr;
#ifdef MADV_HUGEPAGE
  const std::uintptr_t lo = (reinterpret_cast<std::uintptr_t>(buf) + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t hi = (reinterpret_cast<std::uintptr_t>(buf) + bytes) & ~(kHuge - 1);
  if (huge && hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
  (void)huge;
#endif
  zero_halos(d, rank, elem, buf);
  return buf;
}

std::vector<int> identity(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

double wtime() { return MPI_Wtime(); }

NewBuffers::~NewBuffers() {
  for (char* b : bufs) std::free(b);
}

char* Prefaulted::take(std::size_t i, const nlohmann::json& what) {
  if (i >= bufs.bufs.size() || !bufs.bufs[i] || made_for[i] != what) return nullptr;
  return std::exchange(bufs.bufs[i], nullptr);
}

void Prefaulted::clear() {
  for (char*& b : bufs.bufs) std::free(std::exchange(b, nullptr));
  bufs.bufs.clear();
  made_for.clear();
}

}  // namespace pcm::lib
