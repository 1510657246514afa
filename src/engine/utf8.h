// Well-formed UTF-8 (Unicode's Table 3-7: no overlong forms, no surrogates, nothing past
// U+10FFFF), shared by the JSON reader, the safetensors writer and the tokenizer's decode_text.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpuattn::engine {

// The bytes the character starting at s[i] takes by its lead byte (1 to 4; 0: the byte starts
// no character), and in `good` how many of them, from s[i] on, agree with the rule (the lead and
// the continuation bytes after it that could still be part of the character, cut by the text's
// end). The character is well formed iff good == the returned length; otherwise s[i, i + max(1,
// good)) is the maximal ill-formed subpart that one U+FFFD replaces.
inline int utf8_prefix(std::string_view s, std::size_t i, int& good) {
  const auto lead = static_cast<unsigned char>(s[i]);
  good = 1;
  if (lead < 0x80) return 1;
  int len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the first continuation byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    good = 0;
    return 0;
  }
  while (good < len && i + good < s.size()) {
    const auto b = static_cast<unsigned char>(s[i + good]);
    if (good == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
    ++good;
  }
  return len;
}

}  // namespace gpuattn::engine
