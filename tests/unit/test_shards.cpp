// test_shards.cpp — checkpoints whose shards the ranks write themselves (format 2): the shard file,
// verified reads, pcmd's commit without the bytes, damage of every kind, and seeded kill trials.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "error.h"
#include "pcm_types.h"
#include "shard.h"
#include "storage/checkpoint.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace pcm::daemon;

namespace {

// Rank r's data of version v: "x" (n doubles) and "v" (one long long).
std::vector<double> data_of(std::int64_t v, int r, std::size_t n) {
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<double>(v) * 1e6 + r * 1e5 + i * 0.5;
  return x;
}

ShardItem item(const std::string& key, int type, const void* p, std::uint64_t count,
               std::size_t elem) {
  return ShardItem{key, type, count, {{p, count * elem}}};
}

// Writes version v of a 2-rank job the way PCM_Checkpoint does, and commits it.
Manifest write_version(Checkpoints& cp, const std::string& job, std::int64_t v, std::size_t n) {
  auto dir = cp.begin_shards(job, v);
  std::vector<ShardRecord> recs;
  for (int r = 0; r < 2; ++r) {
    auto x = data_of(v, r, n + r);
    long long vv = v;
    recs.push_back(write_shard(dir.dir.string(), {job, v, r, 2},
                               {item("x", PCM_DOUBLE, x.data(), x.size(), sizeof(double)),
                                item("v", PCM_LONG_LONG, &vv, 1, sizeof vv)}));
  }
  return cp.commit_shards(job, v, 2, nullptr, recs);
}

// Empty when version m reads back exactly as written by write_version; else what differs.
std::string mismatch(const Checkpoints& cp, const Manifest& m, std::size_t n) {
  for (int r = 0; r < 2; ++r) {
    std::vector<char> out;
    try {
      auto meta = cp.read(m, r, "x", out);
      auto want = data_of(m.iteration, r, n + r);
      if (meta.type != PCM_DOUBLE || meta.count != want.size() ||
          std::memcmp(out.data(), want.data(), out.size()) != 0)
        return "x of rank " + std::to_string(r) + " differs";
      cp.read(m, r, "v", out);
      long long vv = 0;
      std::memcpy(&vv, out.data(), sizeof vv);
      if (vv != m.iteration) return "v of rank " + std::to_string(r) + " differs";
    } catch (const pcm::Error& e) {
      return e.what();
    }
  }
  return "";
}

void flip_byte(const fs::path& p, std::uint64_t at) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x40);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&c, 1);
}

}  // namespace

