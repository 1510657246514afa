// GPT-2's byte-level BPE tokenizer: text (UTF-8) to token ids and back, from the vocab.json and
// merges.txt that a Hugging Face GPT-2 checkpoint directory holds (the files OpenAI released as
// encoder.json and vocab.bpe).
//
// encode: <|endoftext|>, where the vocabulary has it, is that one token wherever the text holds
// it (as Hugging Face's GPT-2 tokenizers take it); the rest is split into pre-tokens by GPT-2's
// pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (Unicode classes as the `regex` module defines them, in its Unicode version:
// src/engine/unicode_classes.inc); each
// pre-token's UTF-8 bytes become one symbol each (GPT-2's byte-to-character table), and
// adjacent symbols are merged, the pair of lowest merge rank first, until no listed pair is left.
// decode: the tokens' symbols mapped back to bytes; a cut inside a multi-byte character leaves
// those bytes as they are (the result is bytes, not necessarily valid UTF-8).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpuattn {

class Gpt2Tokenizer {
 public:
  // `path`: a directory holding vocab.json and merges.txt. Throws gpuattn::Error naming the file
  // and what is wrong (missing, not a JSON object of ids, an id out of range or listed twice, a
  // byte symbol missing from the vocabulary, a merges line that is not two symbols, repeats a
  // pair, or names a symbol or merge without an id). Ids must stay below twice the entries plus
  // 1024.
  static Gpt2Tokenizer load(const std::string& path);
  // From the two files' contents; `source` names them in errors.
  static Gpt2Tokenizer from_strings(std::string_view vocab_json, std::string_view merges_txt,
                                    const std::string& source = "tokenizer");

  // Invalid UTF-8 is an invalid_argument naming the byte offset.
  std::vector<std::int32_t> encode(std::string_view text) const;
  // An id outside [0, vocab_size()) is an invalid_argument naming it and its position.
  std::string decode(const std::vector<std::int32_t>& ids) const;
  // decode, with U+FFFD for each maximal ill-formed subpart (a character cut between tokens; C0 80
  // gives two, ED A0 80 three): always valid UTF-8, as Hugging Face's decode and Python's
  // errors="replace" give.
  std::string decode_text(const std::vector<std::int32_t>& ids) const;
  // One plus the largest id of the vocabulary.
  int vocab_size() const;

  // GPT-2's pre-tokens of `text` (the split encode starts from), as UTF-8 strings.
  static std::vector<std::string> pretokenize(std::string_view text);

  Gpt2Tokenizer(Gpt2Tokenizer&&) noexcept;
  Gpt2Tokenizer& operator=(Gpt2Tokenizer&&) noexcept;
  ~Gpt2Tokenizer();

 private:
  struct Impl;
  explicit Gpt2Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuattn
