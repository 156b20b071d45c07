// test_store.cpp — unit tests of pcmd's HDF5 store: every type round-trips, errors are clean.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <vector>

#include "error.h"
#include "pcm_types.h"
#include "store.h"
#include "test_util.h"

namespace fs = std::filesystem;
using pcm::detail::Store;

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
  auto size1 = fs::file_size(s.job_file("j"));
  for (int i = 0; i < 5; ++i) s.put("j", 0, "grid", PCM_DOUBLE, b.data(), b.size());
  EXPECT_EQ(fs::file_size(s.job_file("j")), size1);  // overwritten in place
  std::vector<char> out;
  s.get("j", 0, "grid", out);
  EXPECT_EQ(reinterpret_cast<double*>(out.data())[500], 2.0);
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