TEST(Shard, WritesFromPiecesAndReadsVerifiedRanges) {
  TempDir tmp;
  // 2.5 chunks of doubles, given as three pieces with gaps between them (a buffer with halos).
  const std::size_t n = (5 * kShardChunk / 2) / sizeof(double);
  std::vector<double> buf(n + 200);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<double>(i);
  std::vector<double> owned;
  ShardItem it{"grid", PCM_DOUBLE, 0, {}};
  for (auto [lo, len] : {std::pair<std::size_t, std::size_t>{10, 1000},
                         {1100, n / 2},
                         {1100 + n / 2 + 50, n - 1000 - n / 2}}) {
    it.pieces.push_back({buf.data() + lo, len * sizeof(double)});
    owned.insert(owned.end(), buf.begin() + lo, buf.begin() + lo + len);
    it.count += len;
  }
  ASSERT_EQ(it.count, n);
  ShardRecord rec = write_shard(tmp.path().string(), {"job", 7, 1, 2}, {it});
  EXPECT_EQ(rec.file, "r1.h5");
  EXPECT_EQ(rec.size, fs::file_size(tmp.path() / "r1.h5"));
  ASSERT_EQ(rec.datasets.size(), 1u);
  EXPECT_EQ(rec.datasets[0].xxh3, chunk_hashes(owned.data(), n * sizeof(double)));
  EXPECT_EQ(rec.datasets[0].xxh3.size(), 3u);
  EXPECT_EQ(rec.datasets[0].offset % (1 << 20), 0u) << "large datasets are aligned";
  EXPECT_EQ(fs::status(tmp.path() / "r1.h5").permissions() & fs::perms::others_all,
            fs::perms::none);

  // HDF5 reads it as an ordinary file (what h5dump sees).
  hid_t f = H5Fopen((tmp.path() / "r1.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t d = H5Dopen2(f, "/data/grid", H5P_DEFAULT);
  ASSERT_GE(d, 0);
  std::vector<double> back(n);
  ASSERT_GE(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data()), 0);
  EXPECT_EQ(back, owned);
  H5Dclose(d);
  H5Fclose(f);

  // Ranges across chunk borders, inside one chunk, the short last chunk, all of it.
  ShardReader reader((tmp.path() / "r1.h5").string(), rec);
  const auto& ds = rec.datasets[0];
  const std::uint64_t total = ds.bytes();
  for (auto [first, len] : {std::pair<std::uint64_t, std::uint64_t>{0, total},
                            {8, 16},
                            {kShardChunk - 8, 24},
                            {kShardChunk, kShardChunk},
                            {2 * kShardChunk + 8, total - 2 * kShardChunk - 8},
                            {total - 8, 8},
                            {100 * 8, 2 * kShardChunk},
                            {0, 0}}) {
    std::vector<char> out(len);
    reader.read(ds, first, len, out.data());
    // (memcmp of nothing still wants real pointers, UBSan says: out.data() is null for len 0.)
    EXPECT_TRUE(
        std::equal(out.begin(), out.end(), reinterpret_cast<const char*>(owned.data()) + first))
        << "bytes " << first << "+" << len;
  }
  std::vector<char> out(16);
  EXPECT_EQ(code_of([&] { reader.read(ds, total - 8, 16, out.data()); }), PCM_ERR_ARG);
}

// ShardIo::kDirect (O_DIRECT past the page cache, plain writes for what does not fill a block;
// plain throughout where the file system refuses it): the same bytes and checksums as the
// buffered path, for datasets of awkward sizes, pieces with gaps, more than one bounce buffer of
// data and a tiny one.
TEST(Shard, DirectWritesGiveTheSameFile) {
  TempDir tmp;
  const std::size_t n = (19 << 20) / sizeof(double) + 13;  // > 2 bounce buffers, not whole blocks
  std::vector<double> a(n + 100);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i) * 0.5;
  std::vector<std::int32_t> b(777);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::int32_t>(i * 3);
  std::vector<char> c(70001, 'x');
  ShardItem ia{
      "a",
      PCM_DOUBLE,
      n,
      {{a.data() + 3, 1001 * sizeof(double)}, {a.data() + 1100, (n - 1001) * sizeof(double)}}};
  ShardItem ib{"b", PCM_INT, b.size(), {{b.data(), b.size() * sizeof(std::int32_t)}}};
  ShardItem ic{"c", PCM_BYTE, c.size(), {{c.data(), c.size()}}};
  const std::vector<ShardItem> items{ia, ib, ic};
  ShardRecord buffered = write_shard(tmp.path().string(), {"job", 1, 0, 1}, items, "", true);
  ShardRecord direct =
      write_shard(tmp.path().string(), {"job", 1, 1, 1}, items, "", true, ShardIo::kDirect);
  ASSERT_EQ(direct.datasets.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(direct.datasets[k].xxh3, buffered.datasets[k].xxh3) << items[k].key;
    EXPECT_EQ(direct.datasets[k].offset, buffered.datasets[k].offset) << items[k].key;
  }
  EXPECT_EQ(direct.size, fs::file_size(tmp.path() / "r1.h5"));
  ShardReader reader((tmp.path() / "r1.h5").string(), direct);
  for (std::size_t k = 0; k < 3; ++k) {
    const auto& ds = direct.datasets[k];
    std::vector<char> out(ds.bytes()), want;
    for (const auto& p : items[k].pieces)
      want.insert(want.end(), static_cast<const char*>(p.data),
                  static_cast<const char*>(p.data) + p.bytes);
    reader.read(ds, 0, ds.bytes(), out.data());
    EXPECT_EQ(out, want) << items[k].key;
  }
}

