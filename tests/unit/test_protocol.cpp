// test_protocol.cpp — unit tests of header encoding and field validation.
#include <gtest/gtest.h>

#include "error.h"
#include "pcm_types.h"
#include "protocol.h"
#include "test_util.h"

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

// Hostile headers, as anyone on the port could send them before their secret is checked: they are
// refused with an error, never a crash or an allocation of what they only declare.
TEST(ProtocolHostile, DeepNestingIsRefusedNotACrash) {
  // A map holding 87,000 nested one-element arrays: the size that crashed the recursive decoder.
  std::string deep = "\x81\xa1k";
  deep.append(87000, '\x91');
  deep.push_back('\x01');
  EXPECT_EQ(code_of([&] { proto::decode(deep.data(), deep.size()); }), PCM_ERR_ARG);
  // Within the limit the same shape decodes.
  std::string ok = "\x81\xa1k";
  ok.append(proto::kMaxDepth - 2, '\x91');
  ok.push_back('\x01');
  EXPECT_NO_THROW(proto::decode(ok.data(), ok.size()));
}

TEST(ProtocolHostile, DeclaredLengthsMustBePresent) {
  const std::string cases[] = {
      std::string("\x81\xa1k\xdb\xff\xff\xff\xff", 8),      // str32 of 4 GiB
      std::string("\x81\xa1k\xc6\x7f\xff\xff\xff", 8),      // bin32 of 2 GiB
      std::string("\x81\xa1k\xdd\xff\xff\xff\xff", 8),      // array32 of 4 G items
      std::string("\xdf\xff\xff\xff\xff", 5),               // map32 of 4 G pairs
      std::string("\x81\xa1k\xc9\x00\x00\x10\x00\x01", 9),  // ext32 of 4 KiB
      std::string("\x81\xa1k\xd8\x01", 5),                  // fixext16, 1 byte present
  };
  for (const std::string& c : cases)
    EXPECT_EQ(code_of([&] { proto::decode(c.data(), c.size()); }), PCM_ERR_ARG) << c.size();
}

TEST(ProtocolHostile, StringsMustBeUtf8AndNothingMayFollow) {
  const std::string bad[] = {
      std::string("\x81\xa1k\xa2\xc3\x28", 6),      // invalid continuation
      std::string("\x81\xa1k\xa2\xc0\xaf", 6),      // overlong '/'
      std::string("\x81\xa1k\xa3\xed\xa0\x80", 7),  // a surrogate
      std::string("\x81\xa2\xff\xfek\xa1v", 7),     // a key that is not UTF-8
      std::string("\x81\xa1k\xa1v\x00", 6),         // a byte after the end
  };
  for (const std::string& c : bad)
    EXPECT_EQ(code_of([&] { proto::decode(c.data(), c.size()); }), PCM_ERR_ARG) << c.size();
  const std::string good = proto::encode(json{{"name", "h\xc3\xa9t\xe2\x82\xac\xf0\x9f\x94\xa5"}});
  EXPECT_NO_THROW(proto::decode(good.data(), good.size()));
}

TEST(ProtocolText, CleanTextIsValidUtf8AndBounded) {
  EXPECT_EQ(proto::clean_text("plain"), "plain");
  EXPECT_EQ(proto::clean_text("h\xc3\xa9t"), "h\xc3\xa9t");
  EXPECT_EQ(proto::clean_text(std::string("a\xff\xc3(b", 5)), "a\\xff\\xc3(b");
  EXPECT_TRUE(proto::valid_utf8(proto::clean_text(std::string("\xed\xa0\x80\xc0\xaf", 5))));
  // Cut at a character boundary: never half of a multi-byte character.
  std::string euros;
  for (int i = 0; i < 100; ++i) euros += "\xe2\x82\xac";
  for (std::size_t max = 3; max < 40; ++max) {
    const std::string c = proto::clean_text(euros, max);
    EXPECT_LE(c.size(), max);
    EXPECT_TRUE(proto::valid_utf8(c)) << max;
    EXPECT_EQ(c.substr(c.size() - 3), "...");
  }
  EXPECT_EQ(proto::clean_text(std::string(10, 'x'), 10), std::string(10, 'x'));
}

TEST(ProtocolText, PrintableKeepsEverythingOnOneLine) {
  EXPECT_EQ(proto::printable("job heat-1"), "job heat-1");
  EXPECT_EQ(proto::printable("x\nFORGED [pcmd] [info] line\r\t"),
            "x\\nFORGED [pcmd] [info] line\\r\\t");
  EXPECT_EQ(proto::printable("a\\b"), "a\\\\b");
  EXPECT_EQ(proto::printable(std::string("\x1b[31m\x7f\xff", 7)), "\\x1b[31m\\x7f\\xff");
  EXPECT_EQ(proto::printable("h\xc3\xa9t"), "h\xc3\xa9t");
  // C1 controls and U+2028 (a line separator) are escaped too.
  EXPECT_EQ(proto::printable("\xc2\x85\xe2\x80\xa8"), "\\xc2\\x85\\xe2\\x80\\xa8");
  const std::string shown = proto::printable(std::string(100000, 'a'), 100);
  EXPECT_EQ(shown, std::string(100, 'a') + "...(100000 bytes)");
  for (int c = 0; c < 256; ++c) {
    const std::string p = proto::printable(std::string(1, static_cast<char>(c)));
    EXPECT_EQ(p.find('\n'), std::string::npos);
    EXPECT_TRUE(proto::valid_utf8(p));
  }
}
