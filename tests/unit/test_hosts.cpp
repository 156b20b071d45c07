// test_hosts.cpp — unit tests of hostfile and Slurm list parsing and of the spread/concentrate
// placement (P2P-MPI §4.3).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "error.h"
#include "hosts.h"
#include "pcm_types.h"
#include "test_util.h"

using pcm::common::expand_slurm_nodelist;
using pcm::common::expand_slurm_tasks;
using pcm::common::Host;
using pcm::common::HostSlots;
using pcm::common::parse_hostfile;
using pcm::common::parse_placement;
using pcm::common::place;
using pcm::common::Placement;
using pcm::common::slurm_hosts;
using Names = std::vector<std::string>;

namespace pcm::common {
// For EXPECT_EQ on vectors (found by argument-dependent lookup).
bool operator==(const HostSlots& a, const HostSlots& b) {
  return a.name == b.name && a.slots == b.slots;
}
}  // namespace pcm::common

namespace {

// The message of the pcm::Error that f throws with `code`; fails the test otherwise.
std::string message_of(int code, const std::function<void()>& f) {
  try {
    f();
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no pcm::Error thrown";
  return "";
}

std::map<std::string, int> counts(const Names& placed) {
  std::map<std::string, int> c;
  for (const auto& h : placed) ++c[h];
  return c;
}

// Whether every host's processes are consecutive in `placed`.
bool grouped(const Names& placed) {
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (i > 0 && placed[i] == placed[i - 1]) continue;
    if (seen.count(placed[i])) return false;  // a host seen before, then another
    seen[placed[i]] = 1;
  }
  return true;
}

}  // namespace

// ---- hostfiles ----

TEST(HostFile, HostsSlotsCommentsBlankLines) {
  auto h = parse_hostfile(
      "# the cluster\n"
      "\n"
      "  node1:4  \n"
      "node2\t# one slot\n"
      "\r\n"
      "node3 : 2\r\n"
      "node1:2\n"
      "   # indented comment\n"
      "node-4.example.org:1");
  std::vector<HostSlots> want{{"node1", 6}, {"node2", 1}, {"node3", 2}, {"node-4.example.org", 1}};
  EXPECT_EQ(h, want);
}

TEST(HostFile, EmptyTextHasNoHosts) {
  EXPECT_TRUE(parse_hostfile("").empty());
  EXPECT_TRUE(parse_hostfile("\n\n# nothing\n").empty());
}

TEST(HostFile, ErrorsNameTheLine) {
  EXPECT_NE(message_of(PCM_ERR_ARG, [] { parse_hostfile("a\nb\nc:0\n"); }).find("line 3:"),
            std::string::npos);
  EXPECT_NE(message_of(PCM_ERR_ARG, [] { parse_hostfile("ok\nbad_host\n"); }).find("line 2:"),
            std::string::npos);
}

TEST(HostFile, RefusesBadSlotsAndNames) {
  for (const char* text :
       {"h:0", "h:-1", "h:+1", "h:", "h:1048577", "h:99999999999999999999999", "h:4x", "h:1:2",
        ":4", "-h", ".h", "h_1", "h 1", "h\x01", "h/x", "[h]", "h:0x10", "h: 1 2"})
    EXPECT_EQ(code_of([&] { parse_hostfile(text); }), PCM_ERR_ARG) << text;
  EXPECT_EQ(code_of([] { parse_hostfile(std::string(256, 'a')); }), PCM_ERR_ARG);
  EXPECT_EQ(parse_hostfile(std::string(255, 'a'))[0].slots, 1);
  EXPECT_EQ(parse_hostfile("h:1048576")[0].slots, 1048576);
}

TEST(HostFile, RepeatedHostsCannotOverflow) {
  EXPECT_EQ(parse_hostfile("h:1048575\nh:1\n")[0].slots, 1048576);
  EXPECT_EQ(code_of([] { parse_hostfile("h:1048576\nh:1\n"); }), PCM_ERR_ARG);
}

// ---- Slurm lists ----

TEST(SlurmNodelist, Expands) {
  EXPECT_EQ(expand_slurm_nodelist("login"), Names{"login"});
  EXPECT_EQ(expand_slurm_nodelist("node[01-04,07]"),
            (Names{"node01", "node02", "node03", "node04", "node07"}));
  EXPECT_EQ(expand_slurm_nodelist("n[1-3],gpu[01-02],login"),
            (Names{"n1", "n2", "n3", "gpu01", "gpu02", "login"}));
  EXPECT_EQ(expand_slurm_nodelist("node[08-10]"), (Names{"node08", "node09", "node10"}));
  EXPECT_EQ(expand_slurm_nodelist("node[8-10]"), (Names{"node8", "node9", "node10"}));
  EXPECT_EQ(expand_slurm_nodelist("[1-2]"), (Names{"1", "2"}));
  EXPECT_EQ(expand_slurm_nodelist("r[1-2]-ib"), (Names{"r1-ib", "r2-ib"}));
  EXPECT_EQ(expand_slurm_nodelist("a[1-2]b[3-4]"), (Names{"a1b3", "a1b4", "a2b3", "a2b4"}));
  EXPECT_EQ(expand_slurm_nodelist(" c[5] \n"), Names{"c5"});
}

