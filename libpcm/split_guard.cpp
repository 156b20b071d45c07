// split_guard.cpp — a split that loses a new process goes back to the old world (split_guard.h).
#include "split_guard.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <thread>

#include "leftovers.h"

namespace pcm::lib {

namespace {

// The tag of a "given up" message on the guard's duplicate of the old world.
constexpr int kGiveUpTag = 1;
constexpr int kReasonMax = 256;  // bytes of a reason sent, with its NUL
// Tests between looks at the rest (time, other processes, pcmd): a test costs well under 1 us.
constexpr unsigned kTestsPerLook = 256;

// What an MPI error says, shortly: MPICH's text is a stack whose last entry names the cause
// ("...: Communication error with rank 0").
std::string mpi_error_text(int rc) {
  std::string s = mpi_error_string(rc);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (const auto at = s.rfind("): "); at != std::string::npos) s = s.substr(at + 3);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return "an MPI call with the new processes failed: " + s;
}

void pause_us(long us) {
  const timespec t{0, us * 1000};
  nanosleep(&t, nullptr);
}

// Open MPI's MCA variable as mpirun --enable-recovery sets it ("1"), or as a user might.
bool open_mpi_recovery() {
  const char* v = std::getenv("OMPI_MCA_orte_enable_recovery");
  if (!v) return false;
  const std::string s(v);
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

}  // namespace

bool split_can_go_back() {
  static const bool yes = mpi::is_mpich() || (mpi::is_open_mpi() && open_mpi_recovery());
  return yes;
}

OldSideGuard::OldSideGuard(MPI_Comm world, std::optional<Clock::time_point> deadline,
                           std::function<std::string()> lost)
    : deadline_(deadline), lost_(std::move(lost)), heard_(kReasonMax, '\0') {
  mpi_check(MPI_Comm_dup(world, ctl_.out()), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(ctl_.get(), MPI_ERRORS_RETURN);
  MPI_Comm_rank(ctl_.get(), &rank_);
  MPI_Comm_size(ctl_.get(), &size_);
  mpi_check(MPI_Irecv(heard_.data(), kReasonMax, MPI_CHAR, MPI_ANY_SOURCE, kGiveUpTag, ctl_.get(),
                      &heard_req_),
            "MPI_Irecv");
  requests::started();
}

OldSideGuard::~OldSideGuard() {
  if (mpi::finalized()) return;
  // Only on an error path (agree completes both): nothing may be left to match later. A
  // receive can be cancelled, and freed; the sends are small, from told_text_, which goes with
  // this guard: they become orphans with a copy of it instead (leftovers.h).
  if (heard_req_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&heard_req_);
    MPI_Request_free(&heard_req_);
    requests::ended();
  }
  if (!sends_.empty()) {
    const auto text = std::make_shared<std::string>(std::move(told_text_));
    for (MPI_Request& r : sends_) requests::orphan(&r, text);
  }
}

void OldSideGuard::wait(MPI_Request* req, bool gently) {
  for (unsigned n = 1;; ++n) {
    int done = 0;
    const int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) give_up(mpi_error_text(rc));
    if (!gave_up() && done) return;
    if (!gave_up() && (gently || n % kTestsPerLook == 0)) {
      check_others();
      const Clock::time_point now = Clock::now();
      if (!gave_up() && deadline_ && now >= *deadline_)
        give_up("the new processes did not finish their part in time (PCM_RECONFIG_TIMEOUT_S)");
      if (!gave_up() && lost_ && now >= next_ask_) {
        next_ask_ = now + std::chrono::milliseconds(20);
        if (const std::string l = lost_(); !l.empty()) give_up("new process " + l + " was lost");
      }
    }
    if (gave_up()) throw SplitGivenUp{why_};
    if (gently) pause_us(200);
  }
}

void OldSideGuard::check_others() {
  if (heard_done_) return;
  int flag = 0;
  MPI_Status st;
  if (MPI_Test(&heard_req_, &flag, &st) != MPI_SUCCESS || !flag) return;
  heard_done_ = true;
  requests::ended();
  heard_.back() = '\0';
  if (why_.empty()) why_ = heard_.data();
}

void OldSideGuard::give_up(const std::string& why) {
  if (told_ || (!why_.empty() && heard_done_)) return;  // told, or heard it from another
  if (why_.empty()) why_ = why;
  told_ = true;
  told_text_ = why_.substr(0, kReasonMax - 1);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request q;
    // The old world is intact while this helps: a failure here leaves the bound to the watchdog.
    if (MPI_Isend(told_text_.c_str(), static_cast<int>(told_text_.size()) + 1, MPI_CHAR, r,
                  kGiveUpTag, ctl_.get(), &q) == MPI_SUCCESS) {
      sends_.push_back(q);
      requests::started();
    }
  }
}

