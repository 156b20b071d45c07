// split_guard.h — a split that loses a new process goes back to the old world.
//
// Between the spawn and the end of the data exchange, a split (PCM_Adapt's, and the old side of
// PCM_Split) can still be given up: the old world has every byte of its data and its
// communicator. The old side's waits go through an OldSideGuard, which gives up when an MPI call
// on the intercommunicator fails, when another old process gave up, when pcmd says a new process
// was lost (rank 0 asks it, through its poll, while it waits), or shortly before the
// reconfiguration's bound (PCM_RECONFIG_TIMEOUT_S) would end the process. Then the old processes
// agree (over the old world, which is intact when every old process lives) and either all go on
// with the split or all go back; rank 0 tells every new process the verdict. The new side's
// waits go through a NewSideGuard, which ends its process (leaving pcmd with "bye") as soon as the
// verdict says "given up", or an MPI call fails: a new process of a failed split has no job to
// join. A split the old world withdrew before any exchange (another program was named, or the job
// ended, while the spawn ran in the background: overlap.h) says so in its verdict; its new
// processes end with MPI_Finalize, so that a launcher which ends a job at a process lost (hydra
// without -disable-auto-cleanup) does not take them for lost. When an old process is lost too,
// there is nothing to go back to: the watchdog ends the rest and the job is recovered from its
// newest version (pcmctl run).
//
// It helps only where the MPI launcher lets the job outlive one of its processes: MPICH's hydra
// with -disable-auto-cleanup, Open MPI's mpirun with --enable-recovery. Elsewhere the launcher ends
// the whole job at the first process lost (and pcmctl run recovers it).
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mpi_util.h"

namespace pcm::lib {

// Whether a split's waits are guarded at all: the same on every process (asked once). MPICH
// always; Open MPI when its launcher keeps the job at a lost process (mpirun --enable-recovery,
// which its ranks and the processes they spawn see as OMPI_MCA_orte_enable_recovery): without it
// mpirun ends the whole job at a lost process anyway. Any other MPI: never.
bool split_can_go_back();

// Thrown by an OldSideGuard's wait: this process gave the split up (why() says why).
struct SplitGivenUp {
  std::string why;
};

// What the old world tells the new processes of a split. kWithdrawn: given up before any exchange
// on the intercommunicator, with nothing of the old side's pending on it.
enum class SplitVerdict : int { kGivenUp = 0, kGoOn = 1, kWithdrawn = 2 };

class OldSideGuard {
 public:
  using Clock = std::chrono::steady_clock;
  // world: the old world (the guard talks on a duplicate of it); deadline: when to give up
  // waiting (nullopt: never); lost: asked now and then by rank 0 while it waits (what pcmd says
  // of the new processes: "" while none is lost). Collective over world (the duplicate).
  OldSideGuard(MPI_Comm world, std::optional<Clock::time_point> deadline,
               std::function<std::string()> lost);
  ~OldSideGuard();
  OldSideGuard(const OldSideGuard&) = delete;
  OldSideGuard& operator=(const OldSideGuard&) = delete;

  // Waits for req (spinning: MPI progresses only inside MPI calls; gently, sleeping 0.2 ms
  // between tests, where the other side does the work). Throws SplitGivenUp.
  void wait(MPI_Request* req, bool gently = false);
  Waiter waiter(bool gently = false) {
    return [this, gently](MPI_Request* r) { wait(r, gently); };
  }
  // This process gives up (once; later calls keep the first reason): the others hear it.
  void give_up(const std::string& why);
  bool gave_up() const { return !why_.empty(); }
  // Collective over the old world: true if no process gave up. Otherwise *why is the reason at
  // this process (its own, or the first it heard). Leaves no message behind.
  bool agree(std::string* why);
  // Rank 0 of the old world, after agree: the verdict to every process of the new world on
  // inter. Never waits for a process that may be gone.
  static void tell_new_world(MPI_Comm inter, SplitVerdict verdict);

 private:
  void check_others();

  mpi::Comm ctl_;
  int rank_ = 0, size_ = 0;
  std::optional<Clock::time_point> deadline_;
  std::function<std::string()> lost_;
  Clock::time_point next_ask_{};
  std::string why_;  // "" while this process has not given up
  // One receive posted for another process's "given up" (its reason), and this process's own
  // messages to the others.
  MPI_Request heard_req_ = MPI_REQUEST_NULL;
  std::vector<char> heard_;
  bool heard_done_ = false;
  bool told_ = false;  // this process told the others it gave up
  std::vector<MPI_Request> sends_;
  std::string told_text_;
};

// A new process of a split: its waits until the old world's verdict. end(why, withdrawn) is called
// (and must not return) when the split was given up or an MPI call failed; withdrawn: the old
// world withdrew it (SplitVerdict::kWithdrawn), the process may finalize (end_withdrawn).
class NewSideGuard {
 public:
  using End = std::function<void(const std::string& why, bool withdrawn)>;
  NewSideGuard(MPI_Comm parent, End end);
  ~NewSideGuard();
  NewSideGuard(const NewSideGuard&) = delete;
  NewSideGuard& operator=(const NewSideGuard&) = delete;
  void wait(MPI_Request* req);
  Waiter waiter() {
    return [this](MPI_Request* r) { wait(r); };
  }
  // Waits for the verdict; returns if the split goes on.
  void await_verdict();

 private:
  void check_verdict();
  End end_;
  MPI_Request verdict_req_ = MPI_REQUEST_NULL;
  int verdict_ = -1;
};

// The old side of a split withdrawn before any exchange (every rank of the old world; spawned: the
// spawn succeeded). Where the split can go back, rank 0 tells the new processes kWithdrawn and
// every rank disconnects, which lets their MPI_Finalize end at once (MPICH closes a dynamic
// connection at MPI_Comm_disconnect, not at MPI_Comm_free: a new process would otherwise spin in
// MPI_Finalize until the old world finalized). Elsewhere the new processes wait until the
// launcher ends them and the intercommunicator is only freed.
void withdraw_split(mpi::Comm inter, bool spawned, int rank);

// Ends a new process whose split was withdrawn: MPI_Finalize (the launcher sees a clean end), then
// _exit(0); should the finalize take longer than bound, _exit(0) all the same.
[[noreturn]] void end_withdrawn(std::chrono::milliseconds bound);

// The tag of the verdict on a split's intercommunicator (which only PCM uses).
constexpr int kVerdictTag = 7;

}  // namespace pcm::lib