TEST(SlurmNodelist, LimitIsInclusive) {
  EXPECT_EQ(expand_slurm_nodelist("n[1-65536]").size(), 65536u);
  EXPECT_EQ(expand_slurm_nodelist("n[0-255]x[0-255]").size(), 65536u);
  EXPECT_EQ(expand_slurm_nodelist("n[1-65535],last").size(), 65536u);
}

TEST(SlurmNodelist, RefusesHostileLists) {
  for (const char* list : {
           "",
           "   ",
           "[",
           "]",
           "n[",
           "n]",
           "n[1",
           "n1]",
           "n[[1]]",
           "n[1[2]]",
           "n[]",
           "n[5-1]",
           "n[1-]",
           "n[-1]",
           "n[1--2]",
           "n[1-2-3]",
           "n[,1]",
           "n[1,]",
           "n[1,,2]",
           "n[a-b]",
           "n[1 -2]",
           "n[+1]",
           "n,,m",
           ",n",
           "n,",
           "n[1-65537]",
           "n[0-18446744073709551615]",
           "n[99999999999999999999999-99999999999999999999999]",
           "n[1-65536],extra",
           "a[0-255]b[0-256]",
           "a[0-65535]b[0-65535]c[0-65535]",
           "bad_name[1-2]",
           "-n[1]",
           "n[1]]",
           "n x",
       })
    EXPECT_EQ(code_of([&] { expand_slurm_nodelist(list); }), PCM_ERR_ARG) << list;
  // A number padded past any host name's length, and a name that grows past it.
  EXPECT_EQ(code_of([] { expand_slurm_nodelist("n[" + std::string(300, '0') + "1-2]"); }),
            PCM_ERR_ARG);
  EXPECT_EQ(code_of([] { expand_slurm_nodelist(std::string(250, 'a') + "[100000-100002]"); }),
            PCM_ERR_ARG);
}