TEST(Shard, ImageThroughPcmdIsTheSameFile) {
  TempDir tmp;
  std::vector<int> v(300000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i * 7);
  std::vector<char> image;
  ShardRecord rec =
      image_shard({"job", 3, 0, 1}, {item("v", PCM_INT, v.data(), v.size(), sizeof(int))}, image);
  EXPECT_EQ(rec.size, image.size());
  std::ofstream(tmp.path() / rec.file, std::ios::binary)
      .write(image.data(), static_cast<std::streamsize>(image.size()));
  ShardReader reader((tmp.path() / rec.file).string(), rec);
  std::vector<int> back(v.size());
  reader.read(rec.datasets[0], 0, v.size() * sizeof(int), back.data());
  EXPECT_EQ(back, v);
}

TEST(Shard, DamageIsFoundWhereItIs) {
  TempDir tmp;
  auto x = data_of(1, 0, 3 * kShardChunk / sizeof(double));
  ShardRecord rec = write_shard(tmp.path().string(), {"job", 1, 0, 1},
                                {item("x", PCM_DOUBLE, x.data(), x.size(), sizeof(double))});
  const auto& ds = rec.datasets[0];
  const fs::path file = tmp.path() / rec.file;
  flip_byte(file, ds.offset + kShardChunk + 5);  // chunk 1
  ShardReader reader(file.string(), rec);
  std::vector<char> out(kShardChunk);
  reader.read(ds, 0, kShardChunk, out.data());  // chunk 0 is still good
  reader.read(ds, 2 * kShardChunk, kShardChunk, out.data());
  try {
    reader.read(ds, kShardChunk + 100, 10, out.data());
    ADD_FAILURE() << "a flipped bit was read without complaint";
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_CORRUPT);
    EXPECT_NE(std::string(e.what()).find("chunk 1"), std::string::npos) << e.what();
  }
  // A truncated file is refused when opened; a missing one is not found.
  fs::resize_file(file, rec.size - 1);
  EXPECT_EQ(code_of([&] { ShardReader r(file.string(), rec); }), PCM_ERR_CORRUPT);
  fs::remove(file);
  EXPECT_EQ(code_of([&] { ShardReader r(file.string(), rec); }), PCM_ERR_NOT_FOUND);
}

TEST(Shard, RecordsFromTheWireAreChecked) {
  ShardRecord r;
  r.rank = 2;
  r.file = "r2.h5";
  r.size = 4096;
  r.datasets.push_back({"x", PCM_DOUBLE, 100, 2048, {1}});
  EXPECT_NO_THROW(ShardRecord::from_json(r.to_json()));
  auto bad = [&](auto change) {
    auto j = r.to_json();
    change(j);
    return code_of([&] { ShardRecord::from_json(j); });
  };
  EXPECT_EQ(bad([](auto& j) { j["file"] = "../r2.h5"; }), PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["datasets"][0]["offset"] = 4000; }), PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["datasets"][0]["count"] = 1ull << 62; }), PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["datasets"][0]["xxh3"] = {1, 2}; }), PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["datasets"][0]["key"] = "../x"; }), PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["datasets"].push_back(j["datasets"][0]); }), PCM_ERR_ARG);
  EXPECT_EQ(bad([](auto& j) { j["size"] = "big"; }), PCM_ERR_ARG);
}

TEST(ShardVersions, CommitWithoutTheBytesAndFallBackOnDamage) {
  TempDir tmp;
  Checkpoints cp(tmp.path());
  const std::size_t n = 300000;
  for (std::int64_t v : {10, 20, 30}) write_version(cp, "j", v, n);
  auto m = cp.latest_valid("j");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->iteration, 30);
  EXPECT_EQ(m->format, 2);
  EXPECT_EQ(mismatch(cp, *m, n), "");
  EXPECT_TRUE(fs::exists(cp.version_dir("j", 30) / "manifest.json"));
  EXPECT_FALSE(fs::exists(cp.version_dir("j", 30).string() + ".tmp"));
  // A valid version is never made again.
  EXPECT_EQ(code_of([&] { cp.begin_shards("j", 30); }), PCM_ERR_REFUSED);

  // A missing shard: the version does not verify; the one before it is used.
  fs::remove(cp.version_dir("j", 30) / "r1.h5");
  EXPECT_FALSE(cp.verify("j", 30).valid);
  EXPECT_NE(cp.verify("j", 30).why.find("r1.h5 missing"), std::string::npos);
  EXPECT_EQ(cp.latest_valid("j")->iteration, 20);
  // A truncated one likewise.
  fs::resize_file(cp.version_dir("j", 20) / "r0.h5",
                  fs::file_size(cp.version_dir("j", 20) / "r0.h5") - 3);
  EXPECT_EQ(cp.latest_valid("j")->iteration, 10);
  // A flipped bit is found by the reader, which marks the version bad for good.
  const Manifest m10 = *cp.latest_valid("j");
  flip_byte(cp.version_dir("j", 10) / "r1.h5", m10.shards[1].datasets[0].offset + 77);
  std::vector<char> out;
  EXPECT_EQ(code_of([&] { cp.read(m10, 1, "x", out); }), PCM_ERR_CORRUPT);
  cp.mark_bad("j", 10, "x of rank 1 chunk 0 fails its checksum");
  EXPECT_FALSE(cp.latest_valid("j"));
  EXPECT_NE(cp.verify("j", 10).why.find("marked bad: x of rank 1"), std::string::npos);

  // A damaged version of an iteration can be made again; a bad mark goes with it.
  auto again = write_version(cp, "j", 10, n);
  EXPECT_EQ(mismatch(cp, again, n), "");
  EXPECT_EQ(cp.latest_valid("j")->iteration, 10);
}

