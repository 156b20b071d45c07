// test_checkpoint.cpp — pcmd's checkpoints: versions, corruption, pruning, crashes, a full disk.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "error.h"
#include "pcm_types.h"
#include "storage/checkpoint.h"
#include "storage/store.h"
#include "test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;
using pcm::daemon::Checkpoints;
using pcm::daemon::Manifest;
using pcm::daemon::Store;
using pcm::daemon::VersionStatus;
using Clock = std::chrono::steady_clock;

namespace {

// One stored dataset, as PCM_Store sent it.
struct Blob {
  int type = 0;
  std::uint64_t count = 0;
  std::vector<char> bytes;
};

// What one version holds, by (rank, key).
using Contents = std::map<std::pair<int, std::string>, Blob>;

template <typename T>
Blob blob(int type, const std::vector<T>& v) {
  Blob b{type, v.size(), std::vector<char>(v.size() * sizeof(T))};
  if (!v.empty()) std::memcpy(b.bytes.data(), v.data(), b.bytes.size());
  return b;
}

// The contents of version v on nprocs ranks: a double array, an int scalar and a string, sized
// differently on each rank.
Contents contents_of(std::int64_t v, int nprocs) {
  Contents c;
  for (int r = 0; r < nprocs; ++r) {
    std::vector<double> u(500 + 37 * r);
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = v * 1000.0 + r + i * 0.25;
    c[{r, "u"}] = blob(PCM_DOUBLE, u);
    c[{r, "n"}] = blob(PCM_INT, std::vector<int>{static_cast<int>(v * 10 + r)});
    std::string tag = "v" + std::to_string(v) + "r" + std::to_string(r);
    c[{r, "tag"}] = blob(PCM_CHAR, std::vector<char>(tag.begin(), tag.end()));
  }
  return c;
}

// The crash test's data: rank r key "x" = 1000 doubles v*1000+r+i, and "v" = v.
Contents crash_contents(std::int64_t v) {
  Contents c;
  for (int r = 0; r < 2; ++r) {
    std::vector<double> x(1000);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = v * 1000.0 + r + i;
    c[{r, "x"}] = blob(PCM_DOUBLE, x);
    c[{r, "v"}] = blob(PCM_LONG_LONG, std::vector<long long>{v});
  }
  return c;
}

void put_all(Store& s, const std::string& job, const Contents& c) {
  for (const auto& [rk, b] : c) s.put(job, rk.first, rk.second, b.type, b.bytes.data(), b.count);
}

std::string dataset_path(int rank, const std::string& key) {
  return "/rank_" + std::to_string(rank) + "/" + key;
}

// Empty if m lists exactly c's datasets and each reads back bit-identical; else what differs.
std::string mismatch(const Checkpoints& cp, const Manifest& m, const Contents& c) {
  std::ostringstream why;
  std::set<std::string> want, got;
  for (const auto& kv : c) want.insert(dataset_path(kv.first.first, kv.first.second));
  for (const auto& d : m.datasets) got.insert(d.path);
  if (got != want || m.datasets.size() != want.size())
    why << "version " << m.iteration << " lists " << m.datasets.size() << " datasets, want "
        << want.size() << "; ";
  for (const auto& [rk, b] : c) {
    std::vector<char> out;
    try {
      Store::Meta meta = cp.read(m, rk.first, rk.second, out);
      if (meta.type != b.type || meta.count != b.count || out != b.bytes)
        why << "version " << m.iteration << " " << dataset_path(rk.first, rk.second)
            << " reads type " << meta.type << " count " << meta.count << " (" << out.size()
            << " bytes), want type " << b.type << " count " << b.count << " (" << b.bytes.size()
            << " bytes, " << (out == b.bytes ? "same" : "different") << " bytes); ";
    } catch (const pcm::Error& e) {
      why << "version " << m.iteration << " " << dataset_path(rk.first, rk.second)
          << ": read threw " << e.code() << " " << e.what() << "; ";
    }
  }
  return why.str();
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Files in dir whose names contain ".tmp" (none if dir does not exist).
std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().find(".tmp") != std::string::npos)
      found.push_back(e.path().filename().string());
  return found;
}

Manifest manifest_from_file(const fs::path& p) {
  std::ifstream in(p);
  return Manifest::from_json(json::parse(in));
}

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& p, const std::vector<char>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

// Aborts the test program if a test hangs (HDF5 can hang on a corrupt file).
class Watchdog {
 public:
  explicit Watchdog(unsigned seconds) {
    signal(SIGALRM, on_alarm);
    alarm(seconds);
  }
  ~Watchdog() { alarm(0); }

 private:
  static void on_alarm(int) {
    const char msg[] = "test_checkpoint: a test hung (watchdog expired)\n";
    ssize_t n = write(2, msg, sizeof msg - 1);
    (void)n;
    _exit(124);
  }
};

}  // namespace

