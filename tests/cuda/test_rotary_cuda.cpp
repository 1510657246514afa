// gpuattn::apply_rotary on CUDA: the device's output equals the CPU backend's (tested against the
// fp64 rule in tests/cpu/test_rotary.cpp) byte for byte, over the whole buffer (the gaps of a
// strided out keep their poison), in place and not, with positions from device offsets (checked, and
// unchecked inside a CUDA graph) or one offset, packed (varlen) or not, and past one grid of the
// kernel; a bad offset or bound is an error naming it, with the device's out untouched.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "common/test_util.h"
#include "cuda/cuda_test_util.h"
#include "gpuattn/rotary.h"

namespace gpuattn::testing {
namespace {

class RotaryCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  }
};

struct Shape {
  DType dtype = DType::bf16, table_dtype = DType::bf16;
  int B = 2, S = 5, H = 3, D = 64, half = 32, table = 16;
  bool interleaved = false, same_position = false, offsets_array = true, in_place = false;
  bool strided = true, check = true, graph = false;
  std::vector<int> lens;  // varlen: the packed sequences' lengths (B of them, S rows in all)
  std::string name() const {
    std::string packed;
    for (int l : lens) packed += (packed.empty() ? " lens " : ",") + std::to_string(l);
    return std::string(to_string(dtype)) + "/" + to_string(table_dtype) + " B" +
           std::to_string(B) + " S" + std::to_string(S) + " H" + std::to_string(H) + " D" +
           std::to_string(D) + " R" + std::to_string(2 * half) + " S_ro" + std::to_string(table) +
           (interleaved ? " interleaved" : "") + (same_position ? " same-position" : "") +
           (offsets_array ? " offsets[]" : " offset") + (in_place ? " in place" : "") +
           (strided ? " strided" : "") + (check ? "" : " unchecked") + (graph ? " graph" : "") +
           packed;
  }
};

// [B, S, H, D] (varlen: [S, H, D]) inside a buffer with gaps after each head and row when
// strided.
TensorView layout(const HostTensor& buf, const Shape& s, void* device_ptr) {
  TensorView v = buf.view(device_ptr ? Device::cuda : Device::cpu, device_ptr);
  const std::int64_t hs = s.strided ? s.D + 8 : s.D, rs = s.H * hs + (s.strided ? 16 : 0),
                     bs = s.S * rs + (s.strided ? 8 : 0);
  if (!s.lens.empty()) {
    v.rank = 3;
    v.shape = {s.S, s.H, s.D};
    v.stride = {rs, hs, 1};
    return v;
  }
  v.rank = 4;
  v.shape = {s.B, s.S, s.H, s.D};
  v.stride = {bs, rs, hs, 1};
  return v;
}

std::int64_t buffer_elems(const Shape& s) {
  const std::int64_t hs = s.strided ? s.D + 8 : s.D, rs = s.H * hs + (s.strided ? 16 : 0),
                     bs = s.S * rs + (s.strided ? 8 : 0);
  return s.lens.empty() ? s.B * bs : s.S * rs;
}

