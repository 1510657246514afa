// The JSON parser of engine/json.h: values, escapes, numbers, limits, and errors that name the
// source, the byte offset and what was expected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "common/expect_error.h"
#include "engine/json.h"

namespace gpuattn::engine {
namespace {

using gpuattn::testing::expect_invalid_argument;

Json parse(std::string_view text) {
  return parse_json(text, "test.json");
}

void expect_parse_error(std::string_view text, const std::string& words) {
  SCOPED_TRACE(std::string(text));
  expect_invalid_argument([&] { parse(text); }, words);
}

TEST(Json, ParsesLiterals) {
  EXPECT_TRUE(parse("null").is_null());
  EXPECT_TRUE(parse("true").as_bool());
  EXPECT_FALSE(parse("false").as_bool());
  EXPECT_TRUE(parse(" \t\r\n true \t\r\n ").is_bool());
}

TEST(Json, ParsesAnObjectInKeyOrder) {
  const Json j = parse(R"({"zeta": 1, "alpha": [true, null, "x"], "mid": {"k": -2.5}})");
  ASSERT_TRUE(j.is_object());
  const auto& members = j.as_object();
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0].first, "zeta");
  EXPECT_EQ(members[1].first, "alpha");
  EXPECT_EQ(members[2].first, "mid");
  EXPECT_EQ(j.find("zeta")->as_int(), 1);
  const auto& alpha = j.find("alpha")->as_array();
  ASSERT_EQ(alpha.size(), 3u);
  EXPECT_TRUE(alpha[0].as_bool());
  EXPECT_TRUE(alpha[1].is_null());
  EXPECT_EQ(alpha[2].as_string(), "x");
  EXPECT_EQ(j.find("mid")->find("k")->as_number(), -2.5);
  EXPECT_EQ(j.find("missing"), nullptr);
  EXPECT_EQ(alpha[0].find("zeta"), nullptr);  // not an object
}

TEST(Json, ParsesEmptyContainers) {
  EXPECT_TRUE(parse("{}").as_object().empty());
  EXPECT_TRUE(parse("[ ]").as_array().empty());
  EXPECT_TRUE(parse("[[], {}]").as_array()[1].is_object());
}

TEST(Json, NamesTypes) {
  EXPECT_EQ(parse("null").type_name(), "null");
  EXPECT_EQ(parse("true").type_name(), "bool");
  EXPECT_EQ(parse("1").type_name(), "number");
  EXPECT_EQ(parse("\"s\"").type_name(), "string");
  EXPECT_EQ(parse("[]").type_name(), "array");
  EXPECT_EQ(parse("{}").type_name(), "object");
}

TEST(Json, AccessorsRejectOtherTypes) {
  expect_invalid_argument([] { parse("\"s\"").as_bool(); }, "is a string, not a bool");
  expect_invalid_argument([] { parse("true").as_number(); }, "is a bool, not a number");
  expect_invalid_argument([] { parse("[]").as_string(); }, "is an array, not a string");
  expect_invalid_argument([] { parse("{}").as_array(); }, "is an object, not an array");
  expect_invalid_argument([] { parse("null").as_object(); }, "is null, not an object");
  expect_invalid_argument([] { parse("\"7\"").as_int(); }, "is a string, not an integer");
}

TEST(Json, DecodesEscapes) {
  EXPECT_EQ(parse(R"("a\"b\\c\/d\be\ff\ng\rh\ti")").as_string(), "a\"b\\c/d\be\ff\ng\rh\ti");
  EXPECT_EQ(parse(R"("\u0041\u00e9\u20AC")").as_string(), "A\xc3\xa9\xe2\x82\xac");  // A é €
  EXPECT_EQ(parse(R"("\u0000")").as_string(), std::string(1, '\0'));
  EXPECT_EQ(parse(R"("\u007f\u0080\u07ff\u0800\uffff")").as_string(),
            "\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf");
}

