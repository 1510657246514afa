// The few file-system helpers the engine's loaders share (model weights and config, the
// tokenizer's vocab.json and merges.txt), and the `gpuattn generate` tool with them.
#pragma once

#include <string>

namespace gpuattn::engine {

bool is_dir(const std::string& path);
bool is_file(const std::string& path);  // a regular file
// The whole file; a file that cannot be opened is an invalid_argument "<path>: cannot open: <why>".
std::string read_text(const std::string& path);

}  // namespace gpuattn::engine