void run(const Shape& s, std::uint64_t seed) {
  SCOPED_TRACE(s.name());
  HostTensor x(s.dtype, {buffer_elems(s)}), out(s.dtype, {buffer_elems(s)});
  x.randomize(seed);
  out.poison();
  HostTensor cos(s.table_dtype, {s.table, s.half}), sin(s.table_dtype, {s.table, s.half});
  cos.randomize(seed + 1);
  sin.randomize(seed + 2);
  std::vector<int> offs(s.B);
  const int longest = s.lens.empty() ? s.S : *std::max_element(s.lens.begin(), s.lens.end());
  const int last = s.same_position ? 0 : longest - 1;
  std::uint64_t st = seed;
  for (int b = 0; b < s.B; ++b) {
    offs[b] = static_cast<int>(next_random(st) % static_cast<std::uint64_t>(s.table - last));
  }
  const HostTensor offsets = int32s(offs);
  const std::int64_t scalar = s.table - 1 - last;
  const HostTensor cu = make_cu_seqlens(s.lens.empty() ? std::vector<int>{1} : s.lens);

  // The CPU backend's result.
  HostTensor want = s.in_place ? x : out;
  RotaryArgs c;
  c.x = layout(s.in_place ? want : x, s, nullptr);
  c.out = layout(want, s, nullptr);
  c.cos = cos.view();
  c.sin = sin.view();
  if (s.offsets_array) {
    c.seqlen_offsets = offsets.view();
  } else {
    c.seqlen_offset = scalar;
  }
  c.interleaved = s.interleaved;
  c.same_position = s.same_position;
  if (!s.lens.empty()) {
    c.cu_seqlens = cu.view();
    c.max_seqlen = longest;
  }
  apply_rotary(c);

  DeviceBuffer dx(x.bytes()), dout(out.bytes()), dcos(cos.bytes()), dsin(sin.bytes()),
      doff(offsets.bytes()), dcu(cu.bytes());
  dx.upload(x.data());
  dout.upload(out.data());
  dcos.upload(cos.data());
  dsin.upload(sin.data());
  doff.upload(offsets.data());
  dcu.upload(cu.data());
  RotaryArgs a = c;
  a.x = layout(x, s, dx.get());
  a.out = s.in_place ? a.x : layout(out, s, dout.get());
  a.cos = cos.view(Device::cuda, dcos.get());
  a.sin = sin.view(Device::cuda, dsin.get());
  if (s.offsets_array) a.seqlen_offsets = offsets.view(Device::cuda, doff.get());
  if (!s.lens.empty()) a.cu_seqlens = cu.view(Device::cuda, dcu.get());
  a.check_indices = s.check;
  if (s.graph) {
    cudaStream_t stream;
    TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    a.stream = stream;
    // Once: in place twice would rotate twice.
    run_captured(stream, [&] { apply_rotary(a); }, 1, "rotation");
    TEST_CUDA_CHECK(cudaStreamDestroy(stream));
  } else {
    apply_rotary(a);
  }
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  HostTensor got = want;
  (s.in_place ? dx : dout).download(got.data());
  const auto* g = static_cast<const std::uint8_t*>(got.data());
  const auto* w = static_cast<const std::uint8_t*>(want.data());
  const auto diff = std::mismatch(g, g + want.bytes(), w);
  EXPECT_EQ(diff.first, g + want.bytes())
      << "the device's buffer differs from the CPU backend's from byte " << (diff.first - g);
}

TEST_F(RotaryCuda, EqualsTheCpuBackendOnRandomCases) {
  std::uint64_t st = 91;
  const DType dtypes[] = {DType::f16, DType::bf16};
  for (int n = 0; n < 40; ++n) {
    Shape s;
    s.dtype = dtypes[next_random(st) % 2];
    s.table_dtype = next_random(st) % 2 ? DType::f32 : s.dtype;
    s.B = 1 + static_cast<int>(next_random(st) % 3);
    s.S = 1 + static_cast<int>(next_random(st) % 40);
    s.H = 1 + static_cast<int>(next_random(st) % 5);
    const int dims[] = {8, 64, 80, 128, 256};
    s.D = dims[next_random(st) % 5];
    const int halves[] = {1, std::min(8, s.D / 2), s.D / 4, s.D / 2};
    s.half = halves[next_random(st) % 4];
    s.interleaved = next_random(st) % 2;
    s.same_position = next_random(st) % 3 == 0;
    s.offsets_array = next_random(st) % 3 != 0;
    s.in_place = next_random(st) % 3 == 0;
    s.strided = next_random(st) % 2;
    s.check = next_random(st) % 2;
    s.graph = !s.check && s.offsets_array && next_random(st) % 2;
    const int last = s.same_position ? 0 : s.S - 1;
    s.table = last + 1 + static_cast<int>(next_random(st) % 50);
    run(s, seed_of("RotaryCuda/" + std::to_string(n)));
  }
}

// Packed batches: sequences of no rows and of one among them, as many as 64 sequences.
TEST_F(RotaryCuda, VarlenEqualsTheCpuBackendOnRandomCases) {
  std::uint64_t st = 117;
  for (int n = 0; n < 30; ++n) {
    Shape s;
    s.dtype = next_random(st) % 2 ? DType::bf16 : DType::f16;
    s.table_dtype = next_random(st) % 2 ? DType::f32 : s.dtype;
    s.B = 1 + static_cast<int>(next_random(st) % (n % 3 == 0 ? 64 : 5));
    s.lens.assign(s.B, 0);
    s.S = 0;
    for (int& l : s.lens) {
      const int r = static_cast<int>(next_random(st) % 4);
      l = r == 0 ? 0 : r == 1 ? 1 : static_cast<int>(next_random(st) % 70);
      s.S += l;
    }
    if (s.S == 0) s.S = s.lens[0] = 1;
    s.H = 1 + static_cast<int>(next_random(st) % 4);
    const int dims[] = {64, 80, 128, 256};
    s.D = dims[next_random(st) % 4];
    s.half = next_random(st) % 2 ? s.D / 2 : s.D / 4;
    s.interleaved = next_random(st) % 2;
    s.same_position = next_random(st) % 4 == 0;
    s.offsets_array = next_random(st) % 3 != 0;
    s.in_place = next_random(st) % 3 == 0;
    s.strided = next_random(st) % 2;
    s.check = next_random(st) % 2;
    s.graph = !s.check && next_random(st) % 2;
    s.table = *std::max_element(s.lens.begin(), s.lens.end()) +
              static_cast<int>(next_random(st) % 30);
    run(s, seed_of("RotaryCudaVarlen/" + std::to_string(n)));
  }
}

