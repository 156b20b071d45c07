// test_config.cpp — unit tests of the configuration file: atomic write, 0600, clear errors.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "auth.h"
#include "config.h"
#include "error.h"
#include "pcm_types.h"
#include "test_util.h"

namespace fs = std::filesystem;
using pcm::common::Config;

class ConfigTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  const fs::path& dir_ = tmp_.path();
};

TEST_F(ConfigTest, WriteThenReadWithMode0600) {
  std::string path = (dir_ / "sub" / "pcmd.conf").string();
  pcm::common::write_config(path, Config{"tcp://127.0.0.1:5555", "s3cret", 42});
  Config c = pcm::common::read_config(path);
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
      pcm::common::read_config(p);
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
  EXPECT_EQ(pcm::common::default_config_path(), "/x/y.conf");
  unsetenv("PCM_CONFIG");
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(pcm::common::default_config_path(), "/home/someone/.pcm/pcmd.conf");
}

TEST(Secret, RandomAndHex) {
  auto a = pcm::common::random_secret(), b = pcm::common::random_secret();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST_F(ConfigTest, CurveKeysRoundTripAndTheServerKeyStaysApart) {
  std::string path = (dir_ / "pcmd.conf").string();
  auto server = pcm::common::curve_keypair(), client = pcm::common::curve_keypair();
  Config in{"tcp://10.0.0.1:5555",
            pcm::common::random_secret(),
            7,
            "tcp://10.0.0.1:5556",
            {server.public_key, client.public_key, client.secret_key}};
  pcm::common::write_config(path, in);
  pcm::common::write_server_key(path, server.secret_key);
  Config out = pcm::common::read_config(path);
  EXPECT_EQ(out.curve.server_public, server.public_key);
  EXPECT_EQ(out.curve.public_key, client.public_key);
  EXPECT_EQ(out.curve.secret_key, client.secret_key);
  EXPECT_EQ(pcm::common::read_server_key(path), server.secret_key);
  // Clients read only the configuration: pcmd's secret key is not in it.
  std::ifstream f(path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find(server.secret_key), std::string::npos);
  struct stat st {};
  ASSERT_EQ(stat(pcm::common::server_key_path(path).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No key file: "" (pcmd makes new keys).
  EXPECT_EQ(pcm::common::read_server_key((dir_ / "other.conf").string()), "");
  // A damaged key in the configuration is an error, not a silent fallback to no CURVE.
  std::ofstream((dir_ / "badkey.conf").string())
      << R"({"endpoint":"tcp://1.2.3.4:1","secret":"s","curve":{"server_public":"x"}})";
  EXPECT_EQ(code_of([&] { pcm::common::read_config((dir_ / "badkey.conf").string()); }),
            PCM_ERR_CONFIG);
}

TEST_F(ConfigTest, PrivateFilesAndDirectories) {
  using pcm::common::check_private_dir;
  using pcm::common::check_private_file;
  const std::string file = (dir_ / "pcmd.conf").string(), sub = (dir_ / "d").string();
  EXPECT_EQ(code_of([&] { check_private_file(file, "the configuration file"); }), PCM_SUCCESS)
      << "an absent file is fine (pcmd writes it 0600)";
  pcm::common::write_config(file, Config{"tcp://127.0.0.1:1", "s", 1});
  EXPECT_EQ(code_of([&] { check_private_file(file, "the configuration file"); }), PCM_SUCCESS);
  for (mode_t mode : {0640, 0604, 0620, 0602, 0644}) {
    ASSERT_EQ(chmod(file.c_str(), mode), 0);
    try {
      check_private_file(file, "the configuration file");
      ADD_FAILURE() << "mode " << std::oct << mode << " accepted";
    } catch (const pcm::Error& e) {
      EXPECT_EQ(e.code(), PCM_ERR_CONFIG);
      EXPECT_NE(std::string(e.what()).find("chmod 600 " + file), std::string::npos) << e.what();
    }
  }
  fs::create_directory(sub);
  for (mode_t mode : {0700, 0755, 0750}) {
    ASSERT_EQ(chmod(sub.c_str(), mode), 0);
    EXPECT_EQ(code_of([&] { check_private_dir(sub, "the data directory"); }), PCM_SUCCESS)
        << std::oct << mode;
  }
  for (mode_t mode : {0777, 0770, 0702, 01777}) {
    ASSERT_EQ(chmod(sub.c_str(), mode), 0);
    try {
      check_private_dir(sub, "the data directory");
      ADD_FAILURE() << "mode " << std::oct << mode << " accepted";
    } catch (const pcm::Error& e) {
      EXPECT_EQ(e.code(), PCM_ERR_CONFIG);
      EXPECT_NE(std::string(e.what()).find("chmod 700 " + sub), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(code_of([&] { check_private_dir(file, "the data directory"); }), PCM_ERR_CONFIG)
      << "a file is not a directory";
}

TEST(Secret, WeakSecretsAreRefused) {
  EXPECT_GT(pcm::common::secret_bits(pcm::common::random_secret()), 200);
  EXPECT_EQ(pcm::common::secret_bits(std::string(64, 'a')), 0);
  EXPECT_EQ(code_of([] { pcm::common::check_secret_strength(pcm::common::random_secret(), "f"); }),
            PCM_SUCCESS);
  std::vector<std::string> weak{"x", "s3cret", std::string(64, 'a'), "0123456789abcdef0123",
                                "abababababababababababababababababababababababababab"};
  for (const auto& s : weak) {
    try {
      pcm::common::check_secret_strength(s, "/p/pcmd.conf");
      ADD_FAILURE() << "accepted '" << s << "'";
    } catch (const pcm::Error& e) {
      EXPECT_EQ(e.code(), PCM_ERR_CONFIG);
      EXPECT_NE(std::string(e.what()).find("remove /p/pcmd.conf"), std::string::npos) << e.what();
    }
  }
}