TEST(SlurmTasks, Expands) {
  EXPECT_EQ(expand_slurm_tasks("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expand_slurm_tasks("4"), (std::vector<int>{4}));
  EXPECT_EQ(expand_slurm_tasks("1,16(x2),8"), (std::vector<int>{1, 16, 16, 8}));
  EXPECT_EQ(expand_slurm_tasks("1(x65536)").size(), 65536u);
}

TEST(SlurmTasks, RefusesHostileLists) {
  for (const char* tasks : {"",
                            "2(x0)",
                            "0",
                            "-1",
                            "2(x)",
                            "2(3)",
                            "2(x3",
                            "2x3)",
                            "(x3)",
                            "2(x3)(x2)",
                            "2(x-1)",
                            "1,,2",
                            ",1",
                            "1,",
                            "1048577",
                            "99999999999999999999999",
                            "1(x65537)",
                            "1(x99999999999999999999999)",
                            "1(x65536),1",
                            "1(x40000),1(x40000)",
                            "a",
                            "2 (x3)"})
    EXPECT_EQ(code_of([&] { expand_slurm_tasks(tasks); }), PCM_ERR_ARG) << tasks;
}

TEST(SlurmHosts, ZipsNodesAndTasks) {
  std::vector<HostSlots> want{{"n1", 2}, {"n2", 2}, {"n3", 2}, {"login", 1}};
  EXPECT_EQ(slurm_hosts("n[1-3],login", "2(x3),1"), want);
  EXPECT_NE(message_of(PCM_ERR_ARG, [] { slurm_hosts("n[1-3]", "2(x2)"); }).find("3 nodes"),
            std::string::npos);
  EXPECT_EQ(code_of([] { slurm_hosts("n[1-2]", "2(x3)"); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([] { slurm_hosts("n[1-2", "2(x2)"); }), PCM_ERR_ARG);
}

// ---- placement ----

TEST(Placement, ParsesStrategyNames) {
  EXPECT_EQ(parse_placement("spread"), Placement::kSpread);
  EXPECT_EQ(parse_placement("concentrate"), Placement::kConcentrate);
  for (const char* s : {"", "Spread", "spread ", "concentrated", "round-robin"})
    EXPECT_FALSE(parse_placement(s).has_value()) << s;
}

// Three hosts, listed out of latency order: near (2 free), mid (3 free), far (4 free).
std::vector<Host> example_hosts() {
  return {{"far", 4, 0, 9.0}, {"near", 4, 2, 0.1}, {"mid", 3, 0, 1.5}};
}

TEST(Placement, SpreadIsRoundRobinByLatency) {
  // One process per host, nearest first, before any host gets a second.
  EXPECT_EQ(place(example_hosts(), 2, Placement::kSpread), (Names{"near", "mid"}));
  EXPECT_EQ(place(example_hosts(), 3, Placement::kSpread), (Names{"near", "mid", "far"}));
  // Round 2 as well: each host gets its second.
  EXPECT_EQ(place(example_hosts(), 6, Placement::kSpread),
            (Names{"near", "near", "mid", "mid", "far", "far"}));
  // Round 3 skips near (full after 2): mid and far get their third.
  EXPECT_EQ(place(example_hosts(), 7, Placement::kSpread),
            (Names{"near", "near", "mid", "mid", "mid", "far", "far"}));
  EXPECT_EQ(place(example_hosts(), 9, Placement::kSpread),
            (Names{"near", "near", "mid", "mid", "mid", "far", "far", "far", "far"}));
}

TEST(Placement, ConcentrateFillsNearestFirst) {
  EXPECT_EQ(place(example_hosts(), 2, Placement::kConcentrate), (Names{"near", "near"}));
  EXPECT_EQ(place(example_hosts(), 3, Placement::kConcentrate), (Names{"near", "near", "mid"}));
  EXPECT_EQ(place(example_hosts(), 6, Placement::kConcentrate),
            (Names{"near", "near", "mid", "mid", "mid", "far"}));
  EXPECT_EQ(place(example_hosts(), 9, Placement::kConcentrate),
            (Names{"near", "near", "mid", "mid", "mid", "far", "far", "far", "far"}));
}

TEST(Placement, CapacityIsSlotsMinusUsed) {
  // full (used == slots) and over (used > slots) have no room; zero has no slots at all.
  std::vector<Host> hosts{
      {"full", 2, 2, 0.0}, {"over", 1, 3, 0.0}, {"zero", 0, 0, 0.0}, {"free", 3, 1, 5.0}};
  for (Placement p : {Placement::kSpread, Placement::kConcentrate}) {
    EXPECT_EQ(place(hosts, 2, p), (Names{"free", "free"}));
    EXPECT_EQ(code_of([&] { place(hosts, 3, p); }), PCM_ERR_REFUSED);
  }
}

TEST(Placement, LatencyTiesBrokenByName) {
  std::vector<Host> hosts{{"c", 1, 0, 1.0}, {"a", 1, 0, 1.0}, {"b", 1, 0, 1.0}, {"z", 1, 0, 0.5}};
  EXPECT_EQ(place(hosts, 4, Placement::kSpread), (Names{"z", "a", "b", "c"}));
  EXPECT_EQ(place(hosts, 2, Placement::kConcentrate), (Names{"z", "a"}));
  // Input order does not matter.
  std::vector<Host> reversed(hosts.rbegin(), hosts.rend());
  EXPECT_EQ(place(reversed, 4, Placement::kSpread), place(hosts, 4, Placement::kSpread));
}

TEST(Placement, RefusesBeyondFreeCapacity) {
  for (Placement p : {Placement::kSpread, Placement::kConcentrate}) {
    std::string msg = message_of(PCM_ERR_REFUSED, [&] { place(example_hosts(), 10, p); });
    EXPECT_NE(msg.find("10 processes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("9 free slots"), std::string::npos) << msg;
    EXPECT_EQ(code_of([&] { place({}, 1, p); }), PCM_ERR_REFUSED);
    EXPECT_TRUE(place({}, 0, p).empty());
    EXPECT_TRUE(place(example_hosts(), 0, p).empty());
  }
}

TEST(Placement, RefusesBadArguments) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(code_of([] { place(example_hosts(), -1, Placement::kSpread); }), PCM_ERR_ARG);
  for (const std::vector<Host>& hosts :
       std::vector<std::vector<Host>>{{{"a", -1, 0, 0.0}},
                                      {{"a", 1, -1, 0.0}},
                                      {{"a", 1, 0, nan}},
                                      {{"a", 1, 0, inf}},
                                      {{"a", 1, 0, -1.0}},
                                      {{"a", 1, 0, 0.0}, {"a", 1, 0, 1.0}}})
    EXPECT_EQ(code_of([&] { place(hosts, 1, Placement::kConcentrate); }), PCM_ERR_ARG);
}

TEST(Placement, ResultIsGroupedHostByHost) {
  // Uneven capacities and latencies: whatever n, each host's processes are consecutive, hosts
  // appear in latency order, and no host exceeds its capacity.
  std::vector<Host> hosts;
  for (int i = 0; i < 12; ++i)
    hosts.push_back({"h" + std::to_string(i), 1 + (i * 5) % 7, i % 3, std::fmod(i * 3.7, 5.0)});
  int free_total = 0;
  for (const Host& h : hosts) free_total += std::max(h.slots - h.used, 0);
  for (Placement p : {Placement::kSpread, Placement::kConcentrate}) {
    for (int n = 0; n <= free_total; ++n) {
      Names placed = place(hosts, n, p);
      ASSERT_EQ(placed.size(), static_cast<std::size_t>(n));
      EXPECT_TRUE(grouped(placed)) << n;
      for (const auto& [name, c] : counts(placed)) {
        const Host& h = hosts[std::stoi(name.substr(1))];
        EXPECT_LE(c, h.slots - h.used) << name;
      }
      for (std::size_t i = 1; i < placed.size(); ++i) {
        const Host& a = hosts[std::stoi(placed[i - 1].substr(1))];
        const Host& b = hosts[std::stoi(placed[i].substr(1))];
        EXPECT_TRUE(a.latency_ms < b.latency_ms ||
                    (a.latency_ms == b.latency_ms && a.name <= b.name));
      }
      if (p == Placement::kSpread) {
        // Per-host counts differ by at most one among hosts not yet full.
        auto c = counts(placed);
        int lo = n, hi = 0;
        for (const Host& h : hosts) {
          const int got = c.count(h.name) ? c[h.name] : 0;
          if (got < h.slots - h.used) lo = std::min(lo, got);
          hi = std::max(hi, got);
        }
        if (n > 0 && lo < n) {
          EXPECT_LE(hi - lo, 1) << n;
        }
      }
    }
    EXPECT_EQ(code_of([&] { place(hosts, free_total + 1, p); }), PCM_ERR_REFUSED);
  }
}

TEST(Placement, LargeCountsAreCheap) {
  // One host with a million slots among many empty ones: spread must not loop host by host.
  std::vector<Host> hosts;
  for (int i = 0; i < 20000; ++i) hosts.push_back({"e" + std::to_string(i), 1, 1, 0.0});
  hosts.push_back({"big", 1 << 20, 0, 1.0});
  hosts.push_back({"small", 2, 0, 0.5});
  Names placed = place(hosts, (1 << 20) + 2, Placement::kSpread);
  ASSERT_EQ(placed.size(), static_cast<std::size_t>((1 << 20) + 2));
  EXPECT_EQ(placed[0], "small");
  EXPECT_EQ(placed[1], "small");
  EXPECT_EQ(placed[2], "big");
  EXPECT_EQ(placed.back(), "big");
}

// pcmd --hosts: NAME[:SLOTS][@SITE] (issue 26: the site of a host reached through a relay).
TEST(HostSpec, NameSlotsAndSite) {
  using pcm::common::parse_host_spec;
  auto h = parse_host_spec("node1", 8);
  EXPECT_EQ(h.name, "node1");
  EXPECT_EQ(h.slots, 8);
  EXPECT_EQ(h.site, "");
  h = parse_host_spec("node2:3", 8);
  EXPECT_EQ(h.slots, 3);
  EXPECT_EQ(h.site, "");
  h = parse_host_spec("node3@west", 8);
  EXPECT_EQ(h.name, "node3");
  EXPECT_EQ(h.slots, 8);
  EXPECT_EQ(h.site, "west");
  h = parse_host_spec("node4:2@east", 8);
  EXPECT_EQ(h.name, "node4");
  EXPECT_EQ(h.slots, 2);
  EXPECT_EQ(h.site, "east");
  for (const char* bad : {"node:0", "node:x", "node:", "node:2@", "node@a/b", "@west", ":2@west",
                          "node:2x@west", "node:99999999999"})
    EXPECT_THROW(parse_host_spec(bad, 1), pcm::Error) << bad;
}

// pcmd --site-link A:B:LOW-HIGH (issue 26 item 3).
TEST(SiteLink, SitesAndPortRange) {
  auto l = pcm::common::parse_site_link("a:b:50000-50100");
  EXPECT_EQ(l.a, "a");
  EXPECT_EQ(l.b, "b");
  EXPECT_EQ(l.low, 50000);
  EXPECT_EQ(l.high, 50100);
  for (const char* bad : {"a:b", "a:b:", "a:a:1-2", "a:b:2-1", "a:b:0-5", "a:b:1-70000", "a:b:5",
                          "a/x:b:1-2", ":b:1-2", "a:b:x-2"})
    EXPECT_THROW(pcm::common::parse_site_link(bad), pcm::Error) << bad;
}