class CheckpointTest : public ::testing::Test {
 protected:
  // verify(), failing the test if it takes 5 s or more.
  VersionStatus timed_verify(const Checkpoints& cp, const std::string& job, std::int64_t it) {
    auto t0 = Clock::now();
    VersionStatus st = cp.verify(job, it);
    double s = seconds_since(t0);
    EXPECT_LT(s, 5.0) << "verify(" << job << ", " << it << ") took " << s << " s";
    return st;
  }
  const VersionStatus* find(const std::vector<VersionStatus>& l, std::int64_t it) {
    for (const auto& st : l)
      if (st.iteration == it) return &st;
    return nullptr;
  }

  Watchdog watchdog_{120};
  TempDir tmp_;
  const fs::path root_ = tmp_.path() / "root";
};

using CheckpointCorruption = CheckpointTest;
using CheckpointPrune = CheckpointTest;
using CheckpointCrash = CheckpointTest;
using CheckpointFullDisk = CheckpointTest;

TEST_F(CheckpointTest, CommitAndReadBack) {
  Store s(root_);
  Contents c = contents_of(10, 3);
  std::vector<double> big(100000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = 1.0 / (i + 1);
  c[{2, "big"}] = blob(PCM_DOUBLE, big);
  c[{1, "empty"}] = blob(PCM_DOUBLE, std::vector<double>{});
  c[{0, "bytes"}] = blob(PCM_BYTE, std::vector<unsigned char>{0, 1, 127, 128, 255});
  c[{0, "ll"}] = blob(PCM_LONG_LONG, std::vector<long long>{-1, 1LL << 62});
  c[{0, "l"}] = blob(PCM_LONG, std::vector<long>{-2, 1L << 40});  // same native type as ll
  c[{1, "f"}] = blob(PCM_FLOAT, std::vector<float>{0.5f, -1e30f});
  put_all(s, "job", c);
  // Not part of version 10: a rank beyond nprocs, the layout dataset, another job.
  int extra = 42;
  s.put("job", 3, "u", PCM_INT, &extra, 1);
  s.put_layout("job", "\x81\xa1x\x01", 7);
  s.put("other", 0, "u", PCM_INT, &extra, 1);

  json layout = {{"kind", "block"}, {"units", 12}, {"counts", {4, 4, 4}}};
  Checkpoints cp(root_);
  Manifest m = cp.commit(s, "job", 10, 3, layout);
  EXPECT_EQ(m.job, "job");
  EXPECT_EQ(m.iteration, 10);
  EXPECT_EQ(m.nprocs, 3);
  EXPECT_EQ(m.layout, layout);
  ASSERT_EQ(m.datasets.size(), c.size());
  for (const auto& d : m.datasets) {
    bool known = false;
    for (const auto& [rk, b] : c) {
      if (dataset_path(rk.first, rk.second) != d.path) continue;
      known = true;
      EXPECT_EQ(d.type, b.type) << d.path;
      EXPECT_EQ(d.count, b.count) << d.path;
    }
    EXPECT_TRUE(known) << d.path;
  }

  fs::path dir = root_ / "checkpoints" / "job";
  EXPECT_EQ(cp.version_file("job", 10), dir / "v00000000000000000010.h5");
  EXPECT_EQ(cp.manifest_file("job", 10), dir / "v00000000000000000010.manifest.json");
  ASSERT_TRUE(fs::exists(cp.version_file("job", 10)));
  ASSERT_TRUE(fs::exists(cp.manifest_file("job", 10)));
  EXPECT_EQ(m.file_size, fs::file_size(cp.version_file("job", 10)));
  EXPECT_EQ(temp_files(dir), std::vector<std::string>{});

  // A restarted pcmd (a new Checkpoints) finds it.
  Checkpoints again(root_);
  auto latest = again.latest_valid("job");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->iteration, 10);
  EXPECT_EQ(latest->nprocs, 3);
  EXPECT_EQ(latest->layout, layout);
  EXPECT_EQ(latest->file_crc, m.file_crc);
  EXPECT_EQ(latest->file_size, m.file_size);
  EXPECT_EQ(mismatch(again, *latest, c), "");
  auto l = again.list("job");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].iteration, 10);
  EXPECT_TRUE(l[0].valid) << l[0].why;
  EXPECT_EQ(l[0].nprocs, 3);
  EXPECT_GT(l[0].bytes, 0u);
  auto st = timed_verify(again, "job", 10);
  EXPECT_TRUE(st.valid) << st.why;

  std::vector<char> out;
  EXPECT_EQ(code_of([&] { again.read(*latest, 3, "u", out); }), PCM_ERR_NOT_FOUND);
  EXPECT_EQ(code_of([&] { again.read(*latest, 0, "nokey", out); }), PCM_ERR_NOT_FOUND);

  // The manifest's JSON form round-trips; what is not a manifest is refused.
  Manifest back = Manifest::from_json(m.to_json());
  EXPECT_EQ(back.to_json(), m.to_json());
  EXPECT_EQ(back.file_crc, m.file_crc);
  ASSERT_EQ(back.datasets.size(), m.datasets.size());
  for (std::size_t i = 0; i < m.datasets.size(); ++i) {
    EXPECT_EQ(back.datasets[i].path, m.datasets[i].path);
    EXPECT_EQ(back.datasets[i].crc, m.datasets[i].crc);
  }
  EXPECT_EQ(code_of([] { Manifest::from_json(json::array({1, 2})); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([] { Manifest::from_json(json{{"job", "j"}}); }), PCM_ERR_ARG);
  json wrong = m.to_json();
  wrong["iteration"] = "ten";
  EXPECT_EQ(code_of([&] { Manifest::from_json(wrong); }), PCM_ERR_ARG);

  EXPECT_TRUE(again.list("other").empty());
  EXPECT_FALSE(again.latest_valid("other").has_value());
  EXPECT_FALSE(again.latest_valid("nojob").has_value());
  EXPECT_FALSE(timed_verify(again, "job", 11).valid);
}

// A distribution map can be large: an irregular layout of 30000 units (about 200 KB of JSON).
TEST_F(CheckpointTest, LargeLayoutRoundTrips) {
  Store s(root_);
  Checkpoints cp(root_);
  Contents c = contents_of(3, 2);
  put_all(s, "job", c);
  std::vector<int> owners(30000);
  for (std::size_t i = 0; i < owners.size(); ++i) owners[i] = static_cast<int>(i * 7919 % 1024);
  json layout = {{"kind", "irregular"}, {"owners", owners}};
  ASSERT_GT(layout.dump().size(), 100000u);
  int code = code_of([&] { cp.commit(s, "job", 3, 2, layout); });
  ASSERT_EQ(code, PCM_SUCCESS) << "commit with a " << layout.dump().size() << "-byte layout";
  auto latest = cp.latest_valid("job");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->layout, layout);
  EXPECT_EQ(mismatch(cp, *latest, c), "");
}

