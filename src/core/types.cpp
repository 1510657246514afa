#include "gpuattn/types.h"

namespace gpuattn {

const char* to_string(DType t) {
  switch (t) {
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::f32: return "float32";
    case DType::i32: return "int32";
    case DType::u8: return "uint8";
    case DType::i8: return "int8";
    case DType::e4m3: return "float8_e4m3fn";
  }
  return "unknown";
}

const char* to_string(Device d) {
  return d == Device::cpu ? "cpu" : "cuda";
}

std::size_t element_size(DType t) {
  switch (t) {
    case DType::u8:
    case DType::i8:
    case DType::e4m3: return 1;
    case DType::f16:
    case DType::bf16: return 2;
    case DType::f32:
    case DType::i32: return 4;
  }
  return 0;
}

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

bool TensorView::is_contiguous() const {
  std::int64_t expect = 1;
  for (int i = rank - 1; i >= 0; --i) {
    if (shape[i] != 1 && stride[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

TensorView TensorView::contiguous(void* data, DType dtype, Device device,
                                  std::initializer_list<std::int64_t> shape, int device_index) {
  if (shape.size() > static_cast<std::size_t>(kMaxRank)) {
    throw Error(ErrorCode::invalid_argument,
                "TensorView: rank " + std::to_string(shape.size()) + " exceeds 4");
  }
  TensorView t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  t.device_index = device_index;
  t.rank = static_cast<int>(shape.size());
  int i = 0;
  for (std::int64_t s : shape) t.shape[i++] = s;
  std::int64_t st = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.stride[d] = st;
    st *= t.shape[d];
  }
  return t;
}

}  // namespace gpuattn
