#include "engine/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>

#include "engine/utf8.h"
#include "gpuattn/types.h"

namespace gpuattn::engine {
namespace {

constexpr int kMaxDepth = 256;

[[noreturn]] void wrong_type(const Json& v, const char* wanted) {
  const char* article = v.is_null() ? "" : v.is_array() || v.is_object() ? "an " : "a ";
  throw Error(ErrorCode::invalid_argument,
              "JSON value is " + (article + v.type_name()) + ", not " + wanted);
}

std::string format_double(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", c);
  return buf;
}

std::string hex_u16(std::uint32_t u) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04X", u);
  return buf;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Whether a syntactically valid number token that from_chars found out of range is too large
// (true) or too small (false, it rounds to zero): the decimal exponent of its first significant
// digit decides.
bool overflows(std::string_view token) {
  std::size_t i = token[0] == '-' ? 1 : 0;
  std::int64_t magnitude = 0;  // 10^magnitude <= |value| < 10^(magnitude + 1), roughly
  bool significant = false;
  for (; i < token.size() && is_digit(token[i]); ++i) {
    if (token[i] != '0') significant = true;
    if (significant) ++magnitude;
  }
  if (i < token.size() && token[i] == '.') {
    for (++i; i < token.size() && is_digit(token[i]); ++i) {
      if (significant) continue;
      if (token[i] != '0') significant = true;
      --magnitude;
    }
  }
  std::int64_t exponent = 0;
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    const bool negative = token[i] == '-';
    if (token[i] == '-' || token[i] == '+') ++i;
    for (; i < token.size(); ++i)
      exponent = std::min<std::int64_t>(exponent * 10 + (token[i] - '0'), 1 << 30);
    if (negative) exponent = -exponent;
  }
  return significant && magnitude + exponent > 0;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view what, std::int64_t max_values)
      : text_(text), what_(what), max_values_(max_values), values_left_(max_values) {}

  Json parse_document() {
    skip_whitespace();
    Json v = parse_value(0);
    skip_whitespace();
    if (pos_ != text_.size()) fail("expected the end of the text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail_at(std::size_t pos, const std::string& msg) const {
    throw Error(ErrorCode::invalid_argument,
                std::string(what_) + ": invalid JSON at byte " + std::to_string(pos) + ": " + msg);
  }
  [[noreturn]] void fail(const std::string& msg) const { fail_at(pos_, msg); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_whitespace() {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  Json parse_value(int depth) {
    if (at_end()) fail("expected a value, found the end of the text");
    // Each value is a tree node of ~100 bytes: a text of tiny values ("[0,0,...]") would take
    // 50x its size in memory without this bound.
    if (--values_left_ < 0) {
      fail("more than " + std::to_string(max_values_) +
           " values (arrays, objects, strings, "
           "numbers, literals), the limit for this file");
    }
    switch (text_[pos_]) {
      case '{': return parse_object(depth + 1);
      case '[': return parse_array(depth + 1);
      case '"': return Json::string(parse_string());
      case 't': expect_literal("true"); return Json::boolean(true);
      case 'f': expect_literal("false"); return Json::boolean(false);
      case 'n': expect_literal("null"); return Json();
      default:
        if (text_[pos_] == '-' || is_digit(text_[pos_])) return parse_number();
        fail("expected a value (an object, array, string, number, true, false or null)");
    }
  }

  void expect_literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) fail("expected '" + std::string(word) + "'");
    pos_ += word.size();
  }

  void check_depth(int depth) const {
    if (depth > kMaxDepth) {
      fail("nesting deeper than " + std::to_string(kMaxDepth) + " arrays and objects");
    }
  }

  Json parse_object(int depth) {
    check_depth(depth);
    ++pos_;  // '{'
    Json::Object members;
    std::unordered_set<std::string> keys;
    skip_whitespace();
    if (peek() == '}') {
      ++pos_;
      return Json::object(std::move(members));
    }
    while (true) {
      if (peek() != '"') {
        fail(members.empty() ? "expected a string key or '}'" : "expected a string key after ','");
      }
      const std::size_t key_pos = pos_;
      std::string key = parse_string();
      if (!keys.insert(key).second) fail_at(key_pos, "duplicate key " + json_quote(key));
      skip_whitespace();
      if (peek() != ':') fail("expected ':' after an object key");
      ++pos_;
      skip_whitespace();
      Json value = parse_value(depth);
      members.emplace_back(std::move(key), std::move(value));
      skip_whitespace();
      if (peek() == ',') {
        ++pos_;
        skip_whitespace();
      } else if (peek() == '}') {
        ++pos_;
        return Json::object(std::move(members));
      } else {
        fail("expected ',' or '}' after an object member");
      }
    }
  }

  Json parse_array(int depth) {
    check_depth(depth);
    ++pos_;  // '['
    Json::Array items;
    skip_whitespace();
    if (peek() == ']') {
      ++pos_;
      return Json::array(std::move(items));
    }
    while (true) {
      items.push_back(parse_value(depth));
      skip_whitespace();
      if (peek() == ',') {
        ++pos_;
        skip_whitespace();
      } else if (peek() == ']') {
        ++pos_;
        return Json::array(std::move(items));
      } else {
        fail("expected ',' or ']' after an array element");
      }
    }
  }

  std::uint32_t parse_hex4() {
    std::uint32_t u = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      std::uint32_t d;
      if (c >= '0' && c <= '9') {
        d = static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        fail("expected 4 hex digits after \\u");
      }
      u = u * 16 + d;
      ++pos_;
    }
    return u;
  }

