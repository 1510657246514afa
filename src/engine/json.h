// A minimal JSON value and an RFC 8259 parser, enough for model configs and safetensors headers.
// Objects keep their keys in file order; errors are gpuattn::Error naming where and what.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuattn::engine {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;  // null
  static Json boolean(bool b);
  static Json number(double d);
  static Json integer(std::int64_t i);
  static Json string(std::string s);
  static Json array(Array items);
  static Json object(Object members);  // members' keys are taken as given (no duplicate check)

  bool is_null() const { return kind_ == Kind::null; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_number() const { return kind_ == Kind::number; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_object() const { return kind_ == Kind::object; }
  // A number written without fraction or exponent that fits an int64 (held exactly).
  bool is_int() const { return kind_ == Kind::number && is_int_; }

  // Each throws gpuattn::Error (invalid_argument) naming both types when the value is another.
  bool as_bool() const;
  double as_number() const;
  std::int64_t as_int() const;  // only where is_int(): 2.0, 1e3 and 2^63 are not
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;

  // The member named `key`, or nullptr when there is none or this is not an object.
  const Json* find(std::string_view key) const;
  // "null", "bool", "number", "string", "array" or "object".
  std::string type_name() const;

 private:
  enum class Kind : std::uint8_t { null, boolean, number, string, array, object };

  Kind kind_ = Kind::null;
  bool bool_ = false;
  bool is_int_ = false;
  double number_ = 0.0;
  std::int64_t int_ = 0;
  std::string string_;
  Array array_;
  Object object_;
};

// Parses one JSON text. On malformed input throws gpuattn::Error (invalid_argument) reading
// "<what>: invalid JSON at byte <offset>: expected ...", offsets counted from 0.
// Nesting deeper than 256 arrays/objects, duplicate keys in an object, invalid UTF-8, lone
// surrogate escapes and anything after the value but whitespace are errors, as are more than
// `max_values` values in all (each a tree node of about 100 bytes: the default, 2^22, bounds the
// tree near 400 MB; GPT-2's vocab.json holds 50,258, a safetensors header a few per tensor).
Json parse_json(std::string_view text, std::string_view what,
                std::int64_t max_values = std::int64_t{1} << 22);

// `s` as a JSON string literal, quotes included ("a\"b\n" -> "\"a\\\"b\\n\""). Bytes >= 0x80 are
// copied as they are (the caller's UTF-8); control characters are escaped.
std::string json_quote(std::string_view s);

}  // namespace gpuattn::engine
