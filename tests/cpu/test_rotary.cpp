// gpuattn::apply_rotary on the CPU backend against the fp64 rule (rotated pairs, pass-through
// features bit for bit), in place and not, over strided views, GPT-J and GPT-NeoX pairs, per-row and
// shared positions; a varlen (packed) call equals each of its sequences rotated alone; every bad
// input is an invalid_argument naming it, with out untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "common/test_util.h"
#include "gpuattn/rotary.h"

namespace gpuattn::testing {
namespace {

struct Case {
  DType dtype = DType::f16, table_dtype = DType::f16;
  int B = 2, S = 5, H = 3, D = 64, half = 32, table = 16;
  bool interleaved = false, same_position = false, offsets_array = true, in_place = false;
  std::int64_t scalar_offset = 0;
  std::string name() const {
    return std::string(to_string(dtype)) + "/" + to_string(table_dtype) + " B" +
           std::to_string(B) + " S" + std::to_string(S) + " H" + std::to_string(H) + " D" +
           std::to_string(D) + " R" + std::to_string(2 * half) + " S_ro" + std::to_string(table) +
           (interleaved ? " interleaved" : " neox") + (same_position ? " same-position" : "") +
           (offsets_array ? " offsets[]" : " offset " + std::to_string(scalar_offset)) +
           (in_place ? " in place" : "");
  }
};

// x lives in a buffer with a gap after each head and each row (strides past the packed ones).
struct Strided {
  HostTensor buf;
  TensorView view;
  std::int64_t off(int b, int i, int h, int d) const {
    return b * view.stride[0] + i * view.stride[1] + h * view.stride[2] + d;
  }
};

Strided strided(DType t, int B, int S, int H, int D, std::uint64_t seed) {
  const std::int64_t hs = D + 8, rs = H * hs + 16, bs = S * rs + 8;
  Strided s{HostTensor(t, {B * bs}), {}};
  s.buf.randomize(seed);
  s.view = s.buf.view();
  s.view.rank = 4;
  s.view.shape = {B, S, H, D};
  s.view.stride = {bs, rs, hs, 1};
  return s;
}

double rel_bound(DType t) {
  return t == DType::bf16 ? std::ldexp(1.0, -8) : t == DType::f16 ? std::ldexp(1.0, -10)
                                                                  : std::ldexp(1.0, -21);
}

void run_case(const Case& c, std::uint64_t seed) {
  SCOPED_TRACE(c.name());
  Strided x = strided(c.dtype, c.B, c.S, c.H, c.D, seed);
  const HostTensor x0 = x.buf;
  Strided out = strided(c.dtype, c.B, c.S, c.H, c.D, seed + 1);
  out.buf.poison();
  HostTensor cos(c.table_dtype, {c.table, c.half}), sin(c.table_dtype, {c.table, c.half});
  cos.randomize(seed + 2);
  sin.randomize(seed + 3);
  std::vector<int> offs(c.B);
  const int last = c.same_position ? 0 : c.S - 1;
  std::uint64_t st = seed;
  for (int b = 0; b < c.B; ++b) {
    offs[b] = static_cast<int>(next_random(st) % static_cast<std::uint64_t>(c.table - last));
  }
  const HostTensor offsets = int32s(offs);
  RotaryArgs a;
  a.x = x.view;
  a.out = c.in_place ? x.view : out.view;
  a.cos = cos.view();
  a.sin = sin.view();
  if (c.offsets_array) {
    a.seqlen_offsets = offsets.view();
  } else {
    a.seqlen_offset = c.scalar_offset;
  }
  a.interleaved = c.interleaved;
  a.same_position = c.same_position;
  apply_rotary(a);
  const Strided& got = c.in_place ? x : out;
  const double rel = rel_bound(c.dtype);
  int bad = 0;
  for (int b = 0; b < c.B; ++b) {
    const std::int64_t o = c.offsets_array ? offs[b] : c.scalar_offset;
    for (int i = 0; i < c.S; ++i) {
      const std::int64_t pos = c.same_position ? o : o + i;
      for (int h = 0; h < c.H; ++h) {
        std::vector<bool> rotated(c.D, false);
        for (int j = 0; j < c.half; ++j) {
          const int d1 = c.interleaved ? 2 * j : j, d2 = c.interleaved ? 2 * j + 1 : j + c.half;
          rotated[d1] = rotated[d2] = true;
          const double x1 = x0.get(x.off(b, i, h, d1)), x2 = x0.get(x.off(b, i, h, d2));
          const double cs = cos.get(pos * c.half + j), sn = sin.get(pos * c.half + j);
          const double want1 = x1 * cs - x2 * sn, want2 = x1 * sn + x2 * cs;
          const double tol = rel * (std::fabs(x1 * cs) + std::fabs(x2 * sn) +
                                    std::fabs(x1 * sn) + std::fabs(x2 * cs)) + 1e-30;
          const double g1 = got.buf.get(got.off(b, i, h, d1)), g2 = got.buf.get(got.off(b, i, h, d2));
          if (!(std::fabs(g1 - want1) <= tol) || !(std::fabs(g2 - want2) <= tol)) {
            if (++bad <= 5) {
              ADD_FAILURE() << "b " << b << " row " << i << " head " << h << " pair " << j
                            << ": got (" << g1 << ", " << g2 << "), want (" << want1 << ", "
                            << want2 << ") within " << tol;
            }
          }
        }
        for (int d = 0; d < c.D; ++d) {
          if (rotated[d]) continue;
          const float want = x0.get(x.off(b, i, h, d)), g = got.buf.get(got.off(b, i, h, d));
          if (std::memcmp(&want, &g, sizeof g) != 0 && ++bad <= 5) {
            ADD_FAILURE() << "b " << b << " row " << i << " head " << h << " feature " << d
                          << " (not rotated): got " << g << ", want x's " << want;
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
  // Nothing past the view was written: the gaps of out's buffer keep their NaN.
  if (!c.in_place) {
    std::int64_t written = 0;
    for (std::int64_t e = 0; e < out.buf.numel(); ++e) written += !std::isnan(out.buf.get(e));
    EXPECT_EQ(written, static_cast<std::int64_t>(c.B) * c.S * c.H * c.D);
  }
}

TEST(Rotary, MatchesTheFp64RuleOnRandomCases) {
  std::uint64_t st = 77;
  const DType dtypes[] = {DType::f16, DType::bf16, DType::f32};
  for (int n = 0; n < 120; ++n) {
    Case c;
    c.dtype = dtypes[next_random(st) % 3];
    c.table_dtype = next_random(st) % 2 ? DType::f32 : c.dtype;
    c.B = 1 + static_cast<int>(next_random(st) % 3);
    c.S = 1 + static_cast<int>(next_random(st) % 9);
    c.H = 1 + static_cast<int>(next_random(st) % 3);
    const int dims[] = {8, 64, 80, 128, 256};
    c.D = dims[next_random(st) % 5];
    const int halves[] = {1, std::min(8, c.D / 2), c.D / 4, c.D / 2};
    c.half = halves[next_random(st) % 4];
    c.interleaved = next_random(st) % 2;
    c.same_position = next_random(st) % 3 == 0;
    c.offsets_array = next_random(st) % 3 != 0;
    c.in_place = next_random(st) % 3 == 0;
    const int last = c.same_position ? 0 : c.S - 1;
    c.table = last + 1 + static_cast<int>(next_random(st) % 20);
    c.scalar_offset = static_cast<std::int64_t>(next_random(st) % (c.table - last));
    run_case(c, 1000 + n);
  }
}

TEST(Rotary, InPlaceGivesTheSameBitsAsOutOfPlace) {
  for (const bool interleaved : {false, true}) {
    Strided x = strided(DType::bf16, 2, 7, 2, 128, 5);
    Strided out = strided(DType::bf16, 2, 7, 2, 128, 6);
    HostTensor cos(DType::f32, {12, 32}), sin(DType::f32, {12, 32});
    cos.randomize(7);
    sin.randomize(8);
    const HostTensor offsets = int32s({5, 0});
    RotaryArgs a;
    a.x = x.view;
    a.out = out.view;
    a.cos = cos.view();
    a.sin = sin.view();
    a.seqlen_offsets = offsets.view();
    a.interleaved = interleaved;
    apply_rotary(a);
    a.out = x.view;
    apply_rotary(a);
    for (int b = 0; b < 2; ++b) {
      for (int i = 0; i < 7; ++i) {
        for (int h = 0; h < 2; ++h) {
          EXPECT_EQ(std::memcmp(static_cast<const std::uint16_t*>(x.buf.data()) + x.off(b, i, h, 0),
                                static_cast<const std::uint16_t*>(out.buf.data()) +
                                    out.off(b, i, h, 0),
                                128 * 2),
                    0)
              << "b " << b << " row " << i << " head " << h;
        }
      }
    }
  }
}

// A packed batch [total, H, D] in a buffer with a gap after each head and row.
TensorView packed(const HostTensor& buf, int total, int H, int D) {
  TensorView v = buf.view();
  v.rank = 3;
  v.shape = {total, H, D};
  v.stride = {H * (D + 8) + 16, D + 8, 1};
  return v;
}

TEST(Rotary, VarlenEqualsEachSequenceAlone) {
  std::uint64_t st = 313;
  const DType dtypes[] = {DType::f16, DType::bf16, DType::f32};
  for (int n = 0; n < 60; ++n) {
    const DType t = dtypes[next_random(st) % 3];
    const DType tt = next_random(st) % 2 ? DType::f32 : t;
    const int B = 1 + static_cast<int>(next_random(st) % 5);
    std::vector<int> lens(B);
    int total = 0, longest = 0;
    for (int& l : lens) {
      const int r = static_cast<int>(next_random(st) % 4);
      l = r == 0 ? 0 : r == 1 ? 1 : static_cast<int>(next_random(st) % 12);
      total += l;
      longest = std::max(longest, l);
    }
    if (total == 0) {  // the library takes no empty view: one row somewhere
      lens[B - 1] = 1;
      total = longest = 1;
    }
    const int H = 1 + static_cast<int>(next_random(st) % 3);
    const int dims[] = {8, 64, 80, 128};
    const int D = dims[next_random(st) % 4];
    const int halves[] = {1, D / 4, D / 2};
    const int half = halves[next_random(st) % 3];
    const bool interleaved = next_random(st) % 2, same = next_random(st) % 4 == 0;
    const bool array = next_random(st) % 3 != 0, in_place = next_random(st) % 3 == 0;
    const int table = longest + static_cast<int>(next_random(st) % 10);
    const std::uint64_t room = same ? table : table - longest + 1;  // offsets that fit
    std::vector<int> offs(B);
    for (int& o : offs) o = static_cast<int>(next_random(st) % room);
    const int scalar = static_cast<int>(next_random(st) % room);
    SCOPED_TRACE("case " + std::to_string(n) + ": " + to_string(t) + "/" + to_string(tt) + " B" +
                 std::to_string(B) + " total " + std::to_string(total) + " H" + std::to_string(H) +
                 " D" + std::to_string(D) + " R" + std::to_string(2 * half) +
                 (interleaved ? " interleaved" : "") + (same ? " same-position" : "") +
                 (array ? " offsets[]" : " offset") + (in_place ? " in place" : ""));
    const std::int64_t elems = static_cast<std::int64_t>(total) * (H * (D + 8) + 16);
    HostTensor x(t, {elems}), out(t, {elems}), alone(t, {elems});
    x.randomize(5000 + n);
    out.poison();
    alone.poison();
    const HostTensor x0 = x;
    HostTensor cos(tt, {table, half}), sin(tt, {table, half});
    cos.randomize(6000 + n);
    sin.randomize(7000 + n);
    const HostTensor cu = make_cu_seqlens(lens), offsets = int32s(offs);
    RotaryArgs a;
    a.x = packed(x, total, H, D);
    a.out = in_place ? a.x : packed(out, total, H, D);
    a.cos = cos.view();
    a.sin = sin.view();
    a.cu_seqlens = cu.view();
    a.max_seqlen = next_random(st) % 2 ? longest : -1;
    if (array) {
      a.seqlen_offsets = offsets.view();
    } else {
      a.seqlen_offset = scalar;
    }
    a.interleaved = interleaved;
    a.same_position = same;
    apply_rotary(a);
    // Each sequence alone: a [1, len, H, D] call over its rows of x0, into `alone`.
    int row = 0;
    for (int b = 0; b < B; ++b) {
      if (lens[b] > 0) {
        RotaryArgs one = a;
        one.cu_seqlens = TensorView{};
        one.max_seqlen = -1;
        one.seqlen_offsets = TensorView{};
        one.seqlen_offset = array ? offs[b] : scalar;
        for (auto [view, buf] : {std::pair<TensorView*, const HostTensor*>{&one.x, &x0},
                                 std::pair<TensorView*, const HostTensor*>{&one.out, &alone}}) {
          *view = packed(*buf, total, H, D);
          view->data = static_cast<char*>(view->data) +
                       row * view->stride[0] * static_cast<std::int64_t>(element_size(t));
          view->rank = 4;
          view->shape = {1, lens[b], H, D};
          view->stride = {0, view->stride[0], view->stride[1], 1};
        }
        apply_rotary(one);
      }
      row += lens[b];
    }
    // Bits equal over every row; the gaps of a separate out keep their NaN.
    const HostTensor& got = in_place ? x : out;
    int bad = 0;
    for (std::int64_t r = 0; r < total; ++r) {
      for (int h = 0; h < H; ++h) {
        const std::int64_t o = r * (H * (D + 8) + 16) + h * (D + 8);
        for (int d = 0; d < D; ++d) {
          const float g = got.get(o + d), w = alone.get(o + d);
          if (std::memcmp(&g, &w, sizeof g) != 0 && ++bad <= 5) {
            ADD_FAILURE() << "row " << r << " head " << h << " feature " << d << ": got " << g
                          << ", each sequence alone gives " << w;
          }
        }
      }
    }
    EXPECT_EQ(bad, 0);
    if (!in_place) {
      std::int64_t written = 0;
      for (std::int64_t e = 0; e < out.numel(); ++e) written += !std::isnan(out.get(e));
      EXPECT_EQ(written, static_cast<std::int64_t>(total) * H * D);
    }
  }
}

TEST(Rotary, VarlenBadInputsAreNamedAndOutUntouched) {
  HostTensor x(DType::f16, {10, 2, 64}), out(DType::f16, {10, 2, 64});
  HostTensor cos(DType::f16, {8, 16}), sin(DType::f16, {8, 16});
  x.randomize(1);
  out.randomize(2);
  cos.randomize(3);
  sin.randomize(4);
  const HostTensor out0 = out;
  auto expect_invalid = [&](const RotaryArgs& a, const std::string& words) {
    expect_invalid_argument([&] { apply_rotary(a); }, words);
    EXPECT_EQ(std::memcmp(out.data(), out0.data(), out.bytes()), 0) << words;
  };
  const HostTensor cu = int32s({0, 4, 10});
  RotaryArgs a;
  a.x = x.view();
  a.out = out.view();
  a.cos = cos.view();
  a.sin = sin.view();
  a.cu_seqlens = cu.view();
  const HostTensor late = int32s({0, 3});
  a.seqlen_offsets = late.view();
  expect_invalid(a, "seqlen_offsets[1] is 3: rows 0..5 of sequence 1 take positions 3..8, past the "
                    "8 positions of cos/sin");
  a.seqlen_offsets = TensorView{};
  for (const auto& [bounds, words] :
       {std::pair{std::vector<int>{1, 4, 10}, "cu_seqlens[0] is 1, must be 0"},
        std::pair{std::vector<int>{0, 6, 4, 10}, "cu_seqlens[2] is 4, below cu_seqlens[1] = 6"},
        std::pair{std::vector<int>{0, 4, 9}, "cu_seqlens[2] is 9, must be x's 10 rows"},
        std::pair{std::vector<int>{0, -2, 10}, "cu_seqlens[1] is -2, below cu_seqlens[0] = 0"}}) {
    const HostTensor bad = int32s(bounds);
    a.cu_seqlens = bad.view();
    expect_invalid(a, words);
  }
  a.cu_seqlens = cu.view();
  a.max_seqlen = 5;
  expect_invalid(a, "sequence 1 has 6 rows (cu_seqlens[1..2] = 4..10), more than max_seqlen 5");
  a.max_seqlen = -2;
  expect_invalid(a, "max_seqlen is -2, must be >= 0 (or -1: none)");
  a.max_seqlen = -1;
  const HostTensor one = int32s({0}), f(DType::f32, {3});
  a.cu_seqlens = one.view();
  expect_invalid(a, "cu_seqlens has shape [1], expected [batch + 1] with batch >= 1");
  a.cu_seqlens = f.view();
  expect_invalid(a, "cu_seqlens has dtype float32, expected int32");
  a.cu_seqlens = cu.view();
  const HostTensor three = int32s({0, 0, 0});
  a.seqlen_offsets = three.view();
  expect_invalid(a, "seqlen_offsets has shape [3], expected [batch = 2]");
  a.seqlen_offsets = TensorView{};
  HostTensor x4(DType::f16, {1, 10, 2, 64});
  a.x = x4.view();
  expect_invalid(a, "x has rank 4 (shape [1, 10, 2, 64]), expected rank 3 [total, H, D] (with "
                    "cu_seqlens)");
  a.x = x.view();
  TensorView cu_in_out = out.view();  // the bounds inside out's memory
  cu_in_out.dtype = DType::i32;
  cu_in_out.rank = 1;
  cu_in_out.shape = {3, 0, 0, 0};
  cu_in_out.stride = {1, 0, 0, 0};
  a.cu_seqlens = cu_in_out;
  expect_invalid(a, "out's memory overlaps cu_seqlens's");
  a.cu_seqlens = TensorView{};
  a.max_seqlen = 6;
  a.x = x4.view();
  HostTensor out4(DType::f16, {1, 10, 2, 64});
  a.out = out4.view();
  expect_invalid_argument([&] { apply_rotary(a); },
                          "max_seqlen is 6 without cu_seqlens: it bounds a varlen call's lengths");
  // And a good call after all of them writes out.
  a.x = x.view();
  a.out = out.view();
  a.cu_seqlens = cu.view();
  apply_rotary(a);
  EXPECT_NE(std::memcmp(out.data(), out0.data(), out.bytes()), 0);
}

TEST(Rotary, BadInputsAreNamedAndOutUntouched) {
  HostTensor x(DType::f16, {2, 4, 2, 64}), out(DType::f16, {2, 4, 2, 64});
  HostTensor cos(DType::f16, {8, 16}), sin(DType::f16, {8, 16});
  x.randomize(1);
  out.randomize(2);
  cos.randomize(3);
  sin.randomize(4);
  const HostTensor out0 = out;
  auto expect_invalid = [&](const RotaryArgs& a, const std::string& words) {
    expect_invalid_argument([&] { apply_rotary(a); }, words);
    EXPECT_EQ(std::memcmp(out.data(), out0.data(), out.bytes()), 0) << words;
  };
  RotaryArgs a;
  a.x = x.view();
  a.out = out.view();
  a.cos = cos.view();
  a.sin = sin.view();
  const HostTensor late = int32s({4, 5}), negative = int32s({0, -1}), three = int32s({0, 0, 0});
  a.seqlen_offsets = late.view();
  expect_invalid(a, "seqlen_offsets[1] is 5: rows 0..3 of sequence 1 take positions 5..8, past "
                    "the 8 positions of cos/sin");
  a.same_position = true;
  const HostTensor eight = int32s({0, 8});
  a.seqlen_offsets = eight.view();
  expect_invalid(a, "seqlen_offsets[1] is 8: the rows of sequence 1 take position 8, past the 8");
  a.same_position = false;
  a.seqlen_offsets = negative.view();
  expect_invalid(a, "seqlen_offsets[1] is -1, must be >= 0");
  a.seqlen_offsets = three.view();
  expect_invalid(a, "seqlen_offsets has shape [3], expected [batch = 2]");
  a.seqlen_offsets = late.view();
  a.seqlen_offset = 1;
  expect_invalid(a, "seqlen_offset is 1 beside a seqlen_offsets array: give one of the two");
  a.seqlen_offsets = TensorView{};
  a.seqlen_offset = 5;
  expect_invalid(a, "seqlen_offset is 5: rows 0..3 of sequence 0 take positions 5..8");
  a.seqlen_offset = INT64_MAX;  // o + last would wrap past the check and read before cos
  expect_invalid(a, "seqlen_offset is 9223372036854775807: rows 0..3 of sequence 0 take positions");
  a.seqlen_offset = 0;
  HostTensor wide(DType::f16, {8, 33});
  a.cos = wide.view();
  a.sin = wide.view();
  expect_invalid(a, "cos shape [8, 33] rotates 66 features, more than x's head dim 64");
  HostTensor short_sin(DType::f16, {7, 16});
  a.cos = cos.view();
  a.sin = short_sin.view();
  expect_invalid(a, "sin shape [7, 16] differs from cos shape [8, 16]");
  HostTensor bf(DType::bf16, {8, 16});
  a.cos = bf.view();
  a.sin = bf.view();
  expect_invalid(a, "cos dtype bfloat16 is neither x's (float16) nor float32");
  a.cos = cos.view();
  a.sin = sin.view();
  HostTensor out32(DType::f32, {2, 4, 2, 64});
  a.out = out32.view();
  expect_invalid(a, "out dtype float32 differs from x dtype float16");
  HostTensor out3(DType::f16, {2, 3, 2, 64});
  a.out = out3.view();
  expect_invalid(a, "out shape [2, 3, 2, 64] differs from x shape [2, 4, 2, 64]");
  // out over x's memory without being x: rows shifted by one.
  TensorView shifted = x.view();
  shifted.data = static_cast<std::uint16_t*>(x.data()) + 2 * 64;
  shifted.shape[1] = 3;
  TensorView x3 = x.view();
  x3.shape[1] = 3;
  a.x = x3;
  a.out = shifted;
  expect_invalid_argument([&] { apply_rotary(a); }, "out's memory overlaps x's without being x");
  a.x = x.view();
  TensorView broadcast = out.view();
  broadcast.stride[1] = 0;
  a.out = broadcast;
  expect_invalid(a, "out has elements that share an address");
  a.out = out.view();
  TensorView cos_in_out = out.view();
  cos_in_out.rank = 2;
  cos_in_out.shape = {8, 16, 0, 0};
  cos_in_out.stride = {16, 1, 0, 0};
  a.cos = cos_in_out;
  a.sin = cos_in_out;
  expect_invalid(a, "out's memory overlaps cos's");
  a.cos = cos.view();
  a.sin = sin.view();
  TensorView x_rank3 = x.view();
  x_rank3.rank = 3;
  a.x = x_rank3;
  expect_invalid(a, "x has rank 3");
  a.x = x.view();
  a.backend = Backend::cuda;
  expect_invalid(a, "backend cuda was requested but x is on the host (cpu)");
  a.backend = Backend::automatic;
  // And a good call after all of them writes out.
  apply_rotary(a);
  EXPECT_NE(std::memcmp(out.data(), out0.data(), out.bytes()), 0);
}

}  // namespace
}  // namespace gpuattn::testing
