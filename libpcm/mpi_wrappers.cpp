// mpi_wrappers.cpp — the MPI functions libpcm defines in place of MPI's (the MPI profiling
// interface): MPI_Send & co. time the PMPI_* call they make for the application's profile
// (profiler.h), and MPI_Finalize parks a retired process. Compiled into libpcm itself, never into
// pcm_runtime_core, so that every program linked with libpcm gets them and unit tests do not.
// When profiling is off (PCM_PROFILE_MS=0), on another thread, or inside libpcm's own work, a
// wrapper is one test and the PMPI_* call.
#include <mpi.h>

#include <cstdint>

#include "c_boundary.h"
#include "mpi_util.h"
#include "profiler.h"
#include "runtime.h"

using pcm::lib::guard;
using pcm::lib::profiler;

namespace {

pcm::lib::Runtime& rt() { return pcm::lib::Runtime::instance(); }

using pcm::lib::counted;
using pcm::lib::ticks;

// Times one PMPI call for the profile.
template <typename F>
int timed(F&& call) {
  const std::uint64_t t0 = ticks();
  const int rc = call();
  profiler().mpi_call(ticks() - t0);
  return rc;
}

}  // namespace

// Sends also count their bytes (by destination); every other call only its time.
#define PCM_TIMED(CALL)        \
  if (!counted()) return CALL; \
  return timed([&] { return CALL; })
#define PCM_SENT(CALL, COMM, DEST, COUNT, TYPE) \
  if (!counted()) return CALL;                  \
  profiler().sent(COMM, DEST, COUNT, TYPE);     \
  return timed([&] { return CALL; })

extern "C" {

// libpcm's MPI_Finalize comes before MPI's in a program linked with PCM. A retired process that
// calls MPI_Finalize instead of PCM_Exit would otherwise spin in MPICH's finalize until the job
// ends (and its waker could not wake it): it parks as PCM_Exit does. Every other call goes straight
// to PMPI_Finalize.
PCM_EXPORT int MPI_Finalize(void) {
  if (!rt().retired_unfinished()) return PMPI_Finalize();
  pcm::lib::plog()->warn(
      "a retired process called MPI_Finalize: it waits for the end of the job as PCM_Exit "
      "does (call PCM_Exit instead)");
  return guard("MPI_Finalize", [&] { return rt().exit_retired(); }) == PCM_SUCCESS ? MPI_SUCCESS
                                                                                   : MPI_ERR_OTHER;
}

PCM_EXPORT int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                        MPI_Comm comm) {
  PCM_SENT(PMPI_Send(buf, count, type, dest, tag, comm), comm, dest, count, type);
}
PCM_EXPORT int MPI_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                         MPI_Comm comm) {
  PCM_SENT(PMPI_Ssend(buf, count, type, dest, tag, comm), comm, dest, count, type);
}
PCM_EXPORT int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                         MPI_Comm comm, MPI_Request* req) {
  PCM_SENT(PMPI_Isend(buf, count, type, dest, tag, comm, req), comm, dest, count, type);
}
PCM_EXPORT int MPI_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                          MPI_Comm comm, MPI_Request* req) {
  PCM_SENT(PMPI_Issend(buf, count, type, dest, tag, comm, req), comm, dest, count, type);
}
PCM_EXPORT int MPI_Sendrecv(const void* sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                            void* rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                            MPI_Comm comm, MPI_Status* status) {
  PCM_SENT(PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm,
                         status),
           comm, dest, scount, stype);
}
PCM_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                        MPI_Status* status) {
  PCM_TIMED(PMPI_Recv(buf, count, type, source, tag, comm, status));
}
PCM_EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag,
                         MPI_Comm comm, MPI_Request* req) {
  PCM_TIMED(PMPI_Irecv(buf, count, type, source, tag, comm, req));
}
PCM_EXPORT int MPI_Wait(MPI_Request* req, MPI_Status* status) { PCM_TIMED(PMPI_Wait(req, status)); }
PCM_EXPORT int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  PCM_TIMED(PMPI_Waitall(n, reqs, statuses));
}
PCM_EXPORT int MPI_Waitany(int n, MPI_Request reqs[], int* index, MPI_Status* status) {
  PCM_TIMED(PMPI_Waitany(n, reqs, index, status));
}
PCM_EXPORT int MPI_Waitsome(int n, MPI_Request reqs[], int* outcount, int indices[],
                            MPI_Status statuses[]) {
  PCM_TIMED(PMPI_Waitsome(n, reqs, outcount, indices, statuses));
}
PCM_EXPORT int MPI_Barrier(MPI_Comm comm) { PCM_TIMED(PMPI_Barrier(comm)); }
PCM_EXPORT int MPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  PCM_TIMED(PMPI_Bcast(buf, count, type, root, comm));
}
PCM_EXPORT int MPI_Reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
                          int root, MPI_Comm comm) {
  PCM_TIMED(PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm));
}
PCM_EXPORT int MPI_Allreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
  PCM_TIMED(PMPI_Allreduce(sbuf, rbuf, count, type, op, comm));
}
PCM_EXPORT int MPI_Gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                          MPI_Datatype rtype, int root, MPI_Comm comm) {
  PCM_TIMED(PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}
PCM_EXPORT int MPI_Gatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                           const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                           MPI_Comm comm) {
  PCM_TIMED(PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm));
}
PCM_EXPORT int MPI_Scatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                           MPI_Datatype rtype, int root, MPI_Comm comm) {
  PCM_TIMED(PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}
PCM_EXPORT int MPI_Allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                             int rcount, MPI_Datatype rtype, MPI_Comm comm) {
  PCM_TIMED(PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}
PCM_EXPORT int MPI_Alltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                            int rcount, MPI_Datatype rtype, MPI_Comm comm) {
  PCM_TIMED(PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}
PCM_EXPORT int MPI_Alltoallv(const void* sbuf, const int scounts[], const int sdispls[],
                             MPI_Datatype stype, void* rbuf, const int rcounts[],
                             const int rdispls[], MPI_Datatype rtype, MPI_Comm comm) {
  PCM_TIMED(PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm));
}

}  // extern "C"
