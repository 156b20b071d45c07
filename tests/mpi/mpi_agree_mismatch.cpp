// mpi_agree_mismatch.cpp — libpcm's agreement (agree(), mpi_util.h) says when the ranks are not in
// the same collective call, rather than using another call's data (issue 38 item 5: a root of
// -540086711 once came out of it in MPI_PCM_Init, right after a host came back). Two ranks:
//   1. both agree, rank 1 with an error: both throw rank 1's code and message;
//   2. rank 0 agrees while rank 1 is in another reduction of the same shape whose data no rank of
//      an agreement sends (words that look like a success without the agreement's mark; a code
//      from rank 5 of 2): rank 0 throws PCM_ERR_MPI saying so, never takes it for a success and
//      never broadcasts from a rank that does not exist.
// Prints "ok" on each rank and exits 0, or says what differed and exits 1.
#include <mpi.h>

#include <cstdio>
#include <string>

#include "error.h"
#include "mpi_util.h"
#include "pcm_types.h"

namespace {

int check(bool ok, int rank, const std::string& what) {
  if (!ok) std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bad = check(size == 2, rank, "run on 2 processes");
  if (bad) MPI_Abort(MPI_COMM_WORLD, 1);

  // 1. An ordinary agreement on a failure.
  try {
    pcm::lib::agree(MPI_COMM_WORLD, rank == 1 ? PCM_ERR_CONFIG : PCM_SUCCESS, "no file here");
    bad += check(false, rank, "case 1: agree returned although rank 1 failed");
  } catch (const pcm::Error& e) {
    bad += check(e.code() == PCM_ERR_CONFIG, rank, "case 1: code " + std::to_string(e.code()));
    const std::string want = rank == 1 ? "no file here" : "on rank 1: no file here";
    bad += check(want == e.what(), rank, std::string("case 1: message '") + e.what() + "'");
  }

  // 2. Rank 1 is in another call of the same shape: data no agreement could carry. First words
  //    that look like an agreement on success (which the check of the code and rank alone took
  //    for one), then the garbage of the field (a code from rank 5 of 2). The other call's
  //    third and fourth words are those of MPICH's context-id mask (-1), not the agreement's mark.
  const int others[2][4] = {{PCM_SUCCESS, 0, -1, -1}, {-540086711, 5, -1, -1}};
  for (const auto& other : others) {
    if (rank == 0) {
      try {
        pcm::lib::agree(MPI_COMM_WORLD, PCM_SUCCESS, "");
        bad += check(false, rank, "case 2: agree returned on another call's data");
      } catch (const pcm::Error& e) {
        const std::string msg = e.what(), want = "returned code " + std::to_string(other[0]) +
                                                 " of rank " + std::to_string(other[1]);
        bad += check(e.code() == PCM_ERR_MPI, rank, "case 2: code " + std::to_string(e.code()));
        bad += check(msg.find("not in the same collective call") != std::string::npos &&
                         msg.find(want) != std::string::npos,
                     rank, "case 2: message '" + msg + "'");
      }
    } else {
      int out[4] = {0, 0, 0, 0};
      MPI_Allreduce(other, out, 2, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (!bad) std::printf("rank %d: ok\n", rank);
  MPI_Finalize();
  return bad ? 1 : 0;
}