// The reports kept for a pcmd restart (keep_record, kept_records) go to the log of the version as
// it is now: a version begun again at the same iteration keeps them in its new directory.
TEST(ShardVersions, KeptRecordsFollowAVersionBegunAgain) {
  TempDir tmp;
  Checkpoints cp(tmp.path());
  auto x = data_of(7, 0, 100);
  auto record = [&](const Checkpoints::ShardDir& d, int rank) {
    return write_shard(d.dir.string(), {"j", 7, rank, 2},
                       {item("x", PCM_DOUBLE, x.data(), x.size(), sizeof(double))});
  };
  auto first = cp.begin_shards("j", 7);
  cp.keep_record("j", 7, record(first, 0), std::nullopt);
  ASSERT_EQ(cp.kept_records("j", 7)->size(), 1u);
  auto again = cp.begin_shards("j", 7);  // the first attempt's directory is gone
  cp.keep_record("j", 7, record(again, 1), std::nullopt);
  auto kept = cp.kept_records("j", 7);
  ASSERT_TRUE(kept);
  ASSERT_EQ(kept->size(), 1u) << "the new attempt's log holds the new report only";
  EXPECT_EQ(kept->front().first.rank, 1);
}

TEST(ShardVersions, CommitRefusesWhatTheRanksDidNotWrite) {
  TempDir tmp;
  Checkpoints cp(tmp.path());
  auto dir = cp.begin_shards("j", 5);
  auto x = data_of(5, 0, 1000);
  auto rec = write_shard(dir.dir.string(), {"j", 5, 0, 2},
                         {item("x", PCM_DOUBLE, x.data(), x.size(), sizeof(double))});
  // Rank 1 is missing; a size that differs; a commit never begun.
  EXPECT_EQ(code_of([&] { cp.commit_shards("j", 5, 2, nullptr, {rec}); }), PCM_ERR_REFUSED);
  ShardRecord r1 = rec;
  r1.rank = 1;
  r1.file = "r1.h5";
  EXPECT_EQ(code_of([&] { cp.commit_shards("j", 5, 2, nullptr, {rec, r1}); }), PCM_ERR_REFUSED);
  ShardRecord wrong = rec;
  wrong.size += 1;
  EXPECT_EQ(code_of([&] { cp.commit_shards("j", 5, 1, nullptr, {wrong}); }), PCM_ERR_REFUSED);
  EXPECT_EQ(code_of([&] { cp.commit_shards("j", 6, 1, nullptr, {rec}); }), PCM_ERR_REFUSED);
  EXPECT_FALSE(cp.latest_valid("j"));
  // A failed attempt's directory goes when the job's next checkpoint begins.
  cp.begin_shards("j", 4);
  EXPECT_TRUE(fs::exists(cp.version_dir("j", 4).string() + ".tmp"));
  dir = cp.begin_shards("j", 5);
  EXPECT_FALSE(fs::exists(cp.version_dir("j", 4).string() + ".tmp"));
  rec = write_shard(dir.dir.string(), {"j", 5, 0, 2},
                    {item("x", PCM_DOUBLE, x.data(), x.size(), sizeof(double))});
  // The shard of a rank that cannot see the directory arrives through pcmd.
  std::vector<char> image;
  auto y = data_of(5, 1, 1001);
  auto rec1 = image_shard({"j", 5, 1, 2},
                          {item("x", PCM_DOUBLE, y.data(), y.size(), sizeof(double))}, image);
  cp.put_shard("j", 5, 1, image.data(), image.size());
  auto m = cp.commit_shards("j", 5, 2, nullptr, {rec1, rec});
  std::vector<char> out;
  cp.read(m, 1, "x", out);
  EXPECT_EQ(std::memcmp(out.data(), y.data(), out.size()), 0);
  EXPECT_EQ(out.size(), y.size() * sizeof(double));
}

