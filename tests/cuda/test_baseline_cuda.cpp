// The three-kernel baseline (gpuattn bench's comparison) refuses what it does not compute rather
// than ignoring it: each refusal comes before any CUDA call, so these run without a GPU too.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cuda/baseline.h"

namespace gpuattn::testing {
namespace {

// A dense f16 call of 4 x 4 at head dim 64 on cuda:0; pointers never dereferenced.
FwdParams plain_params() {
  FwdParams p;
  const auto at = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  p.q = at(256);
  p.k = at(512);
  p.v = at(768);
  p.o = at(1024);
  p.batch = p.hq = p.hkv = 1;
  p.head_dim = 64;
  p.seqlen_q = p.seqlen_k = 4;
  p.total_q = p.total_k = 4;
  p.q_row_stride = p.k_row_stride = p.v_row_stride = p.o_row_stride = 64;
  p.scale = 0.125f;
  p.dtype = DType::f16;
  p.device = Device::cuda;
  return p;
}

TEST(BaselineCuda, RefusesWhatItDoesNotCompute) {
  static const std::int32_t lens[2] = {4, 4};
  static const std::uint8_t layout[1] = {1};
  static const float scale[1] = {1.f};
  struct Case {
    std::string what;  // in the error
    std::function<void(FwdParams&)> set;
  };
  const std::vector<Case> cases = {
      {"window", [](FwdParams& p) { p.window_left = 2; }},
      {"global tokens", [](FwdParams& p) { p.global_tokens = 1; }},
      {"block-sparse", [&](FwdParams& p) {
         p.block_layout = layout;
         p.block_q = p.block_k = 16;
       }},
      {"seqused_k is not supported", [&](FwdParams& p) { p.seqused_k = lens; }},
      {"leftpad_k is not supported", [&](FwdParams& p) { p.leftpad_k = lens; }},
      {"block_table", [&](FwdParams& p) {
         p.block_table = lens;
         p.page_size = 4;
         p.num_pages = 1;
       }},
      {"quantized k/v (k_scale)", [&](FwdParams& p) {
         p.k_scale = p.v_scale = scale;
         p.kv_dtype = DType::i8;
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    FwdParams p = plain_params();
    c.set(p);
    try {
      baseline_attention_forward(p, nullptr, 0, nullptr);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::not_supported) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.what), std::string::npos) << e.what();
    }
  }
  // The control: the plain call gets past these checks, to the missing workspace.
  try {
    baseline_attention_forward(plain_params(), nullptr, 0, nullptr);
    ADD_FAILURE() << "no error without a workspace";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("workspace of 0 bytes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpuattn::testing