  // One UTF-8 encoded character starting at pos_ (a lead byte >= 0x80), checked to be well formed
  // (no overlong forms, no surrogates, nothing above U+10FFFF) and copied to out.
  void copy_utf8(std::string& out) {
    const auto lead = static_cast<unsigned char>(text_[pos_]);
    int good = 0;
    const int len = utf8_prefix(text_, pos_, good);
    if (len == 0) fail("invalid UTF-8 lead byte " + hex_byte(lead) + " in a string");
    if (good < len) {
      fail_at(pos_ + static_cast<std::size_t>(good),
              "invalid UTF-8 sequence in a string (lead byte " + hex_byte(lead) + ")");
    }
    out.append(text_.substr(pos_, static_cast<std::size_t>(len)));
    pos_ += static_cast<std::size_t>(len);
  }

  std::string parse_string() {
    const std::size_t start = pos_;
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (at_end()) fail_at(start, "string is not closed by '\"' before the end of the text");
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("control character " + hex_byte(c) + " in a string must be escaped");
      if (c >= 0x80) {
        copy_utf8(out);
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_;  // '\\'
      const char e = peek();
      ++pos_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': append_utf8(out, parse_escaped_code_point()); break;
        default: fail_at(pos_ - 2, "expected an escape character (\" \\ / b f n r t u) after '\\'");
      }
    }
  }

  // After "\u": 4 hex digits, and a second \uXXXX escape where the first is a high surrogate.
  std::uint32_t parse_escaped_code_point() {
    const std::size_t start = pos_ - 2;
    const std::uint32_t u = parse_hex4();
    if (u >= 0xdc00 && u <= 0xdfff) fail_at(start, "lone low surrogate " + hex_u16(u));
    if (u < 0xd800 || u > 0xdbff) return u;
    if (text_.substr(pos_, 2) != "\\u") {
      fail("expected a \\uDC00-\\uDFFF low surrogate after the high surrogate " + hex_u16(u));
    }
    pos_ += 2;
    const std::uint32_t low = parse_hex4();
    if (low < 0xdc00 || low > 0xdfff) {
      fail_at(pos_ - 6, "expected a \\uDC00-\\uDFFF low surrogate after the high surrogate " +
                            hex_u16(u) + ", not " + hex_u16(low));
    }
    return 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
  }

  Json parse_number() {
    const std::size_t start = pos_;
    const bool negative = peek() == '-';
    if (negative) ++pos_;
    if (!is_digit(peek())) fail("expected a digit after '-'");
    // The integer part, accumulated as a magnitude while it fits.
    const std::uint64_t limit =
        negative ? std::uint64_t{1} << 63 : std::uint64_t(std::numeric_limits<std::int64_t>::max());
    std::uint64_t magnitude = 0;
    bool fits = true;
    if (peek() == '0') {
      ++pos_;
      if (is_digit(peek())) fail("leading zeros are not allowed in a number");
    } else {
      while (is_digit(peek())) {
        const auto d = static_cast<std::uint64_t>(peek() - '0');
        if (magnitude > (limit - d) / 10) fits = false;
        if (fits) magnitude = magnitude * 10 + d;
        ++pos_;
      }
    }
    bool integral = true;
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!is_digit(peek())) fail("expected a digit after the decimal point");
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) fail("expected a digit in the exponent");
      while (is_digit(peek())) ++pos_;
    }
    if (integral && fits) {
      if (negative) return Json::integer(static_cast<std::int64_t>(0 - magnitude));
      return Json::integer(static_cast<std::int64_t>(magnitude));
    }
    const std::string_view token = text_.substr(start, pos_ - start);
    double d = 0.0;
    const auto r = std::from_chars(token.data(), token.data() + token.size(), d);
    if (r.ec == std::errc::result_out_of_range) {
      if (overflows(token)) {
        fail_at(start, "number " + std::string(token) + " is out of the range of a double");
      }
      d = negative ? -0.0 : 0.0;
    } else if (r.ec != std::errc() || r.ptr != token.data() + token.size()) {
      fail_at(start, "expected a number");  // not reached: the token was checked above
    }
    return Json::number(d);
  }

  std::string_view text_;
  std::string_view what_;
  std::int64_t max_values_;
  std::int64_t values_left_;
  std::size_t pos_ = 0;
};

}  // namespace