TEST_F(CheckpointTest, VersionsAreSnapshots) {
  Store s(root_);
  Checkpoints cp(root_);
  Contents c10 = contents_of(10, 2);
  put_all(s, "job", c10);
  Manifest m10 = cp.commit(s, "job", 10, 2, json());

  // New values, one key with another type and count, one new key.
  Contents c20 = contents_of(20, 2);
  c20[{1, "u"}] = blob(PCM_FLOAT, std::vector<float>{1.5f, 2.5f});
  c20[{0, "added"}] = blob(PCM_INT, std::vector<int>{1, 2, 3});
  put_all(s, "job", c20);
  Manifest m20 = cp.commit(s, "job", 20, 2, json{{"v", 20}});

  auto latest = cp.latest_valid("job");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->iteration, 20);
  EXPECT_EQ(latest->layout, (json{{"v", 20}}));
  EXPECT_EQ(mismatch(cp, *latest, c20), "");
  // Version 10, by the manifest commit returned and by the one on disk, still holds the old data.
  EXPECT_EQ(mismatch(cp, m10, c10), "");
  Manifest disk10 = manifest_from_file(cp.manifest_file("job", 10));
  EXPECT_EQ(disk10.iteration, 10);
  EXPECT_TRUE(disk10.layout.is_null());
  EXPECT_EQ(mismatch(cp, disk10, c10), "");
  auto l = cp.list("job");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].iteration, 20);  // newest first
  EXPECT_EQ(l[1].iteration, 10);
  EXPECT_TRUE(l[0].valid && l[1].valid);

  // Without 20's manifest, 20 does not exist and 10 is the latest.
  fs::remove(cp.manifest_file("job", 20));
  latest = cp.latest_valid("job");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->iteration, 10);
  EXPECT_EQ(mismatch(cp, *latest, c10), "");
}

