// The few file-system helpers the engine's loaders share (model weights and config, the
// tokenizer's vocab.json and merges.txt), and the `gpuattn generate` tool with them.
#pragma once

#include <string>

namespace gpuattn::engine {

bool is_dir(const std::string& path);
bool is_file(const std::string& path);  // a regular file
bool exists(const std::string& path);   // anything: a file, a directory, ...
// The whole file; a file that cannot be opened or read, or a path that is not a regular file, is
// an invalid_argument naming the path ("<path>: cannot open: <why>").
std::string read_text(const std::string& path);

}  // namespace gpuattn::engine
