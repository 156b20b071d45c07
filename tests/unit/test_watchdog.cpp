// test_watchdog.cpp — unit tests of the reconfiguration watchdog (watchdog.h) with an expiry that
// records instead of ending the process, and of PCM_RECONFIG_TIMEOUT_S's reading (settings.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "error.h"
#include "pcm_types.h"
#include "settings.h"
#include "watchdog.h"

namespace d = pcm::lib;
using Scope = d::Watchdog::Scope;
using Clock = std::chrono::steady_clock;

namespace {

// Records every expiry; wait_for_one() returns once one has happened (or after 30 s, failing).
struct Recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<d::Watchdog::Deadline> fired;

  d::Watchdog::Expiry expiry() {
    return [this](const d::Watchdog::Deadline& dl) {
      std::lock_guard<std::mutex> lock(mu);
      fired.push_back(dl);
      cv.notify_all();
    };
  }
  std::vector<d::Watchdog::Deadline> wait_for_one() {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return !fired.empty(); }));
    return fired;
  }
};

}  // namespace

TEST(Watchdog, ThreadStartsAtTheFirstArmAndZeroSecondsArmsNothing) {
  Recorder r;
  d::Watchdog w(r.expiry());
  EXPECT_FALSE(w.started());
  {
    const Scope s(w, {"the split", 0, 0, "j", true});
    EXPECT_FALSE(w.started());
    EXPECT_FALSE(w.armed_what());
  }
  {
    const Scope s(w, {"the merge", 3600, 0, "j", true});
    EXPECT_TRUE(w.started());
    EXPECT_EQ(w.armed_what().value_or(""), "the merge");
  }
  EXPECT_FALSE(w.armed_what());
  EXPECT_TRUE(r.fired.empty());
}

TEST(Watchdog, OnlyTheOutermostScopeArmsAndDisarms) {
  Recorder r;
  d::Watchdog w(r.expiry());
  {
    const Scope outer(w, {"outer", 3600, 0, "j", false});
    {
      const Scope inner(w, {"inner", 1, 0, "j", false});
      EXPECT_EQ(w.armed_what().value_or(""), "outer");
    }
    EXPECT_EQ(w.armed_what().value_or(""), "outer");  // the inner scope did not disarm it
  }
  EXPECT_FALSE(w.armed_what());
  {
    const Scope unbounded(w, {"unbounded", 0, 0, "j", false});
    const Scope inner(w, {"inner", 3600, 0, "j", false});
    EXPECT_FALSE(w.armed_what());  // the outermost has no bound: nothing inside is bounded
  }
}

TEST(Watchdog, FiresOnceAtTheDeadlineWithWhatWasArmed) {
  Recorder r;
  d::Watchdog w(r.expiry());
  const auto t0 = Clock::now();
  const Scope s(w, {"the split of rank 1 into 2 (command 3)", 1, 0, "job-7", true});
  const auto fired = r.wait_for_one();
  EXPECT_GE(Clock::now() - t0, std::chrono::seconds(1));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].what, "the split of rank 1 into 2 (command 3)");
  EXPECT_EQ(fired[0].seconds, 1);
  EXPECT_EQ(fired[0].job, "job-7");
  EXPECT_TRUE(fired[0].tell_pcmd);
  EXPECT_FALSE(w.armed_what());  // spent: it does not fire again while the scope lives
}

TEST(Watchdog, AScopeThatEndsInTimeDoesNotFireAndTheQuietOnesWaitLonger) {
  Recorder r;
  d::Watchdog w(r.expiry());
  const auto t0 = Clock::now();
  { const Scope first(w, {"first", 1, 0, "j", true}); }
  // Had the first stayed armed, it would have fired seconds before this one (which does not tell
  // pcmd: its deadline is kQuietGraceS later).
  const Scope second(w, {"second", 2, 1, "j", false});
  const auto fired = r.wait_for_one();
  EXPECT_GE(Clock::now() - t0, std::chrono::seconds(2 + d::kQuietGraceS));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].what, "second");
}

TEST(Watchdog, TheLineNamesTheStageItWasStuckIn) {
  Recorder r;
  d::Watchdog w(r.expiry());
  const Scope armed(w, {"the split", 1, 0, "j", true});
  { const d::Watchdog::Stage over(w, "MPI_Intercomm_merge"); }  // ended: forgotten
  const d::Watchdog::Stage stage(w, "MPI_Comm_spawn");
  const auto fired = r.wait_for_one();
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].stage, "MPI_Comm_spawn");
  EXPECT_NE(d::expiry_line(fired[0]).find("the split (stuck in MPI_Comm_spawn) did not finish"),
            std::string::npos);
}

TEST(Watchdog, ExpiryLine) {
  EXPECT_EQ(d::expiry_line({"the split of rank 0 into 2 (command 4)", 5, 1, "wd-1", true}),
            "pcm: rank 1 of job wd-1: the split of rank 0 into 2 (command 4) did not finish "
            "within 5 s (PCM_RECONFIG_TIMEOUT_S); ending this process so that the job ends "
            "instead of hanging (pcmctl run relaunches it)");
  EXPECT_NE(d::expiry_line({"joining", 5, 0, "", false}).find("rank 0 of a job it has not"),
            std::string::npos);
}

TEST(Settings, ReconfigTimeout) {
  ::unsetenv("PCM_RECONFIG_TIMEOUT_S");
  EXPECT_EQ(d::Settings::from_env().reconfig_timeout_s, 300);
  ::setenv("PCM_RECONFIG_TIMEOUT_S", "0", 1);
  EXPECT_EQ(d::Settings::from_env().reconfig_timeout_s, 0);
  ::setenv("PCM_RECONFIG_TIMEOUT_S", "7", 1);
  EXPECT_EQ(d::Settings::from_env().reconfig_timeout_s, 7);
  for (const char* bad : {"-1", "5s", "abc", "99999999999"}) {
    ::setenv("PCM_RECONFIG_TIMEOUT_S", bad, 1);
    try {
      d::Settings::from_env();
      ADD_FAILURE() << "PCM_RECONFIG_TIMEOUT_S=" << bad << " accepted";
    } catch (const pcm::Error& e) {
      EXPECT_EQ(e.code(), PCM_ERR_ARG);
      EXPECT_NE(std::string(e.what()).find("PCM_RECONFIG_TIMEOUT_S"), std::string::npos);
    }
  }
  ::unsetenv("PCM_RECONFIG_TIMEOUT_S");
}
