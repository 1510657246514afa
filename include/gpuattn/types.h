// Basic vocabulary of the public API: element types, devices, tensor views, errors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace gpuattn {

// u8: block-sparse layouts (AttentionArgs::mask.block_sparse). i8 (int8) and e4m3 (FP8 E4M3, the
// OCP "fn" variant: no infinities, 0x7f/0xff NaN, largest finite 448): quantized KV caches
// (AttentionArgs::k_scale).
enum class DType : std::uint8_t { f16, bf16, f32, i32, u8, i8, e4m3 };
enum class Device : std::uint8_t { cpu, cuda };

const char* to_string(DType t);
const char* to_string(Device d);
std::size_t element_size(DType t);

// What went wrong, so that bindings can map it (not_supported -> NotImplementedError, ...).
enum class ErrorCode : std::uint8_t { invalid_argument, not_supported, cuda_error };

// Every error the library reports is a gpuattn::Error whose message names the offending value.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// A non-owning strided view of a tensor of up to 4 dimensions. Strides are in elements.
// `data == nullptr` with `rank == 0` means "absent" for optional arguments.
struct TensorView {
  static constexpr int kMaxRank = 4;

  void* data = nullptr;
  DType dtype = DType::f16;
  Device device = Device::cpu;
  int device_index = 0;  // CUDA ordinal when device == cuda
  int rank = 0;
  std::array<std::int64_t, kMaxRank> shape{};
  std::array<std::int64_t, kMaxRank> stride{};

  bool present() const { return data != nullptr || rank != 0; }
  std::int64_t numel() const;
  bool is_contiguous() const;

  // A row-major contiguous view of `shape` over `data`.
  static TensorView contiguous(void* data, DType dtype, Device device,
                               std::initializer_list<std::int64_t> shape, int device_index = 0);
};

}  // namespace gpuattn