// pcmd killed after the manifest is written and synced but before the rename: nothing counts,
// and the next pcmd sweeps the directory away.
TEST(ShardVersions, CrashBeforeTheRenameLeavesNoVersion) {
  TempDir tmp;
  {
    Checkpoints cp(tmp.path());
    write_version(cp, "j", 1, 5000);
  }
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("PCMD_TEST_CRASH_BEFORE_RENAME", "1", 1);
    Checkpoints cp(tmp.path());
    write_version(cp, "j", 2, 5000);
    _exit(0);  // not reached
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 86) << "the crash point was not reached";
  const fs::path tmpdir = tmp.path() / "checkpoints/j/v00000000000000000002.tmp";
  EXPECT_TRUE(fs::exists(tmpdir / "manifest.json"));
  Checkpoints cp(tmp.path());
  EXPECT_EQ(cp.latest_valid("j")->iteration, 1);
  cp.sweep();
  EXPECT_FALSE(fs::exists(tmpdir));
  EXPECT_EQ(mismatch(cp, *cp.latest_valid("j"), 5000), "");
}

// Seeded kill trials: a writer making versions (shards, commit, prune) is killed at a random
// moment; every time, the newest valid version reads back exactly what was written for it, and
// no version is torn or mixed. PCM_SOAK_TRIALS sets the number (scripts/soak_checkpoints.sh
// runs 1000 and more).
TEST(ShardVersions, KilledWriterLeavesOnlyWholeVersions) {
  const char* env = std::getenv("PCM_SOAK_TRIALS");
  const int trials = env ? std::atoi(env) : 300;
  const char* seed_env = std::getenv("PCM_SOAK_SEED");
  const unsigned seed = seed_env ? static_cast<unsigned>(std::atoi(seed_env)) : 20261124u;
  std::mt19937 rng(seed);
  TempDir tmp;
  const std::size_t n = 40000;  // 320 KB per rank
  std::int64_t newest_seen = 0;
  int advanced = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < trials; ++t) {
    // Every fourth trial waits until the writer has committed once before its random delay
    // starts, so that some trials commit however loaded the machine is (no timing assumed).
    Pipe committed;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        Checkpoints cp(tmp.path());
        std::int64_t v = 0;
        if (auto m = cp.latest_valid("soak")) v = m->iteration;
        for (;;) {
          ++v;
          write_version(cp, "soak", v, n);
          committed.tell();
          cp.prune("soak", 2, v);
        }
      } catch (...) {
        _exit(3);
      }
    }
    if (t % 4 == 3) committed.wait();
    std::uniform_int_distribution<int> us(0, 30000);
    usleep(static_cast<useconds_t>(us(rng)));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "trial " << t << ": the writer failed on its own";
    Checkpoints cp(tmp.path());
    cp.sweep();
    auto m = cp.latest_valid("soak");
    if (!m) {
      ASSERT_EQ(newest_seen, 0) << "trial " << t << ": version " << newest_seen << " vanished";
      continue;
    }
    ASSERT_GE(m->iteration, newest_seen) << "trial " << t;
    if (m->iteration > newest_seen) ++advanced;
    newest_seen = m->iteration;
    ASSERT_EQ(mismatch(cp, *m, n), "") << "trial " << t << " (seed " << seed << ")";
  }
  std::printf(
      "[ soak     ] %d kill trials (seed %u) in %.1f s: newest version %lld, advanced %d "
      "times, never torn\n",
      trials, seed, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
      static_cast<long long>(newest_seen), advanced);
  EXPECT_GT(advanced, 0) << "no trial committed anything before the kill: the test proved nothing";
}
