// Reading and writing the safetensors format (https://github.com/huggingface/safetensors):
//   [u64 little-endian N] [N bytes of JSON header] [data section]
// The header maps each tensor name to {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
// offsets in bytes from the start of the data section, plus an optional "__metadata__" object of
// string -> string. Tensors are row-major and little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuattn::engine {

// One tensor of an open file; `data` points into the file's read-only mapping (no alignment
// promised) and lives as long as the SafetensorsFile.
struct StTensor {
  std::string name;
  std::string dtype;                // as written: "F32", "F16", "BF16", "I64", ...
  std::vector<std::int64_t> shape;  // [] for a scalar
  const std::byte* data = nullptr;
  std::size_t nbytes = 0;
};

// Bytes per element of a safetensors dtype name (F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL F8_E4M3
// F8_E5M2), 0 for any other name.
std::size_t st_element_size(std::string_view dtype);

// A safetensors file mapped read-only (mmap). Every tensor entry is checked on open: fields and
// their types, a known dtype, non-negative sizes, offsets within the data section and matching
// the shape, no two tensors sharing bytes. Errors are gpuattn::Error naming the file and the
// offending tensor and value.
class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);

  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::vector<StTensor>& tensors() const { return tensors_; }  // in header order
  const StTensor* find(std::string_view name) const;                 // nullptr when absent
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }

 private:
  SafetensorsFile() = default;
  void unmap() noexcept;

  std::string path_;
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  std::vector<StTensor> tensors_;
  std::unordered_map<std::string, std::size_t> index_;  // name -> position in tensors_
  std::vector<std::pair<std::string, std::string>> metadata_;
};

struct StTensorOut {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> bytes;  // row-major, little-endian
};

// Writes `tensors` (laid out in the order given) and `metadata` as a safetensors file. Everything
// is checked before the file is created; the file is written as path + ".tmp" and renamed, so an
// error leaves no partial file at `path`.
void write_safetensors(const std::string& path, const std::vector<StTensorOut>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata = {});

// The elements of an F32, F16, BF16 or F64 tensor as floats; another dtype is an error naming the
// tensor.
std::vector<float> to_float(const StTensor& t);

}  // namespace gpuattn::engine
