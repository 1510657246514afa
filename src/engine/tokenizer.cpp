// GPT-2's byte-level BPE (include/gpuattn/tokenizer.h): the pre-tokenizer pattern as a scanner
// over code points, the byte-to-symbol table, and merges by rank.
#include "gpuattn/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>

#include "engine/files.h"
#include "engine/json.h"
#include "engine/utf8.h"
#include "gpuattn/types.h"

namespace gpuattn {
namespace {

struct CodeRange {
  char32_t lo, hi;
};
#include "engine/unicode_classes.inc"

template <std::size_t N>
bool in(const CodeRange (&table)[N], char32_t c) {
  const CodeRange* end = table + N;
  const CodeRange* r =
      std::upper_bound(table, end, c, [](char32_t v, const CodeRange& x) { return v < x.lo; });
  return r != table && c <= (r - 1)->hi;
}
bool is_letter(char32_t c) {
  return in(kLetters, c);
}
bool is_number(char32_t c) {
  return in(kNumbers, c);
}
bool is_space(char32_t c) {
  return in(kSpaces, c);
}
bool is_other(char32_t c) {
  return !is_space(c) && !is_letter(c) && !is_number(c);
}

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, "gpuattn tokenizer: " + msg);
}

std::string hex_byte(unsigned char b) {
  static const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

std::string hex_cp(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

// The UTF-8 sequence at s[i]: its length and code point, or (0, what is wrong) when it is not
// valid (a bad lead byte, a missing continuation byte, a cut by the end, an overlong form, a
// surrogate, a value past U+10FFFF); `bad_at` is then the offending byte's offset.
struct Utf8Step {
  int len = 0;
  char32_t cp = 0;
  std::size_t bad_at = 0;
  std::string why;
};
Utf8Step utf8_step(std::string_view s, std::size_t i) {
  Utf8Step r;
  const auto b0 = static_cast<unsigned char>(s[i]);
  int len = 0;
  char32_t c = 0, min = 0;
  if (b0 < 0x80) {
    r.len = 1, r.cp = b0;
    return r;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, c = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, c = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, c = b0 & 0x07, min = 0x10000;
  } else {
    r.bad_at = i;
    r.why = " (" + hex_byte(b0) + "): not a lead byte";
    return r;
  }
  for (int k = 1; k < len; ++k) {
    if (i + k >= s.size()) {
      r.bad_at = i;
      r.why = " (" + hex_byte(b0) + "): a " + std::to_string(len) +
              "-byte sequence cut by the end of the text";
      return r;
    }
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      r.bad_at = i + k;
      r.why = " (" + hex_byte(b) + "): not a continuation byte";
      return r;
    }
    c = (c << 6) | (b & 0x3F);
  }
  if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
    r.bad_at = i;
    r.why = c < min        ? ": an overlong form of " + hex_cp(c)
            : c > 0x10FFFF ? ": " + hex_cp(c) + " is past U+10FFFF"
                           : ": " + hex_cp(c) + " is a surrogate";
    return r;
  }
  r.len = len, r.cp = c;
  return r;
}

// The text's code points and the byte offset where each starts (one more entry: the end).
// Anything that is not valid UTF-8 is an error naming the byte.
void decode_utf8(std::string_view s, std::vector<char32_t>& cps, std::vector<std::size_t>& at) {
  cps.clear();
  at.clear();
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Step st = utf8_step(s, i);
    if (st.len == 0) invalid("invalid UTF-8 at byte " + std::to_string(st.bad_at) + st.why);
    cps.push_back(st.cp);
    at.push_back(i);
    i += static_cast<std::size_t>(st.len);
  }
  at.push_back(s.size());
}