TEST(Json, JoinsSurrogatePairs) {
  EXPECT_EQ(parse(R"("\ud83d\ude00")").as_string(), "\xf0\x9f\x98\x80");  // U+1F600
  EXPECT_EQ(parse(R"("\uD800\uDC00")").as_string(), "\xf0\x90\x80\x80");  // U+10000
  EXPECT_EQ(parse(R"("\uDBFF\uDFFF")").as_string(), "\xf4\x8f\xbf\xbf");  // U+10FFFF
}

TEST(Json, RejectsLoneSurrogates) {
  expect_parse_error(R"("\ud83d")", "low surrogate after the high surrogate \\uD83D");
  expect_parse_error(R"("\ud83dx")", "at byte 7: expected a \\uDC00-\\uDFFF low surrogate");
  expect_parse_error(R"("\ud83d\u0041")", "not \\u0041");
  expect_parse_error(R"("ab\ude00")", "at byte 3: lone low surrogate \\uDE00");
}

TEST(Json, RejectsBadEscapes) {
  expect_parse_error(R"("a\x")", "at byte 2: expected an escape character");
  expect_parse_error(R"("\u12")", "at byte 5: expected 4 hex digits after \\u");
  expect_parse_error(R"("\u12g4")", "at byte 5: expected 4 hex digits");
  expect_parse_error("\"abc", "at byte 0: string is not closed");
  expect_parse_error("\"a\nb\"", "at byte 2: control character 0x0a in a string must be escaped");
  expect_parse_error(std::string("\"a\0b\"", 5), "control character 0x00");
}

TEST(Json, KeepsUtf8AndRejectsInvalidUtf8) {
  EXPECT_EQ(parse("\"h\xc3\xa9 \xf0\x9f\x98\x80\"").as_string(), "h\xc3\xa9 \xf0\x9f\x98\x80");
  expect_parse_error("\"\xff\"", "at byte 1: invalid UTF-8 lead byte 0xff");
  expect_parse_error("\"\xc0\xaf\"", "invalid UTF-8 lead byte 0xc0");           // overlong '/'
  expect_parse_error("\"\xe0\x80\xaf\"", "at byte 2: invalid UTF-8 sequence");  // overlong
  expect_parse_error("\"\xed\xa0\x80\"", "at byte 2: invalid UTF-8 sequence");  // a surrogate
  expect_parse_error("\"\xf4\x90\x80\x80\"", "invalid UTF-8 sequence");         // > U+10FFFF
  expect_parse_error("\"\xc3\"", "at byte 2: invalid UTF-8 sequence");          // truncated
  expect_parse_error("\xc3\xa9", "at byte 0: expected a value");                // outside a string
}

