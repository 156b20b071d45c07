// test_store_direct.cpp — keys a rank stores itself (pcmd/storage/store.h): the records pcmd
// accepts, loads that see the newest store, and PCM_Commit's version of linked direct files mixed
// with keys stored through pcmd.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "error.h"
#include "pcm_types.h"
#include "shard.h"
#include "storage/checkpoint.h"
#include "storage/store.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace pcm::daemon;

namespace {

std::vector<double> data_of(int seed, int rank, std::size_t n) {
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = seed * 1e6 + rank * 1e5 + static_cast<double>(i);
  return x;
}

// What libpcm's DirectStore does: the key's file in the direct-store directory, then its record.
std::string stage(Store& store, const std::string& job, int rank, const std::string& key,
                  const std::vector<double>& x, const std::string& tag) {
  const auto dir = store.direct_dir(job);
  const std::string file = staged_file_name(rank, key, tag);
  ShardRecord w = write_shard(dir.dir.string(), {job, -1, rank, 0},
                              {{key, PCM_DOUBLE, x.size(), {{x.data(), x.size() * 8}}}}, file);
  ShardDataset d = w.datasets.at(0);
  d.file = w.file;
  d.file_size = w.size;
  store.put_direct(job, rank, key, ShardRecord{rank, "", 0, {d}});
  return (dir.dir / file).string();
}

std::vector<double> as_doubles(const std::vector<char>& bytes) {
  std::vector<double> x(bytes.size() / 8);
  std::memcpy(x.data(), bytes.data(), bytes.size());
  return x;
}

ino_t inode(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
}

}  // namespace

TEST(StoreDirect, RecordsNameOnlyTheKeysOwnFiles) {
  ShardRecord r{2, "", 0, {{"x", PCM_DOUBLE, 100, 2048, {1}, "s2.x.0123456789abcdef.h5", 4096}}};
  EXPECT_NO_THROW(ShardRecord::from_json(r.to_json()));
  auto bad = [&](auto change) {
    auto j = r.to_json();
    change(j);
    return code_of([&] { ShardRecord::from_json(j); });
  };
  EXPECT_EQ(bad([](auto& j) { j["datasets"][0]["file"] = "../s2.x.0123456789abcdef.h5"; }),
            PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["datasets"][0]["file"] = "s2.y.0123456789abcdef.h5"; }),
            PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["datasets"][0]["file"] = "s1.x.0123456789abcdef.h5"; }),
            PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["datasets"][0]["file"] = "s2.x.0123456789ABCDEF.h5"; }),
            PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["datasets"][0]["file_size"] = 2048; }), PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["datasets"][0].erase("file"); }), PCM_ERR_ARG);  // in no file
  EXPECT_EQ(bad([](auto& j) { j["size"] = 10; }), PCM_ERR_ARG);  // no file of its own: no size
  EXPECT_TRUE(is_staged_file_name("s0.a.b.0123456789abcdef.h5", 0, "a.b"));
  EXPECT_FALSE(is_staged_file_name("s0.a.b.0123456789abcdef.h5", 0, "a"));
}

TEST(StoreDirect, LoadsSeeTheNewestStoreWhicheverWayItCame) {
  TempDir tmp;
  Store store(tmp.path());
  const std::string job = "j";
  const std::string first = stage(store, job, 0, "x", data_of(1, 0, 20000), "00000000000000a1");
  std::vector<char> out;
  EXPECT_EQ(store.get(job, 0, "x", out).count, 20000u);
  EXPECT_EQ(as_doubles(out), data_of(1, 0, 20000));
  EXPECT_EQ(store.meta(job, 0, "x")->type, PCM_DOUBLE);
  // A new store of the key: a new file; the old one goes.
  stage(store, job, 0, "x", data_of(2, 0, 30000), "00000000000000a2");
  EXPECT_FALSE(fs::exists(first));
  store.get(job, 0, "x", out);
  EXPECT_EQ(as_doubles(out), data_of(2, 0, 30000));
  // A store through pcmd replaces the direct key, and the record goes.
  const auto small = data_of(3, 0, 10);
  store.put(job, 0, "x", PCM_DOUBLE, small.data(), small.size());
  EXPECT_FALSE(store.direct_record(job, 0, "x"));
  store.get(job, 0, "x", out);
  EXPECT_EQ(as_doubles(out), small);
  // A record of a file that is not there is refused; the key keeps its data.
  ShardRecord ghost{0, "", 0, {{"x", PCM_DOUBLE, 1, 0, {1}, "s0.x.00000000000000ff.h5", 4096}}};
  EXPECT_EQ(code_of([&] { store.put_direct(job, 0, "x", ghost); }), PCM_ERR_ARG);
  store.get(job, 0, "x", out);
  EXPECT_EQ(as_doubles(out), small);
}

TEST(StoreDirect, CommitLinksDirectFilesAndWritesTheKeysThroughPcmd) {
  TempDir tmp;
  Store store(tmp.path());
  Checkpoints cp(tmp.path());
  const std::string job = "j";
  const std::string direct = stage(store, job, 0, "x", data_of(1, 0, 50000), "0000000000000001");
  const auto x1 = data_of(1, 1, 40000);
  store.put(job, 1, "x", PCM_DOUBLE, x1.data(), x1.size());  // rank 1 through pcmd
  for (int r = 0; r < 2; ++r) {
    int it = 7;
    store.put(job, r, "it", PCM_INT, &it, 1);
  }
  Manifest m = cp.commit(store, job, 7, 2, nullptr);
  EXPECT_EQ(m.format, 2);
  const fs::path vdir = cp.version_dir(job, 7);
  EXPECT_EQ(inode(direct), inode(vdir / fs::path(direct).filename()));  // linked, not copied
  EXPECT_TRUE(fs::exists(vdir / "r0.h5"));                              // rank 0's "it"
  EXPECT_TRUE(fs::exists(vdir / "r1.h5"));                              // rank 1's "x" and "it"
  EXPECT_TRUE(cp.verify(job, 7).valid);
  std::vector<char> out;
  cp.read(m, 0, "x", out);
  EXPECT_EQ(as_doubles(out), data_of(1, 0, 50000));
  cp.read(m, 1, "x", out);
  EXPECT_EQ(as_doubles(out), x1);
  EXPECT_EQ(cp.read(m, 1, "it", out).count, 1u);

  // The key stored again: the version keeps its link to the data it committed.
  stage(store, job, 0, "x", data_of(2, 0, 50000), "0000000000000002");
  EXPECT_FALSE(fs::exists(direct));
  cp.read(*cp.latest_valid(job), 0, "x", out);
  EXPECT_EQ(as_doubles(out), data_of(1, 0, 50000));

  // A store that failed: no commit until the key is stored again.
  store.failed_direct(job, 0, "x");
  EXPECT_EQ(code_of([&] { cp.commit(store, job, 8, 2, nullptr); }), PCM_ERR_REFUSED);
  stage(store, job, 0, "x", data_of(3, 0, 50000), "0000000000000003");
  m = cp.commit(store, job, 8, 2, nullptr);
  cp.read(m, 0, "x", out);
  EXPECT_EQ(as_doubles(out), data_of(3, 0, 50000));
  // A rank that stored nothing: no version, and no directory left behind.
  EXPECT_EQ(code_of([&] { cp.commit(store, job, 9, 3, nullptr); }), PCM_ERR_REFUSED);
  EXPECT_FALSE(fs::exists(cp.version_dir(job, 9).string() + ".tmp"));
  EXPECT_EQ(cp.latest_valid(job)->iteration, 8);
}