// The pre-tokens of cps as [begin, end) code point spans. At each position the pattern's
// alternatives are tried in order and the first that matches is taken:
//   's|'t|'re|'ve|'m|'ll|'d   an apostrophe and one of these suffixes (case as written)
//   ' ?\p{L}+'                 an optional space, then a run of letters
//   ' ?\p{N}+'                 an optional space, then a run of numbers
//   ' ?[^\s\p{L}\p{N}]+'      an optional space, then a run of anything else
//   '\s+(?!\S)'                whitespace not followed by a non-space: a run that ends the text,
//                              or a run of two or more but its last (which then starts the next)
//   '\s+'                      the one whitespace character left
std::vector<std::pair<std::size_t, std::size_t>> split(const std::vector<char32_t>& cps) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  const std::size_t n = cps.size();
  auto run = [&](std::size_t i, bool (*cls)(char32_t)) {
    while (i < n && cls(cps[i])) ++i;
    return i;
  };
  std::size_t i = 0;
  while (i < n) {
    const char32_t c = cps[i];
    std::size_t end = 0;
    if (c == U'\'') {
      const char32_t a = i + 1 < n ? cps[i + 1] : 0, b = i + 2 < n ? cps[i + 2] : 0;
      if (a == U's' || a == U't' || a == U'm' || a == U'd') {
        end = i + 2;
      } else if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) {
        end = i + 3;
      }
    }
    if (end == 0) {
      // An optional leading space, then a run of one class: the first class that the character
      // after the space (or this one) belongs to.
      const std::size_t j = (c == U' ' && i + 1 < n && !is_space(cps[i + 1])) ? i + 1 : i;
      if (is_letter(cps[j])) {
        end = run(j, is_letter);
      } else if (is_number(cps[j])) {
        end = run(j, is_number);
      } else if (is_other(cps[j])) {
        end = run(j, is_other);
      }
    }
    if (end == 0) {  // whitespace (a space before another space lands here too)
      const std::size_t stop = run(i, is_space);
      end = (stop == n || stop - i == 1) ? stop : stop - 1;
    }
    spans.emplace_back(i, end);
    i = end;
  }
  return spans;
}

// GPT-2's byte-to-symbol table: the printable Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF)
// stand for themselves, every other byte for U+0100 onward in byte order, so that no symbol is a
// space or a control character.
struct ByteSymbols {
  std::string of[256];                        // UTF-8 of byte b's symbol
  std::unordered_map<char32_t, int> byte_of;  // symbol code point -> byte
  ByteSymbols() {
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool kept = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cp = kept ? static_cast<char32_t>(b) : next++;
      byte_of[cp] = b;
      if (cp < 0x80) {
        of[b] = std::string(1, static_cast<char>(cp));
      } else {  // all below U+0800: two bytes
        of[b] = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
      }
    }
  }
};
const ByteSymbols& byte_symbols() {
  static const ByteSymbols t;
  return t;
}

std::string shown(std::string_view s) {
  return engine::json_quote(s);
}

// GPT-2's one special token: written in the text, it is that token, not its characters (as
// Hugging Face's GPT-2 tokenizers take it).
constexpr std::string_view kEndOfText = "<|endoftext|>";

}  // namespace

struct Gpt2Tokenizer::Impl {
  struct Merge {
    int rank;
    std::int32_t id;  // of the merged symbol
  };
  static std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }

  std::int32_t end_of_text = -1;   // the id of kEndOfText, where the vocabulary has it
  std::int32_t byte_id[256] = {};  // the id of each byte's symbol
  std::unordered_map<std::string, std::int32_t> id_of;
  std::vector<std::string> symbol_of;  // by id; empty where no token has the id
  std::vector<bool> has_id;
  std::unordered_map<std::uint64_t, Merge> merge_of;  // (first id, second id) -> rank, merge

  // Merges the symbols (ids) of one pre-token: the adjacent pair of lowest rank, every
  // occurrence of it left to right (an occurrence overlapping one just merged is skipped), until
  // no pair has a rank. A heap of (rank, position) candidates over a linked list: O(n log n) in
  // the pre-token's length. A rank belongs to one pair, and merging it never makes another
  // occurrence of it, so the candidates of the lowest rank are taken as one batch, left to right;
  // the pairs the batch makes join the heap after it, as a new scan would find them.
  void merge(std::vector<std::int32_t>& word) const {
    const int n = static_cast<int>(word.size());
    if (n < 2) return;
    std::vector<int> prev(static_cast<std::size_t>(n)), next(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
      prev[k] = k - 1;
      next[k] = k + 1 < n ? k + 1 : -1;
    }
    struct Candidate {
      int rank, pos;
      std::int32_t left, right, merged;
      bool operator>(const Candidate& o) const {
        return rank != o.rank ? rank > o.rank : pos > o.pos;
      }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    std::vector<Candidate> made;
    auto candidate = [&](int k, std::vector<Candidate>* into) {
      const int m = next[k];
      if (m < 0) return;
      const auto it = merge_of.find(pair_key(word[k], word[m]));
      if (it == merge_of.end()) return;
      const Candidate c{it->second.rank, k, word[k], word[m], it->second.id};
      if (into) {
        into->push_back(c);
      } else {
        heap.push(c);
      }
    };
    for (int k = 0; k + 1 < n; ++k) candidate(k, nullptr);
    while (!heap.empty()) {
      const int rank = heap.top().rank;
      made.clear();
      while (!heap.empty() && heap.top().rank == rank) {
        const Candidate c = heap.top();
        heap.pop();
        const int k = c.pos, m = next[k];
        if (word[k] != c.left || m < 0 || word[m] != c.right) continue;  // overlapped or stale
        word[k] = c.merged;
        word[m] = -1;
        next[k] = next[m];
        if (next[m] >= 0) prev[next[m]] = k;
        if (prev[k] >= 0) candidate(prev[k], &made);
        candidate(k, &made);
      }
      for (const Candidate& c : made) heap.push(c);
    }
    int out = 0;
    for (int k = 0; k >= 0; k = next[k]) word[out++] = word[k];  // position 0 is never merged away
    word.resize(static_cast<std::size_t>(out));
  }
};

