// test_config.cpp — unit tests of the configuration file: atomic write, 0600, clear errors.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config.h"
#include "error.h"
#include "pcm_types.h"
#include "test_util.h"

namespace fs = std::filesystem;
using pcm::detail::Config;

class ConfigTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  const fs::path& dir_ = tmp_.path();
};

TEST_F(ConfigTest, WriteThenReadWithMode0600) {
  std::string path = (dir_ / "sub" / "pcmd.conf").string();
  pcm::detail::write_config(path, Config{"tcp://127.0.0.1:5555", "s3cret", 42});
  Config c = pcm::detail::read_config(path);
  EXPECT_EQ(c.endpoint, "tcp://127.0.0.1:5555");
  EXPECT_EQ(c.secret, "s3cret");
  EXPECT_EQ(c.pid, 42);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  for (auto& e : fs::directory_iterator(dir_ / "sub"))  // no temporary left behind
    EXPECT_EQ(e.path().filename(), "pcmd.conf");
}

TEST_F(ConfigTest, Errors) {
  auto code = [](const std::string& p) {
    try {
      pcm::detail::read_config(p);
    } catch (const pcm::Error& e) {
      return e.code();
    }
    return 0;
  };
  EXPECT_EQ(code((dir_ / "absent").string()), PCM_ERR_CONFIG);
  std::ofstream((dir_ / "bad").string()) << "not json";
  EXPECT_EQ(code((dir_ / "bad").string()), PCM_ERR_CONFIG);
  std::ofstream((dir_ / "nosecret").string()) << R"({"endpoint":"tcp://127.0.0.1:1"})";
  EXPECT_EQ(code((dir_ / "nosecret").string()), PCM_ERR_CONFIG);
}

TEST_F(ConfigTest, DefaultPathFollowsEnvironment) {
  setenv("PCM_CONFIG", "/x/y.conf", 1);
  EXPECT_EQ(pcm::detail::default_config_path(), "/x/y.conf");
  unsetenv("PCM_CONFIG");
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(pcm::detail::default_config_path(), "/home/someone/.pcm/pcmd.conf");
}

TEST(Secret, RandomAndHex) {
  auto a = pcm::detail::random_secret(), b = pcm::detail::random_secret();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}