TEST_F(CheckpointTest, CommitRefusesMissingRank) {
  Store s(root_);
  Checkpoints cp(root_);
  fs::path dir = root_ / "checkpoints" / "job";
  Contents c = contents_of(5, 3);
  c.erase({1, "u"});
  c.erase({1, "n"});
  c.erase({1, "tag"});
  put_all(s, "job", c);  // ranks 0 and 2 only

  int code = code_of([&] { cp.commit(s, "job", 4, 3, json()); });
  EXPECT_NE(code, PCM_SUCCESS);
  EXPECT_NE(code, PCM_ERR_INTERNAL);
  EXPECT_TRUE(cp.list("job").empty());
  EXPECT_FALSE(cp.latest_valid("job").has_value());
  EXPECT_FALSE(fs::exists(cp.version_file("job", 4)));
  EXPECT_FALSE(fs::exists(cp.manifest_file("job", 4)));
  EXPECT_EQ(temp_files(dir), std::vector<std::string>{});

  // Rank 0 alone is a whole version of one process; a later refusal leaves it the latest.
  Manifest m5 = cp.commit(s, "job", 5, 1, json());
  Contents c5;
  for (const auto& kv : c)
    if (kv.first.first == 0) c5.insert(kv);
  EXPECT_EQ(mismatch(cp, m5, c5), "");
  code = code_of([&] { cp.commit(s, "job", 6, 3, json()); });
  EXPECT_NE(code, PCM_SUCCESS);
  EXPECT_NE(code, PCM_ERR_INTERNAL);
  auto latest = cp.latest_valid("job");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->iteration, 5);
  EXPECT_EQ(cp.list("job").size(), 1u);
  EXPECT_FALSE(fs::exists(cp.version_file("job", 6)));
  EXPECT_FALSE(fs::exists(cp.manifest_file("job", 6)));
  EXPECT_EQ(temp_files(dir), std::vector<std::string>{});

  // A job that stored nothing, no process, a name that is a path.
  EXPECT_NE(code_of([&] { cp.commit(s, "nothing", 1, 1, json()); }), PCM_SUCCESS);
  EXPECT_NE(code_of([&] { cp.commit(s, "job", 7, 0, json()); }), PCM_SUCCESS);
  EXPECT_NE(code_of([&] { cp.commit(s, "../evil", 1, 1, json()); }), PCM_SUCCESS);
  EXPECT_FALSE(fs::exists(root_ / "evil"));
  EXPECT_FALSE(fs::exists(cp.version_file("job", 7)));
  EXPECT_EQ(cp.list("job").size(), 1u);
}

TEST_F(CheckpointCorruption, EachDamageFallsBackToPreviousVersion) {
  // The two-version setup, copied afresh for each damage.
  const fs::path setup = tmp_.path() / "setup";
  const Contents c10 = contents_of(10, 2), c20 = contents_of(20, 2);
  {
    Store s(setup);
    Checkpoints cp(setup);
    put_all(s, "job", c10);
    cp.commit(s, "job", 10, 2, json());
    put_all(s, "job", c20);
    cp.commit(s, "job", 20, 2, json());
  }
  auto h5_of = [](const Checkpoints& cp) { return cp.version_file("job", 20); };
  auto manifest_of = [](const Checkpoints& cp) { return cp.manifest_file("job", 20); };
  auto resize_to_half = [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) / 2); };
  auto zero_superblock = [](const fs::path& p) {
    auto b = read_bytes(p);
    std::fill(b.begin(), b.begin() + std::min<std::size_t>(512, b.size()), 0);
    write_bytes(p, b);
  };
  struct Damage {
    const char* name;
    std::function<void(const Checkpoints&)> apply;
  };
  const std::vector<Damage> damages = {
      {"truncated to half", [&](const Checkpoints& cp) { resize_to_half(h5_of(cp)); }},
      {"superblock zeroed", [&](const Checkpoints& cp) { zero_superblock(h5_of(cp)); }},
      {"one bit flipped in the middle",
       [&](const Checkpoints& cp) {
         auto b = read_bytes(h5_of(cp));
         b[b.size() / 2] ^= 0x10;
         write_bytes(h5_of(cp), b);
       }},
      // Byte 11 of an HDF5 superblock (version 0) is reserved: HDF5 alone would not notice.
      {"reserved superblock byte set",
       [&](const Checkpoints& cp) {
         auto b = read_bytes(h5_of(cp));
         b[11] ^= 0x01;
         write_bytes(h5_of(cp), b);
       }},
      {"bytes appended",
       [&](const Checkpoints& cp) {
         std::ofstream(h5_of(cp), std::ios::binary | std::ios::app) << "garbage";
       }},
      {"h5 deleted", [&](const Checkpoints& cp) { fs::remove(h5_of(cp)); }},
      {"manifest deleted", [&](const Checkpoints& cp) { fs::remove(manifest_of(cp)); }},
      {"manifest garbage",
       [&](const Checkpoints& cp) { std::ofstream(manifest_of(cp)) << "{\"job\": [garbage"; }},
      {"manifest empty", [&](const Checkpoints& cp) { std::ofstream(manifest_of(cp)); }},
      {"manifest truncated", [&](const Checkpoints& cp) { resize_to_half(manifest_of(cp)); }},
      {"manifest with a wrong file size",
       [&](const Checkpoints& cp) {
         json j = json::parse(std::ifstream(manifest_of(cp)));
         j["file_size"] = j["file_size"].get<std::uint64_t>() + 1;
         std::ofstream(manifest_of(cp)) << j.dump();
       }},
  };

  for (const auto& d : damages) {
    SCOPED_TRACE(d.name);
    const fs::path root = tmp_.path() / d.name;
    fs::copy(setup, root, fs::copy_options::recursive);
    Checkpoints cp(root);
    ASSERT_TRUE(timed_verify(cp, "job", 20).valid);
    d.apply(cp);

    auto t0 = Clock::now();
    VersionStatus st = timed_verify(cp, "job", 20);
    EXPECT_FALSE(st.valid);
    EXPECT_FALSE(st.why.empty());
    auto l = cp.list("job");
    const VersionStatus* s20 = find(l, 20);
    if (std::string(d.name) == "manifest deleted") {
      // Without its manifest the version does not exist, and list() does not show it.
      EXPECT_EQ(s20, nullptr);
    } else {
      ASSERT_NE(s20, nullptr);
      EXPECT_FALSE(s20->valid);
      EXPECT_FALSE(s20->why.empty());
    }
    const VersionStatus* s10 = find(l, 10);
    ASSERT_NE(s10, nullptr);
    EXPECT_TRUE(s10->valid) << s10->why;
    auto latest = cp.latest_valid("job");
    ASSERT_TRUE(latest.has_value());
    EXPECT_EQ(latest->iteration, 10);
    EXPECT_EQ(mismatch(cp, *latest, c10), "");
    EXPECT_LT(seconds_since(t0), 5.0);
  }

  // Both versions damaged: nothing valid, nothing thrown.
  const fs::path root = tmp_.path() / "all";
  fs::copy(setup, root, fs::copy_options::recursive);
  Checkpoints cp(root);
  zero_superblock(cp.version_file("job", 10));
  resize_to_half(cp.version_file("job", 20));
  auto t0 = Clock::now();
  EXPECT_FALSE(timed_verify(cp, "job", 10).valid);
  EXPECT_FALSE(timed_verify(cp, "job", 20).valid);
  auto l = cp.list("job");
  EXPECT_EQ(l.size(), 2u);
  for (const auto& st : l) {
    EXPECT_FALSE(st.valid) << st.iteration;
    EXPECT_FALSE(st.why.empty()) << st.iteration;
  }
  EXPECT_FALSE(cp.latest_valid("job").has_value());
  EXPECT_LT(seconds_since(t0), 5.0);
}

