// test_store.cpp — unit tests of pcmd's HDF5 store: every type round-trips, errors are clean.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

#include "error.h"
#include "pcm_types.h"
#include "storage/checkpoint.h"
#include "storage/store.h"
#include "test_util.h"

namespace fs = std::filesystem;
using pcm::daemon::Store;

class StoreTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  const fs::path& dir_ = tmp_.path();
};

template <typename T>
void round_trip(Store& s, int type, const char* key) {
  std::vector<T> v(1000);
  std::iota(v.begin(), v.end(), static_cast<T>(1));
  s.put("job", 2, key, type, v.data(), v.size());
  std::vector<char> out;
  auto m = s.get("job", 2, key, out);
  EXPECT_EQ(m.type, type) << key;
  EXPECT_EQ(m.count, v.size()) << key;
  ASSERT_EQ(out.size(), v.size() * sizeof(T)) << key;
  EXPECT_EQ(0, std::memcmp(out.data(), v.data(), out.size())) << key;
}

TEST_F(StoreTest, EveryTypeRoundTrips) {
  Store s(dir_);
  round_trip<char>(s, PCM_CHAR, "c");
  round_trip<int>(s, PCM_INT, "i");
  round_trip<long>(s, PCM_LONG, "l");
  round_trip<float>(s, PCM_FLOAT, "f");
  round_trip<double>(s, PCM_DOUBLE, "d");
  round_trip<long long>(s, PCM_LONG_LONG, "ll");
  round_trip<unsigned char>(s, PCM_BYTE, "b");
  // A new Store on the same directory (a restarted pcmd) sees the same data.
  Store again(dir_);
  auto m = again.meta("job", 2, "ll");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->type, PCM_LONG_LONG);
  EXPECT_EQ(m->count, 1000u);
}

TEST_F(StoreTest, ReplaceSameShapeInPlaceAndOtherShape) {
  Store s(dir_);
  std::vector<double> a(100000, 1.0), b(100000, 2.0);
  s.put("j", 0, "grid", PCM_DOUBLE, a.data(), a.size());
  s.put("j", 0, "grid", PCM_DOUBLE, b.data(), b.size());
  // From the second store on, the key and its spare take turns, each overwritten in place.
  auto size2 = fs::file_size(s.job_file("j"));
  for (int i = 0; i < 5; ++i) s.put("j", 0, "grid", PCM_DOUBLE, (i % 2 ? a : b).data(), a.size());
  EXPECT_EQ(fs::file_size(s.job_file("j")), size2);
  std::vector<char> out;
  s.get("j", 0, "grid", out);
  EXPECT_EQ(reinterpret_cast<double*>(out.data())[500], 2.0);  // the last (i = 4) stored b
  int x[3] = {7, 8, 9};
  s.put("j", 0, "grid", PCM_INT, x, 3);
  auto m = s.get("j", 0, "grid", out);
  EXPECT_EQ(m.type, PCM_INT);
  EXPECT_EQ(m.count, 3u);
  EXPECT_EQ(reinterpret_cast<int*>(out.data())[2], 9);
  s.put("j", 0, "empty", PCM_DOUBLE, nullptr, 0);
  EXPECT_EQ(s.get("j", 0, "empty", out).count, 0u);
}