Gpt2Tokenizer::Gpt2Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gpt2Tokenizer::Gpt2Tokenizer(Gpt2Tokenizer&&) noexcept = default;
Gpt2Tokenizer& Gpt2Tokenizer::operator=(Gpt2Tokenizer&&) noexcept = default;
Gpt2Tokenizer::~Gpt2Tokenizer() = default;

Gpt2Tokenizer Gpt2Tokenizer::load(const std::string& path) {
  const std::string vocab = engine::read_text(path + "/vocab.json");  // first: named first
  const std::string merges = engine::read_text(path + "/merges.txt");
  return from_strings(vocab, merges, path);
}

Gpt2Tokenizer Gpt2Tokenizer::from_strings(std::string_view vocab_json, std::string_view merges_txt,
                                          const std::string& source) {
  auto impl = std::make_unique<Impl>();
  const std::string vocab_name = source + "/vocab.json", merges_name = source + "/merges.txt";
  const engine::Json j = engine::parse_json(vocab_json, vocab_name);
  if (!j.is_object()) {
    invalid(vocab_name + ": expected an object of token -> id, not a " + j.type_name());
  }
  const engine::Json::Object& entries = j.as_object();
  // Ids are dense in a BPE vocabulary (GPT-2's: 0..50256); one far past the entries would size the
  // id table by itself.
  const std::int64_t id_limit = 2 * static_cast<std::int64_t>(entries.size()) + 1024;
  for (const auto& [symbol, value] : entries) {
    if (!value.is_int() || value.as_int() < 0 || value.as_int() >= id_limit) {
      std::string got = value.type_name();
      if (value.is_number()) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", value.as_number());
        got = buf;
      }
      invalid(vocab_name + ": the id of " + shown(symbol) + " must be an integer in [0, " +
              std::to_string(id_limit) + ") (twice the " + std::to_string(entries.size()) +
              " entries, plus 1024), not " + got);
    }
    const auto id = static_cast<std::int32_t>(value.as_int());
    if (static_cast<std::size_t>(id) >= impl->symbol_of.size()) {
      impl->symbol_of.resize(static_cast<std::size_t>(id) + 1);
      impl->has_id.resize(static_cast<std::size_t>(id) + 1, false);
    }
    if (impl->has_id[id]) {
      invalid(vocab_name + ": id " + std::to_string(id) + " is given to both " +
              shown(impl->symbol_of[id]) + " and " + shown(symbol));
    }
    impl->has_id[id] = true;
    impl->symbol_of[id] = symbol;
    impl->id_of.emplace(symbol, id);
  }
  const ByteSymbols& bs = byte_symbols();
  for (int b = 0; b < 256; ++b) {
    const auto it = impl->id_of.find(bs.of[b]);
    if (it == impl->id_of.end()) {
      invalid(vocab_name + ": the symbol of byte " + hex_byte(static_cast<unsigned char>(b)) +
              " (" + shown(bs.of[b]) + ") has no id; every byte needs one");
    }
    impl->byte_id[b] = it->second;
  }
  const auto special = impl->id_of.find(std::string(kEndOfText));
  if (special != impl->id_of.end()) impl->end_of_text = special->second;
  // merges.txt: "#version" lines (Hugging Face writes one first), then one "first second" pair a
  // line, by rank; both symbols and their merge must be in the vocabulary, as Hugging Face's
  // tokenizers requires. A UTF-8 byte order mark is skipped.
  if (merges_txt.substr(0, 3) == "\xEF\xBB\xBF") merges_txt.remove_prefix(3);
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < merges_txt.size()) {
    std::size_t eol = merges_txt.find('\n', pos);
    if (eol == std::string_view::npos) eol = merges_txt.size();
    std::string_view line = merges_txt.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const std::size_t sp = line.find(' ');
    const auto where = [&] {
      return merges_name + ": line " + std::to_string(line_no) + " " + shown(line);
    };
    if (sp == 0 || sp == std::string_view::npos || sp + 1 == line.size() ||
        line.find(' ', sp + 1) != std::string_view::npos) {
      invalid(where() + " is not two symbols separated by one space");
    }
    const std::string first(line.substr(0, sp)), second(line.substr(sp + 1));
    std::int32_t ids[3];
    const std::string* names[3] = {&first, &second, nullptr};
    const std::string both = first + second;
    names[2] = &both;
    for (int k = 0; k < 3; ++k) {
      const auto it = impl->id_of.find(*names[k]);
      if (it == impl->id_of.end()) {
        invalid(where() + ": " + (k == 2 ? "the merge " : "") + shown(*names[k]) + " has no id");
      }
      ids[k] = it->second;
    }
    const int rank = static_cast<int>(impl->merge_of.size());
    if (!impl->merge_of.emplace(Impl::pair_key(ids[0], ids[1]), Impl::Merge{rank, ids[2]}).second) {
      invalid(where() + " repeats an earlier pair");
    }
  }
  return Gpt2Tokenizer(std::move(impl));
}

