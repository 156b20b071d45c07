// test_protocol.cpp — unit tests of header encoding and field validation.
#include <gtest/gtest.h>

#include "test_util.h"

#include "error.h"
#include "pcm_types.h"
#include "protocol.h"

using pcm::proto::json;
namespace proto = pcm::proto;


TEST(Protocol, RoundTrip) {
  json h{{"op", "store"}, {"rank", 3}, {"key", "grid"}, {"count", 1LL << 40}, {"flag", true}};
  std::string bytes = proto::encode(h);
  json back = proto::decode(bytes.data(), bytes.size());
  EXPECT_EQ(back, h);
  EXPECT_EQ(proto::get_int(back, "count", 0, INT64_MAX), 1LL << 40);
  EXPECT_EQ(proto::get_string(back, "key", 64), "grid");
  EXPECT_TRUE(proto::get_bool(back, "flag", false));
}

TEST(Protocol, RejectsWhatIsNotAMap) {
  EXPECT_EQ(code_of([] { proto::decode("", 0); }), PCM_ERR_ARG);
  const char garbage[] = "\xc1\xc1\xc1 not msgpack";
  EXPECT_EQ(code_of([&] { proto::decode(garbage, sizeof garbage); }), PCM_ERR_ARG);
  std::string array = proto::encode(json::array({1, 2, 3}));
  EXPECT_EQ(code_of([&] { proto::decode(array.data(), array.size()); }), PCM_ERR_ARG);
  std::string truncated = proto::encode(json{{"op", "ping"}, {"secret", "abc"}});
  EXPECT_EQ(code_of([&] { proto::decode(truncated.data(), truncated.size() - 2); }), PCM_ERR_ARG);
}

TEST(Protocol, FieldValidation) {
  json h{{"s", "abc"}, {"i", 5}, {"neg", -1}, {"b", "notbool"}};
  EXPECT_EQ(code_of([&] { proto::get_string(h, "missing", 10); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { proto::get_string(h, "i", 10); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { proto::get_string(h, "s", 2); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { proto::get_int(h, "s", 0, 10); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { proto::get_int(h, "i", 0, 4); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { proto::get_int(h, "neg", 0, 4); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { proto::get_bool(h, "b", false); }), PCM_ERR_ARG);
  EXPECT_EQ(proto::get_int(h, "i", 0, 5), 5);
  EXPECT_FALSE(proto::opt_int(h, "missing", 0, 1).has_value());
  json big{{"u", UINT64_MAX}};
  EXPECT_EQ(code_of([&] { proto::get_int(big, "u", 0, INT64_MAX); }), PCM_ERR_ARG);
}

TEST(Protocol, Names) {
  EXPECT_TRUE(proto::valid_name("heat2d-1.run_2"));
  EXPECT_FALSE(proto::valid_name(""));
  EXPECT_FALSE(proto::valid_name("../etc"));
  EXPECT_FALSE(proto::valid_name("a/b"));
  EXPECT_FALSE(proto::valid_name(".hidden"));
  EXPECT_FALSE(proto::valid_name("-opt"));
  EXPECT_FALSE(proto::valid_name("sp ace"));
  EXPECT_FALSE(proto::valid_name(std::string(65, 'a')));
  EXPECT_TRUE(proto::valid_name(std::string(64, 'a')));
  EXPECT_TRUE(proto::valid_host("node-01.cluster"));
  EXPECT_FALSE(proto::valid_host("node_01"));
  EXPECT_FALSE(proto::valid_host("a;rm -rf"));
}

TEST(Protocol, TypeSizes) {
  EXPECT_EQ(proto::type_size(PCM_DOUBLE), sizeof(double));
  EXPECT_EQ(proto::type_size(PCM_INT), sizeof(int));
  EXPECT_EQ(proto::type_size(PCM_LONG), sizeof(long));
  EXPECT_EQ(proto::type_size(PCM_CHAR), 1u);
  EXPECT_EQ(proto::type_size(0), 0u);
  EXPECT_EQ(proto::type_size(99), 0u);
}
