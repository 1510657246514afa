// GPT-2's byte-level BPE tokenizer (gpuattn/tokenizer.h): the pre-tokenizer against splits the
// `regex` module gives for GPT-2's pattern, merges by rank on a small vocabulary, lossless round
// trips on random text, and every bad input's error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "gpuattn/tokenizer.h"

namespace gpuattn {
namespace {

using gpuattn::testing::expect_invalid_argument;

// UTF-8 of code point c.
std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

// The symbol GPT-2 gives byte b: printable Latin-1 bytes stand for themselves, the other 68
// bytes for U+0100 onward in byte order (written here from the rule, not from the library).
std::string byte_symbol(int b) {
  auto kept = [](int x) {
    return (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE;
  };
  if (kept(b)) return utf8(static_cast<char32_t>(b));
  int n = 0;
  for (int x = 0; x < b; ++x) n += !kept(x);
  return utf8(static_cast<char32_t>(0x100 + n));
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// Ids 0..255: the byte symbols in byte order; then one id per merge, in rank order.
struct SmallVocab {
  std::vector<std::pair<std::string, std::string>> merges;
  std::string vocab_json() const {
    std::string j = "{";
    int id = 0;
    for (int b = 0; b < 256; ++b)
      j += (b ? "," : "") + json_string(byte_symbol(b)) + ":" + std::to_string(id++);
    for (const auto& [a, b] : merges) j += "," + json_string(a + b) + ":" + std::to_string(id++);
    return j + "}";
  }
  std::string merges_txt() const {
    std::string m = "#version: 0.2\n";
    for (const auto& [a, b] : merges) m += a + " " + b + "\n";
    return m;
  }
  Gpt2Tokenizer tokenizer() const {
    return Gpt2Tokenizer::from_strings(vocab_json(), merges_txt(), "small");
  }
};

const std::string kG = byte_symbol(' ');  // "Ġ"

SmallVocab small() {
  return SmallVocab{{{kG, "t"},         // 256: " t"
                     {"h", "e"},        // 257: "he"
                     {kG + "t", "he"},  // 258: " the"
                     {"a", "a"},        // 259: "aa"
                     {"aa", "aa"},      // 260: "aaaa"
                     {"i", "n"},        // 261: "in"
                     {"in", "g"}}};     // 262: "ing"
}

// The splits Python's `regex` module gives for GPT-2's pattern on each text (regex.findall).
TEST(Gpt2Tokenizer, PretokenizesAsGpt2sPattern) {
  struct Case {
    std::string text;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"Hello world", {"Hello", " world"}},
      {"I'm here, they'll've gone", {"I", "'m", " here", ",", " they", "'ll", "'ve", " gone"}},
      {"  leading", {" ", " leading"}},
      {"trailing  ", {"trailing", "  "}},
      {"a  b", {"a", " ", " b"}},
      {"a\n\nb", {"a", "\n", "\n", "b"}},
      {"x \t y", {"x", " \t", " y"}},
      {"3.14 is 42abc", {"3", ".", "14", " is", " 42", "abc"}},
      {"na\u00efve caf\u00e9", {"na\u00efve", " caf\u00e9"}},
      {"e\u0301t\u00e9", {"e", "\u0301", "t\u00e9"}},  // a combining mark is not a letter
      {"\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
       {"\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8"}},
      {"emoji \U0001F600\U0001F600 ok", {"emoji", " \U0001F600\U0001F600", " ok"}},
      {"''s 'S 'x", {"''", "s", " '", "S", " '", "x"}},
      {"\u00a0nbsp", {"\u00a0", "nbsp"}},
      {"end \n", {"end", " \n"}},
      {" ", {" "}},
      {"\x1c\x1f", {"\x1c\x1f"}},  // not \s in the regex module (they are in Python's re)
      {"\u2163\u00bd 12\u00b2", {"\u2163\u00bd", " 12\u00b2"}},
      {"a' b", {"a", "'", " b"}},
      {"", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(Gpt2Tokenizer::pretokenize(c.text), c.want);
  }
}

TEST(Gpt2Tokenizer, MergesTheLowestRankedPairFirstEveryOccurrence) {
  const Gpt2Tokenizer tok = small().tokenizer();
  EXPECT_EQ(tok.vocab_size(), 263);
  const int t = 't', h = 'h';  // the printable ASCII bytes are their own ids here
  // "the": only h-e merges; " the": " t" (rank 0), then h-e, then " t"+"he".
  EXPECT_EQ(tok.encode("the the"), (std::vector<std::int32_t>{t, 257, 258}));
  EXPECT_EQ(tok.encode(" th"), (std::vector<std::int32_t>{256, h}));
  // Every occurrence of the best pair, left to right, without overlap; then the next rank.
  EXPECT_EQ(tok.encode("aaa"), (std::vector<std::int32_t>{259, 'a'}));
  EXPECT_EQ(tok.encode("aaaa"), (std::vector<std::int32_t>{260}));
  EXPECT_EQ(tok.encode("aaaaa"), (std::vector<std::int32_t>{260, 'a'}));
  EXPECT_EQ(tok.encode("singing"), (std::vector<std::int32_t>{'s', 262, 262}));
  EXPECT_EQ(tok.decode({'s', 262, 262, 258}), "singing the");
  EXPECT_TRUE(tok.encode("").empty());
  EXPECT_EQ(tok.decode({}), "");
}

// Random text from many scripts and every kind of space: the pre-tokens put back together are
// the text, and decode(encode(text)) is the text, byte for byte.
TEST(Gpt2Tokenizer, RoundTripsRandomText) {
  const Gpt2Tokenizer tok = small().tokenizer();
  const std::vector<std::pair<char32_t, char32_t>> pools = {
      {0x20, 0x7E},     {0x9, 0xD},         {0x1C, 0x1F},     {0xA0, 0xFF},
      {0x300, 0x36F},   {0x391, 0x3C9},     {0x4E00, 0x4E80}, {0x3040, 0x30FF},
      {0x2000, 0x200A}, {0x1F600, 0x1F64F}, {0x660, 0x669},   {0x2160, 0x2188}};
  std::mt19937 rng(20261129);
  for (int trial = 0; trial < 400; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const auto& [lo, hi] = pools[rng() % pools.size()];
      text += utf8(lo + static_cast<char32_t>(rng() % (hi - lo + 1)));
      if (rng() % 5 == 0) text += "aa'sthe ing"[rng() % 11];
    }
    SCOPED_TRACE(::testing::PrintToString(text));
    std::string joined;
    for (const std::string& piece : Gpt2Tokenizer::pretokenize(text)) {
      ASSERT_FALSE(piece.empty());
      joined += piece;
    }
    ASSERT_EQ(joined, text);
    const std::vector<std::int32_t> ids = tok.encode(text);
    ASSERT_EQ(tok.decode(ids), text);
  }
}

// A merge can make a pair of lower rank than its own ("ab a" ranked before "a b"). Every
// occurrence of the lowest-ranked pair is merged in one pass before the pairs that pass made are
// looked at: "abab" is "ab" "ab", not "aba" "b".
TEST(Gpt2Tokenizer, OnePassPerRank) {
  const Gpt2Tokenizer tok = SmallVocab{{{"ab", "a"}, {"a", "b"}}}.tokenizer();  // 256, 257
  EXPECT_EQ(tok.encode("abab"), (std::vector<std::int32_t>{257, 257}));
  EXPECT_EQ(tok.encode("aba"), (std::vector<std::int32_t>{256}));
  EXPECT_EQ(tok.encode("ababa"), (std::vector<std::int32_t>{257, 256}));
}

// Long pre-tokens (a run of one letter, a run of digits) merge in O(n log n): 200,000 characters
// each, which a rescan per merge (O(n^2)) would take minutes over.
TEST(Gpt2Tokenizer, LongPreTokens) {
  const Gpt2Tokenizer tok = small().tokenizer();
  const std::string a(200000, 'a'), digits(200000, '7');
  const std::vector<std::int32_t> ids = tok.encode(a);
  ASSERT_EQ(ids.size(), 50000u);  // "aaaa" tokens
  for (const std::int32_t id : ids) ASSERT_EQ(id, 260);
  EXPECT_EQ(tok.encode(a + "a").back(), 'a');
  EXPECT_EQ(tok.decode(tok.encode(digits + " " + a)), digits + " " + a);
}

TEST(Gpt2Tokenizer, InvalidUtf8NamesTheByte) {
  const Gpt2Tokenizer tok = small().tokenizer();
  const auto bad = [&](const std::string& text, const std::string& words) {
    SCOPED_TRACE(::testing::PrintToString(text));
    expect_invalid_argument([&] { tok.encode(text); }, words);
    expect_invalid_argument([&] { Gpt2Tokenizer::pretokenize(text); }, words);
  };
  bad("ok\xff", "invalid UTF-8 at byte 2 (0xff): not a lead byte");
  bad("a\xe2\x82", "invalid UTF-8 at byte 1 (0xe2): a 3-byte sequence cut by the end of the text");
  bad("\xe2"
      "A",
      "invalid UTF-8 at byte 1 (0x41): not a continuation byte");
  bad("\xc3(", "invalid UTF-8 at byte 1 (0x28): not a continuation byte");
  bad("xy\xc0\xaf", "invalid UTF-8 at byte 2: an overlong form of U+002F");
  bad("\xed\xa0\x80", "invalid UTF-8 at byte 0: U+D800 is a surrogate");
  bad("\xf4\x90\x80\x80", "invalid UTF-8 at byte 0: U+110000 is past U+10FFFF");
}

TEST(Gpt2Tokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  const Gpt2Tokenizer tok = small().tokenizer();
  expect_invalid_argument(
      [&] {
        tok.decode({'a', 263});
      },
      "token 1 is id 263, which is not in the vocabulary (ids 0..262)");
  expect_invalid_argument([&] { tok.decode({-1}); }, "token 0 is id -1");
  // A hole in the ids is not a token either.
  std::string vocab = small().vocab_json();
  vocab.back() = ',';
  vocab += "\"zz\":300}";
  const Gpt2Tokenizer holes = Gpt2Tokenizer::from_strings(vocab, small().merges_txt(), "holes");
  EXPECT_EQ(holes.vocab_size(), 301);
  EXPECT_EQ(holes.decode({300}), "zz");
  expect_invalid_argument([&] { holes.decode({299}); }, "id 299, which is not in the vocabulary");
}

TEST(Gpt2Tokenizer, BadFilesNameTheFileAndTheProblem) {
  const SmallVocab s = small();
  const std::string merges = s.merges_txt();
  const auto bad = [](const std::string& vocab, const std::string& merges_txt,
                      const std::string& words) {
    SCOPED_TRACE(vocab.substr(0, 40) + " | " + merges_txt);
    expect_invalid_argument([&] { Gpt2Tokenizer::from_strings(vocab, merges_txt, "m"); }, words);
  };
  bad("[1, 2]", merges, "m/vocab.json: expected an object of token -> id, not a array");
  bad("{\"a\": 1.5}", merges,
      "m/vocab.json: the id of \"a\" must be an integer in [0, 1026) (twice the 1 entries, plus "
      "1024), not 1.5");
  bad("{\"a\": -2}", merges,
      "must be an integer in [0, 1026) (twice the 1 entries, plus 1024), not -2");
  bad("{\"a\": 5000}", merges, "the id of \"a\" must be an integer in [0, 1026)");
  bad("{\"a\": \"7\"}", merges,
      "must be an integer in [0, 1026) (twice the 1 entries, plus 1024), not string");
  bad("{\"a\": 0, \"b\": 0}", merges, "id 0 is given to both \"a\" and \"b\"");
  bad("{\"a\": 0}", merges, "the symbol of byte 0x00");
  bad("{\"a\": ", merges, "m/vocab.json: invalid JSON");
  const std::string vocab = s.vocab_json();
  bad(vocab, "#version: 0.2\na b c\n",
      "m/merges.txt: line 2 \"a b c\" is not two symbols separated by one space");
  bad(vocab, "ab\n", "m/merges.txt: line 1 \"ab\" is not two symbols");
  bad(vocab, " b\n", "line 1 \" b\" is not two symbols");
  bad(vocab, "h e\na a\nh e\n", "m/merges.txt: line 3 \"h e\" repeats an earlier pair");
  // As Hugging Face's tokenizers: both symbols and their merge must have ids.
  bad(vocab, "x y\n", "m/merges.txt: line 1 \"x y\": the merge \"xy\" has no id");
  bad(vocab, "h zz\n", "m/merges.txt: line 1 \"h zz\": \"zz\" has no id");
  // "#version" lines anywhere, a byte order mark, CRLF line ends and no last newline are fine.
  const Gpt2Tokenizer crlf = Gpt2Tokenizer::from_strings(
      vocab, "\xEF\xBB\xBF#version: 0.2\r\nh e\r\n#version: 0.2\r\na a", "m");
  EXPECT_EQ(crlf.encode("the aa"), (std::vector<std::int32_t>{'t', 257, ' ', 259}));
}

// <|endoftext|>, where the vocabulary has it, is one token wherever the text holds it; decode
// gives its characters back. decode_text reads a character cut between tokens as U+FFFD.
TEST(Gpt2Tokenizer, EndOfTextAndCutCharacters) {
  SmallVocab s = small();
  std::string vocab = s.vocab_json();
  vocab.back() = ',';
  vocab += "\"<|endoftext|>\":263}";
  const Gpt2Tokenizer tok = Gpt2Tokenizer::from_strings(vocab, s.merges_txt(), "eot");
  const std::string text = "aa<|endoftext|> the<|endoftext|><|endoftext|>";
  const std::vector<std::int32_t> ids = tok.encode(text);
  EXPECT_EQ(ids, (std::vector<std::int32_t>{259, 263, 258, 263, 263}));
  EXPECT_EQ(tok.decode(ids), text);
  // Without the token in the vocabulary it is text like any other.
  // (pre-tokens "<|", "endoftext", "|>": 2 + 9 + 2 byte tokens, no merge applies)
  EXPECT_EQ(small().tokenizer().encode("<|endoftext|>").size(), 13u);
  // U+00E9 is bytes 0xC3 0xA9, ids 195 and 169 here.
  EXPECT_EQ(tok.decode({'a', 195}), "a\xc3");
  EXPECT_EQ(tok.decode_text({'a', 195}), "a\xEF\xBF\xBD");
  EXPECT_EQ(tok.decode_text({195, 169, 169, 'x'}), "\xc3\xa9\xEF\xBF\xBDx");
  EXPECT_EQ(tok.decode_text({0xF0, 0x9F, 'x'}), "\xEF\xBF\xBDx");
  // One U+FFFD a maximal ill-formed subpart, as Python's errors="replace" (byte ids = bytes).
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(tok.decode_text({0x80, 0x80}), r + r);
  EXPECT_EQ(tok.decode_text({0xC0, 0x80}), r + r);            // C0 starts nothing (overlong)
  EXPECT_EQ(tok.decode_text({0xED, 0xA0, 0x80}), r + r + r);  // a surrogate's bytes
  EXPECT_EQ(tok.decode_text({0xF4, 0x90, 0x80, 0x80}), r + r + r + r);           // past U+10FFFF
  EXPECT_EQ(tok.decode_text({0xF0, 0x9F, 0x98, 'x', 0xE2, 0x82}), r + "x" + r);  // cut ones
  EXPECT_EQ(tok.decode_text({0xFF, 'a', 0xC3}), r + "a" + r);
}

TEST(Gpt2Tokenizer, LoadsADirectory) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpuattn-tok-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const SmallVocab s = small();
  std::ofstream(dir / "vocab.json") << s.vocab_json();
  expect_invalid_argument([&] { Gpt2Tokenizer::load(dir.string()); },
                          (dir / "merges.txt").string() + ": cannot open");
  std::ofstream(dir / "merges.txt") << s.merges_txt();
  const Gpt2Tokenizer tok = Gpt2Tokenizer::load(dir.string());
  EXPECT_EQ(tok.encode("aaaa the"), (std::vector<std::int32_t>{260, 258}));
  std::filesystem::remove_all(dir);
  expect_invalid_argument([&] { Gpt2Tokenizer::load(dir.string()); },
                          (dir / "vocab.json").string() + ": cannot open");
}

}  // namespace
}  // namespace gpuattn