// Files that are no version in the job's directory are ignored, whatever their names.
TEST_F(CheckpointCorruption, StrayFilesAreNoVersions) {
  Store s(root_);
  Checkpoints cp(root_);
  Contents c = contents_of(10, 2);
  put_all(s, "job", c);
  cp.commit(s, "job", 10, 2, json());
  const fs::path dir = cp.version_file("job", 10).parent_path();
  std::ofstream(dir / "v99999999999999999999.h5") << "beyond int64";
  std::ofstream(dir / "v99999999999999999999.manifest.json") << "{}";
  std::ofstream(dir / "v00000000000000000030.h5.tmp") << "left by a crash";
  std::ofstream(dir / "v00000000000000000040.manifest.json.tmp") << "{";
  std::ofstream(dir / "notes.txt") << "hello";
  fs::create_directory(dir / "v00000000000000000050.h5");
  std::vector<VersionStatus> l;
  ASSERT_NO_THROW(l = cp.list("job"));
  for (const auto& st : l)
    if (st.iteration != 10) EXPECT_FALSE(st.valid) << st.iteration;
  std::optional<Manifest> latest;
  ASSERT_NO_THROW(latest = cp.latest_valid("job"));
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->iteration, 10);
  EXPECT_EQ(mismatch(cp, *latest, c), "");
  ASSERT_NO_THROW(cp.prune("job", 1));
  EXPECT_TRUE(cp.verify("job", 10).valid);
}

// A commit that died between its data file's rename and its manifest leaves a data file without
// a manifest: no version, so not listed (issue 13: `pcmctl verify` exited 1 on it after a crash).
TEST_F(CheckpointCorruption, AnOrphanDataFileIsNotListed) {
  Store s(root_);
  Checkpoints cp(root_);
  put_all(s, "job", contents_of(10, 2));
  cp.commit(s, "job", 10, 2, json());
  fs::copy_file(cp.version_file("job", 10), cp.version_file("job", 20));
  fs::create_directories(cp.version_dir("job", 30));  // a format-2 version without its manifest
  auto l = cp.list("job");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].iteration, 10);
  EXPECT_TRUE(l[0].valid) << l[0].why;
  EXPECT_TRUE(cp.has_job("job"));
  EXPECT_FALSE(cp.has_job("jbo"));
}