std::vector<std::string> Gpt2Tokenizer::pretokenize(std::string_view text) {
  std::vector<char32_t> cps;
  std::vector<std::size_t> at;
  decode_utf8(text, cps, at);
  std::vector<std::string> out;
  for (const auto& [b, e] : split(cps)) out.emplace_back(text.substr(at[b], at[e] - at[b]));
  return out;
}

std::vector<std::int32_t> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<char32_t> cps;
  std::vector<std::size_t> at;
  decode_utf8(text, cps, at);  // the whole text first: errors count bytes from its start
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> word;
  auto plain = [&](std::string_view part) {
    decode_utf8(part, cps, at);
    for (const auto& [b, e] : split(cps)) {
      word.clear();
      for (std::size_t k = at[b]; k < at[e]; ++k) {
        word.push_back(impl_->byte_id[static_cast<unsigned char>(part[k])]);
      }
      impl_->merge(word);
      ids.insert(ids.end(), word.begin(), word.end());
    }
  };
  // Around each <|endoftext|> (where the vocabulary has it) the text is encoded piece by piece.
  std::size_t from = 0;
  while (impl_->end_of_text >= 0) {
    const std::size_t hit = text.find(kEndOfText, from);
    if (hit == std::string_view::npos) break;
    plain(text.substr(from, hit - from));
    ids.push_back(impl_->end_of_text);
    from = hit + kEndOfText.size();
  }
  plain(text.substr(from));
  return ids;
}

std::string Gpt2Tokenizer::decode_text(const std::vector<std::int32_t>& ids) const {
  const std::string bytes = decode(ids);
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    int good = 0;
    const int len = engine::utf8_prefix(bytes, i, good);
    if (len > 0 && good == len) {
      out.append(bytes, i, static_cast<std::size_t>(len));
    } else {  // one U+FFFD a maximal ill-formed subpart, as Python's errors="replace" and HF's
      out += "\xEF\xBF\xBD";
    }
    i += static_cast<std::size_t>(good > 0 ? good : 1);
  }
  return out;
}

std::string Gpt2Tokenizer::decode(const std::vector<std::int32_t>& ids) const {
  const ByteSymbols& bs = byte_symbols();
  std::string out;
  std::vector<char32_t> cps;
  std::vector<std::size_t> at;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const std::int32_t id = ids[k];
    if (id < 0 || static_cast<std::size_t>(id) >= impl_->has_id.size() || !impl_->has_id[id]) {
      invalid("token " + std::to_string(k) + " is id " + std::to_string(id) +
              ", which is not in the vocabulary (ids 0.." + std::to_string(vocab_size() - 1) + ")");
    }
    const std::string& symbol = impl_->symbol_of[id];
    decode_utf8(symbol, cps, at);
    for (const char32_t c : cps) {
      const auto it = bs.byte_of.find(c);
      if (it == bs.byte_of.end()) {
        invalid("token id " + std::to_string(id) + " (" + shown(symbol) +
                ") holds a character that stands for no byte");
      }
      out.push_back(static_cast<char>(it->second));
    }
  }
  return out;
}

int Gpt2Tokenizer::vocab_size() const {
  return static_cast<int>(impl_->symbol_of.size());
}

}  // namespace gpuattn