TEST(Json, ParsesIntegersExactly) {
  const Json zero = parse("0");
  EXPECT_TRUE(zero.is_int());
  EXPECT_EQ(zero.as_int(), 0);
  EXPECT_EQ(parse("-0").as_int(), 0);
  EXPECT_EQ(parse("-17").as_int(), -17);
  EXPECT_EQ(parse("50257").as_int(), 50257);
  EXPECT_EQ(parse("9223372036854775807").as_int(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse("-9223372036854775808").as_int(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(parse("9007199254740993").as_int(), 9007199254740993);  // not a double exactly
  EXPECT_EQ(parse("123").as_number(), 123.0);
}

TEST(Json, TakesLargerIntegersAsDoubles) {
  const Json big = parse("9223372036854775808");
  EXPECT_TRUE(big.is_number());
  EXPECT_FALSE(big.is_int());
  EXPECT_EQ(big.as_number(), 9223372036854775808.0);
  EXPECT_FALSE(parse("-9223372036854775809").is_int());
  EXPECT_EQ(parse("-9223372036854775809").as_number(), -9223372036854775808.0);
  EXPECT_EQ(parse("100000000000000000000000").as_number(), 1e23);
  expect_invalid_argument([] { parse("9223372036854775808").as_int(); },
                          "JSON number 9.2233720368547758e+18 is not an integer");
}

TEST(Json, ParsesFractionsAndExponents) {
  EXPECT_EQ(parse("1.5").as_number(), 1.5);
  EXPECT_EQ(parse("-0.25").as_number(), -0.25);
  EXPECT_EQ(parse("1e3").as_number(), 1000.0);
  EXPECT_EQ(parse("1E+3").as_number(), 1000.0);
  EXPECT_EQ(parse("2.5e-3").as_number(), 0.0025);
  EXPECT_EQ(parse("1e-05").as_number(), 1e-5);  // GPT-2's layer_norm_epsilon
  EXPECT_EQ(parse("0.1").as_number(), 0.1);
  EXPECT_EQ(parse("1.7976931348623157e308").as_number(), std::numeric_limits<double>::max());
  EXPECT_EQ(parse("4.9e-324").as_number(), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(parse("1e-400").as_number(), 0.0);  // rounds to zero
  EXPECT_TRUE(std::signbit(parse("-1e-400").as_number()));
  // Written with a fraction or an exponent: a number, but not an integer.
  EXPECT_FALSE(parse("2.0").is_int());
  EXPECT_FALSE(parse("1e3").is_int());
  expect_invalid_argument([] { parse("2.5").as_int(); }, "JSON number 2.5 is not an integer");
  expect_invalid_argument([] { parse("2.0").as_int(); }, "JSON number 2 is not an integer");
}

TEST(Json, RejectsMalformedNumbers) {
  expect_parse_error("1e400", "at byte 0: number 1e400 is out of the range of a double");
  expect_parse_error("[-1e400]", "at byte 1: number -1e400 is out of the range");
  expect_parse_error("0.000001e320", "number 0.000001e320 is out of the range");
  EXPECT_EQ(parse("0.000001e310").as_number(), 1e304);
  expect_parse_error("-", "at byte 1: expected a digit after '-'");
  expect_parse_error("-a", "at byte 1: expected a digit after '-'");
  expect_parse_error("01", "at byte 1: leading zeros are not allowed");
  expect_parse_error("-012", "at byte 2: leading zeros are not allowed");
  expect_parse_error("1.", "at byte 2: expected a digit after the decimal point");
  expect_parse_error(".5", "at byte 0: expected a value");
  expect_parse_error("1e", "at byte 2: expected a digit in the exponent");
  expect_parse_error("1e+", "at byte 3: expected a digit in the exponent");
  expect_parse_error("+1", "at byte 0: expected a value");
  expect_parse_error("NaN", "at byte 0: expected a value");
  expect_parse_error("Infinity", "at byte 0: expected a value");
  expect_parse_error("0x10", "at byte 1: expected the end of the text after the value");
}

TEST(Json, RejectsTrailingGarbage) {
  expect_parse_error("{} x", "at byte 3: expected the end of the text after the value");
  expect_parse_error("1 2", "at byte 2: expected the end of the text");
  expect_parse_error("[1]]", "at byte 3: expected the end of the text");
  expect_parse_error("truex", "at byte 4: expected the end of the text");
}

TEST(Json, RejectsEmptyAndTruncatedText) {
  expect_parse_error("", "test.json: invalid JSON at byte 0: expected a value, found the end");
  expect_parse_error("   ", "at byte 3: expected a value, found the end of the text");
  expect_parse_error("[1,", "at byte 3: expected a value, found the end of the text");
  expect_parse_error("{\"a\":1", "at byte 6: expected ',' or '}' after an object member");
  expect_parse_error("tru", "at byte 0: expected 'true'");
  expect_parse_error("nul", "at byte 0: expected 'null'");
  expect_parse_error("fals", "at byte 0: expected 'false'");
}

TEST(Json, NamesTheSourceTheOffsetAndWhatWasExpected) {
  expect_invalid_argument(
      [] { parse_json(R"({"n_embd": 768 "n_head": 12})", "model/config.json"); },
      "model/config.json: invalid JSON at byte 15: expected ',' or '}' after an object member");
  expect_parse_error("[1 2]", "at byte 3: expected ',' or ']' after an array element");
  expect_parse_error("{\"a\" 1}", "at byte 5: expected ':' after an object key");
  expect_parse_error("{1: 2}", "at byte 1: expected a string key or '}'");
  expect_parse_error("{\"a\": 1,}", "at byte 8: expected a string key after ','");
  expect_parse_error("[1,]", "at byte 3: expected a value");
  expect_parse_error("{'a': 1}", "at byte 1: expected a string key");
  expect_parse_error("[1, /* c */ 2]", "at byte 4: expected a value");
}

TEST(Json, RejectsDuplicateKeys) {
  expect_parse_error(R"({"a": 1, "b": 2, "a": 3})", "at byte 17: duplicate key \"a\"");
  expect_parse_error(R"({"x": {"k": 1, "k": 1}})", "at byte 15: duplicate key \"k\"");
  // Keys equal after unescaping are the same key.
  expect_parse_error(R"({"ab": 1, "a\u0062": 2})", "duplicate key \"ab\"");
  // The same key in different objects is fine.
  EXPECT_EQ(parse(R"([{"a": 1}, {"a": 2}])").as_array()[1].find("a")->as_int(), 2);
}

TEST(Json, LimitsNestingTo256) {
  const std::string ok = std::string(256, '[') + std::string(256, ']');
  const Json* v = nullptr;
  const Json j = parse(ok);
  v = &j;
  int depth = 0;
  while (v->is_array() && !v->as_array().empty()) {
    v = &v->as_array()[0];
    ++depth;
  }
  EXPECT_EQ(depth, 255);
  expect_parse_error(std::string(257, '[') + std::string(257, ']'),
                     "at byte 256: nesting deeper than 256 arrays and objects");
  std::string objects;
  for (int i = 0; i < 257; ++i) objects += "{\"a\":";
  expect_parse_error(objects + "1" + std::string(257, '}'), "nesting deeper than 256");
  // Far deeper input fails the same way instead of exhausting the stack.
  expect_parse_error(std::string(100000, '['), "at byte 256: nesting deeper than 256");
}

// A bound on the values: a text of tiny values ("[0,0,...]") made a tree of ~100 bytes a value,
// 50x the text (a 99 MB safetensors header took 7 GB). Every value counts, containers included.
TEST(Json, RefusesMoreValuesThanItsLimit) {
  EXPECT_EQ(parse_json("[0,0]", "t", 3).as_array().size(), 2u);  // the array and its two zeros
  expect_invalid_argument([] { parse_json("[0,0,0]", "t", 3); },
                          "t: invalid JSON at byte 5: more than 3 values");
  expect_invalid_argument([] { parse_json(R"({"a":[1,{"b":2}]})", "t", 4); }, "more than 4");
  EXPECT_NO_THROW(parse_json(R"({"a":[1,{"b":2}]})", "t", 5));
  std::string zeros = "[0";  // 2^22 zeros and their array: one past the default
  for (int i = 1; i < (1 << 22); ++i) zeros += ",0";
  expect_invalid_argument([&] { parse(zeros + "]"); }, "more than 4194304 values");
}

TEST(Json, QuotesStrings) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(json_quote("h\xc3\xa9"), "\"h\xc3\xa9\"");
  // What json_quote writes parses back to the same bytes.
  std::string all;
  for (int c = 1; c < 0x80; ++c) all += static_cast<char>(c);
  all += std::string(1, '\0') + "\xe2\x82\xac";
  EXPECT_EQ(parse(json_quote(all)).as_string(), all);
}

TEST(Json, BuildsValues) {
  EXPECT_EQ(Json::integer(-3).as_int(), -3);
  EXPECT_FALSE(Json::number(3.0).is_int());
  EXPECT_EQ(Json::string("s").as_string(), "s");
  const Json o = Json::object({{"k", Json::array({Json::boolean(true), Json()})}});
  EXPECT_TRUE(o.find("k")->as_array()[1].is_null());
}

}  // namespace
}  // namespace gpuattn::engine