TEST_F(CheckpointPrune, KeepsNewestAndNewestValid) {
  Store s(root_);
  Checkpoints cp(root_);
  for (std::int64_t v : {10, 20, 30, 40}) {
    put_all(s, "job", contents_of(v, 2));
    cp.commit(s, "job", v, 2, json());
  }
  EXPECT_EQ(code_of([&] { cp.prune("job", 0); }), PCM_ERR_ARG);
  EXPECT_EQ(cp.list("job").size(), 4u);

  auto removed = cp.prune("job", 2);
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::int64_t>{10, 20}));
  for (std::int64_t v : {10, 20}) {
    EXPECT_FALSE(fs::exists(cp.version_file("job", v))) << v;
    EXPECT_FALSE(fs::exists(cp.manifest_file("job", v))) << v;
  }
  auto l = cp.list("job");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].iteration, 40);
  EXPECT_EQ(l[1].iteration, 30);
  EXPECT_TRUE(l[0].valid && l[1].valid);
  EXPECT_EQ(temp_files(root_ / "checkpoints" / "job"), std::vector<std::string>{});

  // 40 corrupt: keep 1 must not remove 30, the newest valid version.
  fs::resize_file(cp.version_file("job", 40), fs::file_size(cp.version_file("job", 40)) / 2);
  removed = cp.prune("job", 1);
  EXPECT_EQ(std::count(removed.begin(), removed.end(), 30), 0);
  EXPECT_TRUE(fs::exists(cp.version_file("job", 30)));
  EXPECT_TRUE(fs::exists(cp.manifest_file("job", 30)));
  for (std::int64_t v : removed) EXPECT_FALSE(fs::exists(cp.manifest_file("job", v))) << v;
  auto latest = cp.latest_valid("job");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->iteration, 30);
  EXPECT_EQ(mismatch(cp, *latest, contents_of(30, 2)), "");

  // Only the oldest valid: keep 1 keeps it, and removes what is neither newest nor valid.
  const fs::path root2 = tmp_.path() / "root2";
  Store s2(root2);
  Checkpoints cp2(root2);
  for (std::int64_t v : {10, 20, 30}) {
    put_all(s2, "job", contents_of(v, 2));
    cp2.commit(s2, "job", v, 2, json());
  }
  for (std::int64_t v : {20, 30}) {
    auto b = read_bytes(cp2.version_file("job", v));
    b[b.size() / 2] ^= 1;
    write_bytes(cp2.version_file("job", v), b);
  }
  removed = cp2.prune("job", 1);
  EXPECT_EQ(std::count(removed.begin(), removed.end(), 10), 0);
  EXPECT_EQ(std::count(removed.begin(), removed.end(), 20), 1);
  EXPECT_FALSE(fs::exists(cp2.manifest_file("job", 20)));
  EXPECT_FALSE(fs::exists(cp2.version_file("job", 20)));
  latest = cp2.latest_valid("job");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->iteration, 10);
  EXPECT_EQ(mismatch(cp2, *latest, contents_of(10, 2)), "");

  EXPECT_TRUE(cp.prune("nojob", 1).empty());
}

// A data file without its manifest (a crash between the two renames) is no version: it does not
// take the place of one of the `keep` newest.
TEST_F(CheckpointPrune, DataFileWithoutManifestIsNoVersion) {
  Store s(root_);
  Checkpoints cp(root_);
  for (std::int64_t v : {10, 20, 30, 40}) {
    put_all(s, "job", contents_of(v, 2));
    cp.commit(s, "job", v, 2, json());
  }
  fs::remove(cp.manifest_file("job", 40));
  auto removed = cp.prune("job", 2);
  EXPECT_EQ(std::count(removed.begin(), removed.end(), 10), 1);
  std::vector<std::int64_t> valid;
  for (const auto& st : cp.list("job"))
    if (st.valid) valid.push_back(st.iteration);
  EXPECT_EQ(valid, (std::vector<std::int64_t>{30, 20})) << "prune(keep 2) must leave two versions";
  for (std::int64_t v : {20, 30}) {
    if (!fs::exists(cp.manifest_file("job", v))) continue;  // reported above
    EXPECT_EQ(mismatch(cp, manifest_from_file(cp.manifest_file("job", v)), contents_of(v, 2)), "");
  }
}