bool OldSideGuard::agree(std::string* why) {
  check_others();
  int mine[2] = {gave_up() ? 1 : 0, told_ ? 1 : 0}, sum[2] = {0, 0};
  mpi_check(MPI_Allreduce(mine, sum, 2, MPI_INT, MPI_SUM, ctl_.get()), "MPI_Allreduce");
  // Every process that told, told every other: receive exactly what was sent here.
  const int expected = sum[1] - mine[1];
  int got = 0;
  if (!heard_done_) {
    MPI_Status st;
    mpi_check(MPI_Cancel(&heard_req_), "MPI_Cancel");
    mpi_check(MPI_Wait(&heard_req_, &st), "MPI_Wait");
    requests::ended();
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    if (!cancelled) {
      heard_done_ = true;
      heard_.back() = '\0';
      if (why_.empty()) why_ = heard_.data();
    }
  }
  heard_req_ = MPI_REQUEST_NULL;
  if (heard_done_) got = 1;
  for (; got < expected; ++got) {
    mpi_check(MPI_Recv(heard_.data(), kReasonMax, MPI_CHAR, MPI_ANY_SOURCE, kGiveUpTag, ctl_.get(),
                       MPI_STATUS_IGNORE),
              "MPI_Recv");
    heard_.back() = '\0';
    if (why_.empty()) why_ = heard_.data();
  }
  for (MPI_Request& r : sends_) {
    mpi_check(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    requests::ended();
  }
  sends_.clear();
  // Rank 0 names the lost process where pcmd saw it (its watch port hears of a death at once;
  // the MPI error may come first).
  if (sum[0] != 0 && lost_ && why_.find("was lost") == std::string::npos) {
    const Clock::time_point until = Clock::now() + std::chrono::milliseconds(500);
    while (Clock::now() < until) {
      if (const std::string l = lost_(); !l.empty()) {
        why_ = "new process " + l + " was lost (" + why_ + ")";
        break;
      }
      pause_us(20000);
    }
  }
  if (why) *why = why_;
  return sum[0] == 0;
}

void OldSideGuard::tell_new_world(MPI_Comm inter, SplitVerdict verdict) {
  static const int kVerdicts[] = {0, 1, 2};  // SplitVerdict's values, indexed by themselves
  int n = 0;
  if (MPI_Comm_remote_size(inter, &n) != MPI_SUCCESS) return;
  for (int r = 0; r < n; ++r) {
    MPI_Request q;
    // A small message: buffered at once. Freed, never waited for: a new process may be gone
    // (the send reads kVerdicts, static; MPI completes it, or fails it once that process ended).
    if (MPI_Isend(&kVerdicts[static_cast<int>(verdict)], 1, MPI_INT, r, kVerdictTag, inter, &q) ==
        MPI_SUCCESS)
      MPI_Request_free(&q);
  }
}

NewSideGuard::NewSideGuard(MPI_Comm parent, End end) : end_(std::move(end)) {
  MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
  mpi_check(MPI_Irecv(&verdict_, 1, MPI_INT, 0, kVerdictTag, parent, &verdict_req_), "MPI_Irecv");
}

NewSideGuard::~NewSideGuard() {
  if (verdict_req_ == MPI_REQUEST_NULL || mpi::finalized()) return;
  MPI_Cancel(&verdict_req_);
  MPI_Request_free(&verdict_req_);
}

void NewSideGuard::check_verdict() {
  if (verdict_req_ == MPI_REQUEST_NULL) return;
  int flag = 0;
  const int rc = MPI_Test(&verdict_req_, &flag, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) end_("waiting for the old world's verdict: " + mpi_error_text(rc), false);
  if (flag && verdict_ == static_cast<int>(SplitVerdict::kGivenUp))
    end_("the old world gave the split up", false);
  if (flag && verdict_ == static_cast<int>(SplitVerdict::kWithdrawn))
    end_("the old world withdrew the split", true);
}

void NewSideGuard::wait(MPI_Request* req) {
  for (unsigned n = 1;; ++n) {
    int done = 0;
    const int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) end_(mpi_error_text(rc), false);
    if (done) return;
    if (n % kTestsPerLook == 0) check_verdict();
  }
}

void NewSideGuard::await_verdict() {
  while (verdict_req_ != MPI_REQUEST_NULL) {
    check_verdict();
    if (verdict_req_ != MPI_REQUEST_NULL) pause_us(50);
  }
}

void withdraw_split(mpi::Comm inter, bool spawned, int rank) {
  if (!inter || !spawned || !split_can_go_back()) return;  // freed
  if (rank == 0) OldSideGuard::tell_new_world(inter.get(), SplitVerdict::kWithdrawn);
  // Nothing of this side is pending on it (the verdict is small: sent at once, or failed with a
  // new process gone), so the disconnect does not wait.
  MPI_Comm h = inter.release();
  MPI_Comm_set_errhandler(h, MPI_ERRORS_RETURN);
  MPI_Comm_disconnect(&h);
}

void end_withdrawn(std::chrono::milliseconds bound) {
  std::thread([bound] {
    std::this_thread::sleep_for(bound);
    plog()->warn("MPI_Finalize did not end within {} ms; the process ends without it",
                 bound.count());
    plog()->flush();
    ::_exit(0);
  }).detach();
  // The parent intercommunicator is left as it is: the old world disconnected its side
  // (withdraw_split), and a receive of this side may still be posted on it (MPI_Comm_disconnect
  // would wait for it).
  PMPI_Finalize();
  ::_exit(0);
}

}  // namespace pcm::lib