TEST_F(StoreTest, MissingAndInvalid) {
  Store s(dir_);
  std::vector<char> out;
  EXPECT_EQ(code_of([&] { s.get("nojob", 0, "k", out); }), PCM_ERR_NOT_FOUND);
  int v = 1;
  s.put("j", 0, "k", PCM_INT, &v, 1);
  EXPECT_EQ(code_of([&] { s.get("j", 1, "k", out); }), PCM_ERR_NOT_FOUND);
  EXPECT_EQ(code_of([&] { s.get("j", 0, "other", out); }), PCM_ERR_NOT_FOUND);
  EXPECT_FALSE(s.meta("j", 0, "other").has_value());
  EXPECT_EQ(code_of([&] { s.put("../evil", 0, "k", PCM_INT, &v, 1); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { s.put("j", 0, "a/b", PCM_INT, &v, 1); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { s.put("j", -1, "k", PCM_INT, &v, 1); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { s.put("j", 0, "k", 99, &v, 1); }), PCM_ERR_ARG);
  EXPECT_FALSE(fs::exists(dir_ / "evil"));
}

// A store that meets a full disk: a small tmpfs mounted here (root only; SKIPPED otherwise).
class StoreNoSpaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: mounting a small tmpfs needs root";
    mnt_ = tmp_.path() / "small";
    fs::create_directory(mnt_);
    if (::mount("tmpfs", mnt_.c_str(), "tmpfs", 0, "size=16m,mode=0700") != 0)
      GTEST_SKIP() << "SKIPPED: cannot mount a tmpfs here: " << std::strerror(errno);
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount2(mnt_.c_str(), MNT_DETACH);
  }
  // Fills the file system until at most `left` bytes are free.
  void fill_leaving(std::uint64_t left) {
    struct statvfs sv {};
    ASSERT_EQ(::statvfs(mnt_.c_str(), &sv), 0);
    std::uint64_t avail = static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize;
    if (avail <= left) return;
    std::ofstream f(mnt_ / ("filler" + std::to_string(fillers_++)), std::ios::binary);
    std::vector<char> chunk(avail - left, 'f');
    f.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  }
  std::vector<double> values(std::size_t n, double v) { return std::vector<double>(n, v); }
  double first_loaded(Store& s, const char* key, std::uint64_t* count = nullptr) {
    std::vector<char> out;
    auto m = s.get("j", 0, key, out);
    if (count) *count = m.count;
    return out.empty() ? -1 : reinterpret_cast<double*>(out.data())[0];
  }

  TempDir tmp_;
  fs::path mnt_;
  bool mounted_ = false;
  int fillers_ = 0;
};

TEST_F(StoreNoSpaceTest, AFullDiskKeepsThePreviousDataAndSaysSo) {
  Store s(mnt_ / "data");
  pcm::daemon::Checkpoints cp(mnt_ / "data");
  const std::size_t mib = 131072;  // doubles per MiB
  auto ones = values(mib, 1.0), twos = values(mib, 2.0), big = values(3 * mib, 3.0);
  s.put("j", 0, "grid", PCM_DOUBLE, ones.data(), ones.size());
  s.put("j", 0, "grid", PCM_DOUBLE, twos.data(), twos.size());
  cp.commit(s, "j", 1, 1, nullptr);    // a version of the twos
  fill_leaving(std::size_t{3} << 19);  // 1.5 MiB

  // Checked before writing: a new, larger shape does not fit.
  try {
    s.put("j", 0, "grid", PCM_DOUBLE, big.data(), big.size());
    ADD_FAILURE() << "a 3 MiB store fitted into 1.5 MiB";
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_NOSPACE) << e.what();
    EXPECT_NE(std::string(e.what()).find("no space left"), std::string::npos) << e.what();
  }
  std::uint64_t count = 0;
  EXPECT_EQ(first_loaded(s, "grid", &count), 2.0);
  EXPECT_EQ(count, mib);
  // A commit now would mix the old grid with whatever else was stored new: refused.
  EXPECT_EQ(code_of([&] { cp.commit(s, "j", 2, 1, nullptr); }), PCM_ERR_REFUSED);

  // Met in the middle of the write (the free space is not checked first, as when another
  // program fills the disk meanwhile): the same outcome.
  s.check_free_space(false);
  try {
    s.put("j", 0, "grid", PCM_DOUBLE, big.data(), big.size());
    ADD_FAILURE() << "a 3 MiB store fitted into 1.5 MiB";
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_NOSPACE) << e.what();
    EXPECT_EQ(std::string(e.what()).find("checked before writing"), std::string::npos) << e.what();
    std::printf("[ no space ] met while writing: %s\n", e.what());
  }
  EXPECT_EQ(first_loaded(s, "grid", &count), 2.0);
  EXPECT_EQ(count, mib);
  EXPECT_EQ(code_of([&] { cp.commit(s, "j", 2, 1, nullptr); }), PCM_ERR_REFUSED);
  // A pcmd started again on the same directory loads the same data.
  {
    Store again(mnt_ / "data");
    EXPECT_EQ(first_loaded(again, "grid", &count), 2.0);
  }
  s.check_free_space(true);

  // Space freed (HDF5 does not give back the space of the torn write inside its file): stored
  // again, good again, and committable; but this commit's copy meets a full disk:
  // PCM_ERR_NOSPACE, version 1 still valid.
  for (int i = 0; i < fillers_; ++i) fs::remove(mnt_ / ("filler" + std::to_string(i)));
  s.put("j", 0, "grid", PCM_DOUBLE, ones.data(), ones.size());
  EXPECT_EQ(first_loaded(s, "grid"), 1.0);
  fill_leaving(64 * 1024);
  try {
    cp.commit(s, "j", 2, 1, nullptr);
    ADD_FAILURE() << "a 1 MiB version fitted into 64 KiB";
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_NOSPACE) << e.what();
  }
  auto versions = cp.list("j");
  ASSERT_EQ(versions.size(), 1u);
  EXPECT_EQ(versions[0].iteration, 1);
  EXPECT_TRUE(versions[0].valid) << versions[0].why;
  std::vector<char> out;
  auto m = cp.latest_valid("j");
  ASSERT_TRUE(m.has_value());
  cp.read(*m, 0, "grid", out);
  EXPECT_EQ(reinterpret_cast<double*>(out.data())[0], 2.0);
}