Json Json::boolean(bool b) {
  Json j;
  j.kind_ = Kind::boolean;
  j.bool_ = b;
  return j;
}

Json Json::number(double d) {
  Json j;
  j.kind_ = Kind::number;
  j.number_ = d;
  return j;
}

Json Json::integer(std::int64_t i) {
  Json j;
  j.kind_ = Kind::number;
  j.number_ = static_cast<double>(i);
  j.int_ = i;
  j.is_int_ = true;
  return j;
}

Json Json::string(std::string s) {
  Json j;
  j.kind_ = Kind::string;
  j.string_ = std::move(s);
  return j;
}

Json Json::array(Array items) {
  Json j;
  j.kind_ = Kind::array;
  j.array_ = std::move(items);
  return j;
}

Json Json::object(Object members) {
  Json j;
  j.kind_ = Kind::object;
  j.object_ = std::move(members);
  return j;
}

bool Json::as_bool() const {
  if (!is_bool()) wrong_type(*this, "a bool");
  return bool_;
}

double Json::as_number() const {
  if (!is_number()) wrong_type(*this, "a number");
  return number_;
}

std::int64_t Json::as_int() const {
  if (!is_number()) wrong_type(*this, "an integer");
  if (!is_int_) {
    throw Error(ErrorCode::invalid_argument,
                "JSON number " + format_double(number_) + " is not an integer within int64");
  }
  return int_;
}

const std::string& Json::as_string() const {
  if (!is_string()) wrong_type(*this, "a string");
  return string_;
}

const Json::Array& Json::as_array() const {
  if (!is_array()) wrong_type(*this, "an array");
  return array_;
}

const Json::Object& Json::as_object() const {
  if (!is_object()) wrong_type(*this, "an object");
  return object_;
}

const Json* Json::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : object_) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string Json::type_name() const {
  switch (kind_) {
    case Kind::null: return "null";
    case Kind::boolean: return "bool";
    case Kind::number: return "number";
    case Kind::string: return "string";
    case Kind::array: return "array";
    case Kind::object: return "object";
  }
  return "?";
}

Json parse_json(std::string_view text, std::string_view what, std::int64_t max_values) {
  return Parser(text, what, max_values).parse_document();
}

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += hex_u16(c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace gpuattn::engine