TEST_F(CheckpointCrash, KilledWriterLeavesOnlyWholeVersions) {
  // 220 trials in CI; PCM_SOAK_TRIALS=N runs about N (a soak).
  const char* soak = std::getenv("PCM_SOAK_TRIALS");
  const int kRoots = 4, kTrialsPerRoot = soak ? std::max(1, std::atoi(soak) / 4) : 55;
  constexpr unsigned kSeed = 20240917;
  constexpr int kMaxDelayUs = 30000;
  const std::string job = "job";
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<int> delay_us(0, kMaxDelayUs);
  int advanced = 0, leftovers = 0, trials = 0;
  int orphans = 0;  // data files left without a manifest (killed between the two renames)
  auto t_start = Clock::now();

  for (int ri = 0; ri < kRoots && !HasFailure(); ++ri) {
    const fs::path root = tmp_.path() / ("crash" + std::to_string(ri));
    std::optional<std::int64_t> prev_latest;
    std::int64_t checked_up_to = 0;  // versions <= this were checked after an earlier trial
    for (int t = 0; t < kTrialsPerRoot && !HasFailure(); ++t, ++trials) {
      const std::int64_t base = (t + 1) * 1000;  // each trial commits base+1, base+2, ...
      const int delay = delay_us(rng);
      SCOPED_TRACE("seed " + std::to_string(kSeed) + " root " + std::to_string(ri) + " trial " +
                   std::to_string(t) + " delay " + std::to_string(delay) + " us");
      // A kill in the middle of Store::put may leave the working store damaged: start it anew.
      fs::remove_all(root / "jobs" / job);

      // Every fourth trial waits until the writer has committed once before its random delay
      // starts, so that some trials commit however loaded the machine is (no timing assumed).
      Pipe committed;
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        int rc = 0;
        try {
          Store s(root);
          Checkpoints cp(root);
          for (std::int64_t v = base + 1; v < base + 1000; ++v) {
            put_all(s, job, crash_contents(v));
            cp.commit(s, job, v, 2, json{{"v", v}});
            committed.tell();
          }
        } catch (...) {
          rc = 3;
        }
        _exit(rc);
      }
      if (t % 4 == 3) committed.wait();
      usleep(delay);
      kill(pid, SIGKILL);
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      ASSERT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
                  (WIFEXITED(status) && WEXITSTATUS(status) == 0))
          << "the writer failed before it was killed, status " << status;

      Checkpoints cp(root);
      std::vector<VersionStatus> l;
      ASSERT_NO_THROW(l = cp.list(job));
      std::optional<std::int64_t> newest_valid;
      for (const auto& st : l) {
        // A SIGKILL loses nothing already written: a version whose manifest exists is whole.
        if (fs::exists(cp.manifest_file(job, st.iteration)))
          EXPECT_TRUE(st.valid) << "version " << st.iteration << ": " << st.why;
        if (!st.valid) continue;
        if (!newest_valid || st.iteration > *newest_valid) newest_valid = st.iteration;
        if (st.iteration > checked_up_to) {
          Manifest m = manifest_from_file(cp.manifest_file(job, st.iteration));
          EXPECT_EQ(m.iteration, st.iteration);
          EXPECT_EQ(mismatch(cp, m, crash_contents(st.iteration)), "");
        }
      }
      auto latest = cp.latest_valid(job);
      if (!latest) {
        EXPECT_FALSE(newest_valid.has_value());
        EXPECT_FALSE(prev_latest.has_value()) << "version " << *prev_latest << " vanished";
      } else {
        EXPECT_EQ(std::optional<std::int64_t>(latest->iteration), newest_valid);
        EXPECT_EQ(latest->layout, (json{{"v", latest->iteration}}));
        EXPECT_EQ(mismatch(cp, *latest, crash_contents(latest->iteration)), "");
        if (prev_latest) EXPECT_GE(latest->iteration, *prev_latest);
        if (!prev_latest || latest->iteration > *prev_latest) ++advanced;
        prev_latest = latest->iteration;
      }
      if (!temp_files(root / "checkpoints" / job).empty()) ++leftovers;
      checked_up_to = base + 999;
    }

    // Versions of earlier trials are untouched by later kills.
    Checkpoints cp(root);
    int versions = 0;
    for (const auto& st : cp.list(job)) {
      if (!fs::exists(cp.manifest_file(job, st.iteration))) ++orphans;
      if (!st.valid) continue;
      ++versions;
      Manifest m = manifest_from_file(cp.manifest_file(job, st.iteration));
      EXPECT_EQ(mismatch(cp, m, crash_contents(st.iteration)), "");
    }
    std::printf("[ crash    ] root %d: %d valid versions\n", ri, versions);
    fs::remove_all(root);
  }
  double secs = seconds_since(t_start);
  std::printf(
      "[ crash    ] %d trials (seed %u, kill after 0-%d us) in %.1f s: the latest version "
      "advanced in %d, temporary files left after %d, %d data files without a manifest\n",
      trials, kSeed, kMaxDelayUs, secs, advanced, leftovers, orphans);
  EXPECT_GT(advanced, 0) << "no trial committed anything before the kill: the test proved nothing";
}