TEST_F(RotaryCuda, ALongCallPastOneGridEqualsTheCpuBackend) {
  Shape s;  // 16384 x 32 rows x 64 pairs: 2x the 65536 x 256 threads of one grid
  s.B = 1;
  s.S = 16384;
  s.H = 32;
  s.D = 128;
  s.half = 64;
  s.table = 20000;
  s.in_place = true;
  s.strided = false;
  run(s, 5);
}

TEST_F(RotaryCuda, ABadOffsetIsNamedAndOutUntouched) {
  const int B = 2, S = 4, H = 2, D = 64;
  HostTensor x(DType::f16, {B, S, H, D}), out(DType::f16, {B, S, H, D});
  HostTensor cos(DType::f16, {8, 32}), sin(DType::f16, {8, 32});
  x.randomize(1);
  out.randomize(2);
  cos.randomize(3);
  sin.randomize(4);
  const HostTensor late = int32s({0, 5});
  DeviceBuffer dx(x.bytes()), dout(out.bytes()), dcos(cos.bytes()), dsin(sin.bytes()),
      doff(late.bytes());
  dx.upload(x.data());
  dout.upload(out.data());
  dcos.upload(cos.data());
  dsin.upload(sin.data());
  doff.upload(late.data());
  RotaryArgs a;
  a.x = x.view(Device::cuda, dx.get());
  a.out = out.view(Device::cuda, dout.get());
  a.cos = cos.view(Device::cuda, dcos.get());
  a.sin = sin.view(Device::cuda, dsin.get());
  a.seqlen_offsets = late.view(Device::cuda, doff.get());
  expect_invalid_argument([&] { apply_rotary(a); },
                          "seqlen_offsets[1] is 5: rows 0..3 of sequence 1 take positions 5..8, "
                          "past the 8 positions of cos/sin");
  a.seqlen_offsets = late.view();  // host memory marked as the caches' device's: refused
  a.seqlen_offsets.device = Device::cuda;
  expect_invalid_argument([&] { apply_rotary(a); }, "seqlen_offsets pointer");
  // Varlen: the bounds and the offsets come back on one copy; either names its value.
  const HostTensor cu = int32s({0, 3, 7}), short_cu = int32s({0, 3, 6});
  DeviceBuffer dcu(cu.bytes()), dshort(short_cu.bytes());
  dcu.upload(cu.data());
  dshort.upload(short_cu.data());
  TensorView packed_x = a.x, packed_out = a.out;
  for (TensorView* v : {&packed_x, &packed_out}) {
    v->rank = 3;
    v->shape = {B * S - 1, H, D};  // 7 of the 8 rows
    v->stride = {H * D, D, 1};
  }
  a.x = packed_x;
  a.out = packed_out;
  a.seqlen_offsets = late.view(Device::cuda, doff.get());
  a.cu_seqlens = cu.view(Device::cuda, dcu.get());
  expect_invalid_argument([&] { apply_rotary(a); },
                          "seqlen_offsets[1] is 5: rows 0..3 of sequence 1 take positions 5..8");
  a.seqlen_offsets = TensorView{};
  a.cu_seqlens = short_cu.view(Device::cuda, dshort.get());
  expect_invalid_argument([&] { apply_rotary(a); }, "cu_seqlens[2] is 6, must be x's 7 rows");
  a.cu_seqlens = cu.view(Device::cuda, dcu.get());
  a.max_seqlen = 3;
  expect_invalid_argument([&] { apply_rotary(a); },
                          "sequence 1 has 4 rows (cu_seqlens[1..2] = 3..7), more than max_seqlen 3");
  // One offset for every sequence is a host value: checked even when the lengths are trusted.
  a.max_seqlen = -1;
  a.check_indices = false;
  a.seqlen_offset = -5;
  expect_invalid_argument([&] { apply_rotary(a); }, "seqlen_offset is -5, must be >= 0");
  a.seqlen_offset = 8;
  expect_invalid_argument([&] { apply_rotary(a); },
                          "seqlen_offset is 8: row 0 of a sequence takes position 8, past the 8 "
                          "positions of cos/sin");
  HostTensor got = out;
  dout.download(got.data());
  EXPECT_EQ(std::memcmp(got.data(), out.data(), out.bytes()), 0) << "out was written";
}

}  // namespace
}  // namespace gpuattn::testing
