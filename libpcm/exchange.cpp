// exchange.cpp — the Alltoallw redistribution of a split's or merge's arrays (see exchange.h).
#include "exchange.h"

#include <climits>

#include "error.h"
#include "leftovers.h"
#include "mpi_util.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::lib {

// Each peer gets one indexed datatype over the application's buffers, so the data goes from the
// old buffer to the new one with no packing copy in between.
void exchange(MPI_Comm comm, int npeers, const std::vector<Transfer>& plan, int me_from, int me_to,
              const Distribution& from, const Distribution& to, const std::vector<int>& peer_of_new,
              const std::vector<int>& peer_of_old, const char* oldbuf, char* newbuf, int type,
              const Waiter* wait) {
  const double t0 = MPI_Wtime();
  const std::size_t elem = proto::type_size(type);
  MPI_Datatype raw;
  mpi_check(MPI_Type_contiguous(static_cast<int>(from.unit_len()), mpi_type(type), &raw),
            "MPI_Type_contiguous");
  const mpi::Datatype unit = mpi::committed(raw);
  // Per peer: block lengths (units) and byte displacements into the buffer.
  std::vector<std::vector<int>> slen(npeers), rlen(npeers);
  std::vector<std::vector<MPI_Aint>> soff(npeers), roff(npeers);
  long long sent = 0, received = 0;
  for (const Transfer& t : plan) {
    if (t.count > INT_MAX) fail(PCM_ERR_ARG, "a run of {} units is too long", t.count);
    if (t.from == me_from) {
      int p = peer_of_new[t.to];
      slen[p].push_back(static_cast<int>(t.count));
      soff[p].push_back(static_cast<MPI_Aint>(from.unit_offset(t.first, nullptr)) *
                        static_cast<MPI_Aint>(elem));
      sent += t.count;
    }
    if (t.to == me_to) {
      int p = peer_of_old[t.from];
      rlen[p].push_back(static_cast<int>(t.count));
      roff[p].push_back(static_cast<MPI_Aint>(to.unit_offset(t.first, nullptr)) *
                        static_cast<MPI_Aint>(elem));
      received += t.count;
    }
  }
  std::vector<int> sc(npeers, 0), rc(npeers, 0), zero(npeers, 0);
  // MPI_BYTE (predefined, never freed) where nothing moves; owned holds the types made here.
  std::vector<MPI_Datatype> st(npeers, MPI_BYTE), rt(npeers, MPI_BYTE);
  std::vector<mpi::Datatype> owned;
  owned.reserve(2 * static_cast<std::size_t>(npeers));
  auto make = [&](std::vector<int>& len, std::vector<MPI_Aint>& off, MPI_Datatype* t, int* c) {
    if (len.empty()) return;
    MPI_Datatype h;
    mpi_check(MPI_Type_create_hindexed(static_cast<int>(len.size()), len.data(), off.data(),
                                       unit.get(), &h),
              "MPI_Type_create_hindexed");
    owned.push_back(mpi::committed(h));
    *t = owned.back().get();
    *c = 1;
  };
  for (int p = 0; p < npeers; ++p) {
    make(slen[p], soff[p], &st[p], &sc[p]);
    make(rlen[p], roff[p], &rt[p], &rc[p]);
  }
  const double t1 = MPI_Wtime();
  // MPI wants valid pointers even where nothing moves, and never one buffer on both sides.
  static char nothing_sent, nothing_received;
  const void* sbuf = oldbuf ? oldbuf : &nothing_sent;
  void* rbuf = newbuf ? newbuf : &nothing_received;
  if (wait) {
    MPI_Request req;
    mpi_check(MPI_Ialltoallw(sbuf, sc.data(), zero.data(), st.data(), rbuf, rc.data(), zero.data(),
                             rt.data(), comm, &req),
              "MPI_Ialltoallw");
    // Given up (a split's old side: the guard threw), the exchange runs on as an orphan
    // (leftovers.h). MPICH built its schedule from the counts and types at the call and holds its
    // own reference to each datatype, so none of the locals here is needed. The old side receives
    // nothing (into nothing_received, static) and sends from the application's buffers, which a
    // given-up split leaves with the application: send_split drains the orphans (the new
    // processes end at the verdict, which completes every transfer with them) before it returns.
    requests::wait_counted(&req, wait, nullptr);
  } else {
    mpi_check(MPI_Alltoallw(sbuf, sc.data(), zero.data(), st.data(), rbuf, rc.data(), zero.data(),
                            rt.data(), comm),
              "MPI_Alltoallw");
  }
  const double t2 = MPI_Wtime();
  const long long unit_bytes = static_cast<long long>(elem) * from.unit_len();
  plog()->debug("exchange: sent {} B, received {} B; types {:.4f} s, alltoallw {:.4f} s",
                sent * unit_bytes, received * unit_bytes, t1 - t0, t2 - t1);
}

}  // namespace pcm::lib