// Committing an iteration that already exists, killed at random: the version is refused, or it is
// afterwards whole, with the old or the new data, never lost.
TEST_F(CheckpointCrash, KilledRecommitKeepsOldOrNew) {
  constexpr int kTrials = 60;
  constexpr unsigned kSeed = 20240918;
  const std::string job = "job";
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<int> delay_us(0, 20000);
  {
    Store s(root_);
    Checkpoints cp(root_);
    put_all(s, job, contents_of(1, 2));
    cp.commit(s, job, 10, 2, json());
  }
  for (int t = 0; t < kTrials && !HasFailure(); ++t) {
    const int delay = delay_us(rng);
    SCOPED_TRACE("seed " + std::to_string(kSeed) + " trial " + std::to_string(t) + " delay " +
                 std::to_string(delay) + " us");
    fs::remove_all(root_ / "jobs" / job);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        Store s(root_);
        Checkpoints cp(root_);
        for (std::int64_t j = (t + 2) * 1000; j < (t + 3) * 1000; ++j) {
          put_all(s, job, contents_of(j, 2));  // rank 0's "n" is j * 10: the data says which j
          try {
            cp.commit(s, job, 10, 2, json());
          } catch (const pcm::Error&) {
            _exit(4);  // re-commit refused: acceptable
          }
        }
      } catch (...) {
        rc = 3;
      }
      _exit(rc);
    }
    usleep(delay);
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    const bool refused = WIFEXITED(status) && WEXITSTATUS(status) == 4;

    Checkpoints cp(root_);
    VersionStatus st = cp.verify(job, 10);
    ASSERT_TRUE(st.valid) << "version 10 lost: " << st.why;
    auto latest = cp.latest_valid(job);
    ASSERT_TRUE(latest.has_value());
    std::vector<char> out;
    cp.read(*latest, 0, "n", out);
    ASSERT_EQ(out.size(), sizeof(int));
    int n = 0;
    std::memcpy(&n, out.data(), sizeof n);
    EXPECT_EQ(mismatch(cp, *latest, contents_of(n / 10, 2)), "");
    if (refused) {
      EXPECT_EQ(n / 10, 1) << "refused, yet version 10 changed";
      break;
    }
  }
}

TEST_F(CheckpointFullDisk, CommitFailsAndKeepsEarlierVersion) {
  const std::string job = "job";
  Store s(root_);
  Checkpoints cp(root_);
  Contents small = contents_of(1, 2);
  put_all(s, job, small);
  cp.commit(s, job, 1, 2, json());
  // Version 2 is far larger than the file size limit the writer gets (2 x 800 KB more).
  Contents large = small;
  for (int r = 0; r < 2; ++r) {
    std::vector<double> x(100000);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = r * 1e6 + i;
    large[{r, "x"}] = blob(PCM_DOUBLE, x);
  }
  put_all(s, job, large);

  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int rc = 3;  // could not set up
    try {
      signal(SIGXFSZ, SIG_IGN);
      rlimit rl{};
      getrlimit(RLIMIT_FSIZE, &rl);
      rl.rlim_cur = 64 * 1024;
      if (setrlimit(RLIMIT_FSIZE, &rl) == 0) {
        Store cs(root_);
        Checkpoints ccp(root_);
        try {
          ccp.commit(cs, job, 2, 2, json());
          rc = 1;  // it succeeded: it should not have
        } catch (const pcm::Error& e) {
          std::fprintf(stderr, "[ full     ] commit failed as expected: %d %s\n", e.code(),
                       e.what());
          rc = 0;
        }
      }
    } catch (...) {
      rc = 2;  // something else than pcm::Error
    }
    _exit(rc);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << "could not lower the limit";
  // Whether or not the writer failed cleanly, the earlier version must be intact.
  EXPECT_TRUE(WIFEXITED(status)) << "the writer died of signal " << WTERMSIG(status)
                                 << " instead of failing with a pcm::Error";
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) != 0)
      << "exit " << WEXITSTATUS(status) << " (1: commit succeeded, 2: threw a non-pcm::Error)";

  Checkpoints after(root_);
  auto latest = after.latest_valid(job);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->iteration, 1);
  EXPECT_EQ(mismatch(after, *latest, small), "");
  EXPECT_FALSE(fs::exists(after.manifest_file(job, 2)));
  EXPECT_FALSE(timed_verify(after, job, 2).valid);
  for (const auto& st : after.list(job))
    if (st.iteration != 1) EXPECT_FALSE(st.valid) << st.iteration;
  auto left = temp_files(root_ / "checkpoints" / job);
  for (const auto& f : left) std::printf("[ full     ] note: temporary file left: %s\n", f.c_str());

  // With room again, version 2 commits (nothing left behind is in its way).
  Manifest m2 = after.commit(s, job, 2, 2, json());
  EXPECT_EQ(mismatch(after, m2, large), "");
  latest = after.latest_valid(job);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->iteration, 2);
  EXPECT_EQ(mismatch(after, *latest, large), "");
}
