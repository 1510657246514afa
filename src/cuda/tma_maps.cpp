#include "cuda/tma_maps.h"

#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>

#include "cuda/cuda_check.h"

namespace gpuattn {
namespace {

// cuTensorMapEncodeTiled through the runtime's driver entry point, so that nothing links libcuda.
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault,
                                         &status) == cudaSuccess &&
        status == cudaDriverEntryPointSuccess) {
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
    } else {
      cudaGetLastError();
    }
  });
  if (fn == nullptr) {
    throw Error(ErrorCode::cuda_error, "gpuattn: the driver has no cuTensorMapEncodeTiled");
  }
  return fn;
}

}  // namespace

CUtensorMap make_tensor_map_4d(const char* name, const void* base, CUtensorMapDataType type,
                               const std::uint64_t (&dims)[4],
                               const std::uint64_t (&byte_strides)[3],
                               const std::uint32_t (&box)[4], CUtensorMapSwizzle swizzle) {
  const cuuint64_t d[4] = {dims[0], dims[1], dims[2], dims[3]};
  const cuuint64_t st[3] = {byte_strides[0], byte_strides[1], byte_strides[2]};
  const cuuint32_t bx[4] = {box[0], box[1], box[2], box[3]};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  CUtensorMap map;
  const CUresult r =
      encoder()(&map, type, 4, const_cast<void*>(base), d, st, bx, elem_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw Error(ErrorCode::cuda_error, std::string("gpuattn: cuTensorMapEncodeTiled failed for ") +
                                           name + " (CUresult " + std::to_string(r) + ")");
  }
  return map;
}

CUtensorMap make_rows_map(const char* name, const void* base, const RowsMapFormat& format,
                          int head_dim, int heads, std::int64_t rows, int batch,
                          std::int64_t head_stride, std::int64_t row_stride,
                          std::int64_t batch_stride, int box_rows) {
  // A varlen call's packed side may have no rows (every sequence empty there); a map cannot have a
  // dimension of 0, so it covers one row, which no tile reads.
  const std::int64_t mapped_rows = std::max<std::int64_t>(rows, 1);
  const std::uint64_t dims[4] = {
      static_cast<std::uint64_t>(head_dim), static_cast<std::uint64_t>(heads),
      static_cast<std::uint64_t>(mapped_rows), static_cast<std::uint64_t>(batch)};
  // Strides of dims 1..3 in bytes.
  const auto bytes = [&](std::int64_t s, std::int64_t size, std::int64_t packed) {
    return static_cast<std::uint64_t>(map_stride(s, size, packed) * format.elem_bytes);
  };
  const std::uint64_t strides[3] = {bytes(head_stride, heads, head_dim),
                                    bytes(row_stride, mapped_rows, std::int64_t{head_dim} * heads),
                                    bytes(batch_stride, batch, mapped_rows * head_dim * heads)};
  const std::uint32_t box[4] = {format.box_cols, 1, static_cast<std::uint32_t>(box_rows), 1};
  return make_tensor_map_4d(name, base, format.type, dims, strides, box, format.swizzle);
}

CUtensorMap make_rows_map(const char* name, const void* base, DType dtype, int head_dim, int heads,
                          std::int64_t rows, int batch, std::int64_t head_stride,
                          std::int64_t row_stride, std::int64_t batch_stride, int box_rows) {
  const RowsMapFormat format{
      dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
      64, CU_TENSOR_MAP_SWIZZLE_128B};
  return make_rows_map(name, base, format, head_dim, heads, rows, batch, head_stride, row_stride,
                       batch_stride, box_rows);
}

QkvTensorMaps make_qkv_tensor_maps(const FwdParams& p, int rows_q, int rows_kv, int rows_o) {
  if (!strides_fit_tma(p)) {  // the dispatch keeps such calls off the TMA kernels
    throw Error(ErrorCode::not_supported,
                "gpuattn: internal error: a zero or negative stride reached a TMA kernel");
  }
  const bool varlen = p.is_varlen();
  const int batch = varlen ? 1 : p.batch;
  const std::int64_t rows_q_total = varlen ? p.total_q : p.seqlen_q;
  const std::int64_t rows_k_total = varlen ? p.total_k : p.seqlen_k;
  QkvTensorMaps m;
  m.q = make_rows_map("q", p.q, p.dtype, p.head_dim, p.hq, rows_q_total, batch, p.q_head_stride,
                      p.q_row_stride, p.q_batch_stride, rows_q);
  m.k = make_rows_map("k", p.k, p.dtype, p.head_dim, p.hkv, rows_k_total, batch, p.k_head_stride,
                      p.k_row_stride, p.k_batch_stride, rows_kv);
  m.v = make_rows_map("v", p.v, p.dtype, p.head_dim, p.hkv, rows_k_total, batch, p.v_head_stride,
                      p.v_row_stride, p.v_batch_stride, rows_kv);
  if (varlen) {  // out is stored by the kernel's threads: its map's place holds V's tail map
    // rows_kv rows in dim 2 and the sequence end in dim 3, both a row apart (the packed row
    // for a size-1 dim, as make_rows_map takes for v), over v - rows_kv rows: never read below v,
    // the box's in-bounds rows are end - r .. end - 1. (One key row in all: its address is v
    // whatever the stride, which then may be any.)
    const std::int64_t rs = map_stride(p.v_row_stride, p.total_k, std::int64_t{p.head_dim} * p.hkv);
    const auto* base = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p.v) -
                                                     static_cast<std::uintptr_t>(rows_kv * rs * 2));
    m.v_tail = make_rows_map("v (sequence ends)", base, p.dtype, p.head_dim, p.hkv, rows_kv,
                             static_cast<int>(p.total_k) + 1, p.v_head_stride, rs, rs, rows_kv);
  } else {
    m.o = make_rows_map("out", p.o, p.dtype, p.head_dim, p.hq, rows_q_total, batch, p.o_head_stride,
                        p.o_row_stride, p.o_batch_stride, rows_o);
  }
  return m;
}

}  // namespace gpuattn
