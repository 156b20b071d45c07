// test_launchers.cpp — unit tests of the launchers' lookup (common/launchers.h): PCM_LIBEXEC_DIR
// first, then beside the executable; {launcher:NAME} expanded, a missing one refused.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "error.h"
#include "launchers.h"
#include "pcm_types.h"
#include "test_util.h"

namespace {

// Sets PCM_LIBEXEC_DIR for one test and puts back what was there.
class LibexecDir {
 public:
  explicit LibexecDir(const std::string& dir) {
    if (const char* old = ::getenv("PCM_LIBEXEC_DIR")) old_ = old, had_ = true;
    ::setenv("PCM_LIBEXEC_DIR", dir.c_str(), 1);
  }
  ~LibexecDir() {
    if (had_) {
      ::setenv("PCM_LIBEXEC_DIR", old_.c_str(), 1);
    } else {
      ::unsetenv("PCM_LIBEXEC_DIR");
    }
  }

 private:
  std::string old_;
  bool had_ = false;
};

std::string make_file(const TempDir& dir, const std::string& name, mode_t mode) {
  const std::string path = (dir.path() / name).string();
  std::ofstream(path) << "#!/bin/sh\n";
  ::chmod(path.c_str(), mode);
  return path;
}

}  // namespace

TEST(Launchers, FoundInLibexecDirFirst) {
  TempDir dir;
  const std::string path = make_file(dir, "launcher_site.sh", 0755);
  LibexecDir env(dir.path().string());
  ASSERT_FALSE(pcm::launcher_dirs().empty());
  EXPECT_EQ(pcm::launcher_dirs().front(), dir.path().string());
  EXPECT_EQ(pcm::find_launcher("site"), path);
  EXPECT_EQ(pcm::expand_launchers("-launcher-exec={launcher:site}"), "-launcher-exec=" + path);
  EXPECT_EQ(pcm::expand_launchers("{launcher:site} {launcher:site}"), path + " " + path);
  EXPECT_EQ(pcm::expand_launchers("no placeholder, {hosts} stays"),
            "no placeholder, {hosts} stays");
}

TEST(Launchers, BesideTheExecutableAfterwards) {
  // Without PCM_LIBEXEC_DIR: the install's ../libexec/pcm, then the build tree's libexec/pcm,
  // both beside this test program.
  ::unsetenv("PCM_LIBEXEC_DIR");
  const auto dirs = pcm::launcher_dirs();
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_NE(dirs[0].find("/../libexec/pcm"), std::string::npos) << dirs[0];
  EXPECT_EQ(dirs[1].substr(dirs[1].size() - 12), "/libexec/pcm") << dirs[1];
  EXPECT_EQ(dirs[0].substr(0, dirs[0].find("/../")), dirs[1].substr(0, dirs[1].size() - 12));
}

TEST(Launchers, MissingNotExecutableOrBadNameRefused) {
  TempDir dir;
  make_file(dir, "launcher_plain.sh", 0644);  // not executable: not a launcher
  make_file(dir, "launcher_x.sh", 0755);
  LibexecDir env(dir.path().string());
  EXPECT_FALSE(pcm::find_launcher("plain"));
  EXPECT_FALSE(pcm::find_launcher("nosuch"));
  EXPECT_FALSE(pcm::find_launcher("../x"));
  EXPECT_FALSE(pcm::find_launcher(""));
  try {
    pcm::expand_launchers("{launcher:nosuch}");
    FAIL() << "a missing launcher was expanded";
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_ARG);
    EXPECT_NE(std::string(e.what()).find("no launcher 'nosuch'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir.path().string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(pcm::expand_launchers("{launcher:x"), pcm::Error);
}
