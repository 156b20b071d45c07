// test_loop_lag.cpp — LoopLag (pcmd/loop_lag.h): a pass whose parts held pcmd's loop over a second
// is logged with the part that held it longest; skipped time (the wait for requests) never counts;
// the longest pass since the start is kept with its longest part.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>
#include <thread>

#include "loop_lag.h"

namespace {

using pcm::daemon::LoopLag;

struct Logged {
  std::ostringstream text;
  spdlog::logger log{"test", std::make_shared<spdlog::sinks::ostream_sink_st>(text)};
};

TEST(LoopLag, APassHeldOverASecondNamesItsLongestPart) {
  Logged l;
  LoopLag lag(l.log);
  lag.begin();
  lag.mark("the checks");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // at least this long
  lag.mark("a request");
  lag.end();
  EXPECT_GE(lag.held_s(), 1.1);
  EXPECT_NE(l.text.str().find("pcmd's loop was held"), std::string::npos) << l.text.str();
  EXPECT_NE(l.text.str().find("of it by a request"), std::string::npos) << l.text.str();
}

TEST(LoopLag, SkippedTimeDoesNotCount) {
  Logged l;
  LoopLag lag(l.log);
  lag.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the wait for requests
  lag.skip();
  lag.mark("a request");
  lag.end();
  EXPECT_LT(lag.held_s(), 1.0);
  EXPECT_EQ(l.text.str(), "");
}

TEST(LoopLag, KeepsTheLongestPassAndWhatHeldIt) {
  Logged l;
  LoopLag lag(l.log);
  EXPECT_EQ(lag.longest_s(), 0);
  EXPECT_STREQ(lag.longest_by(), "");
  lag.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  lag.mark("a request");
  lag.mark("the journal");
  lag.end();
  const double first = lag.longest_s();
  EXPECT_GE(first, 0.03);
  EXPECT_STREQ(lag.longest_by(), "a request");
  lag.begin();  // a shorter pass changes neither
  lag.mark("the journal");
  lag.end();
  EXPECT_EQ(lag.longest_s(), first);
  EXPECT_STREQ(lag.longest_by(), "a request");
  EXPECT_EQ(l.text.str(), "");  // under a second: not logged
}

}  // namespace
