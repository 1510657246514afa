// Random cases of a rotary append (gpuattn::append_kv with rotary tables and q / q_out), shared by
// the CPU and CUDA suites: the inputs, and what the call must leave, computed the other way on
// the CPU backend (apply_rotary at cache_seqlens, then a plain append).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "gpuattn/kv_cache.h"
#include "gpuattn/rotary.h"

namespace gpuattn::testing {

struct RotaryAppendCase {
  DType dtype = DType::f16;  // k_new, v_new, q
  DType cache = DType::f16;  // dtype, or int8 / e4m3 (with scales)
  int B = 1, Hkv = 1, Hq = 1, D = 64, half = 32, snew = 1, sq = 1, Sk = 48, page = 0;
  bool interleaved = false, same_position = false, f32_table = false, check = true;
  bool q_in_place = false;  // q_out is q itself

  // Both pair layouts, partial rotary dims (R not a multiple of the 8-feature chunk too), 16-bit
  // and 8-bit caches, dense or pages of 16, Sq != Snew, a random `check`.
  static RotaryAppendCase random(std::uint64_t& st, int Sk, const std::vector<int>& dims) {
    RotaryAppendCase c;
    c.dtype = next_random(st) % 2 ? DType::bf16 : DType::f16;
    const int kind = static_cast<int>(next_random(st) % 4);
    c.cache = kind == 2 ? DType::i8 : kind == 3 ? DType::e4m3 : c.dtype;
    c.B = 1 + static_cast<int>(next_random(st) % 4);
    c.Hkv = 1 + static_cast<int>(next_random(st) % 3);
    c.Hq = c.Hkv * (1 + static_cast<int>(next_random(st) % 3));
    c.D = dims[next_random(st) % dims.size()];
    const int halves[] = {1, 5, 12, c.D / 4, c.D / 2};
    c.half = halves[next_random(st) % 5];
    c.snew = 1 + static_cast<int>(next_random(st) % 4);
    c.sq = 1 + static_cast<int>(next_random(st) % 4);
    c.Sk = Sk;
    c.page = next_random(st) % 2 ? 0 : 16;
    c.interleaved = next_random(st) % 2;
    c.same_position = next_random(st) % 2;
    c.f32_table = next_random(st) % 2;
    c.check = next_random(st) % 2;
    c.q_in_place = next_random(st) % 3 == 0;
    return c;
  }
  bool quantized() const { return cache != dtype; }
  std::string name() const {
    return std::string(to_string(dtype)) + " cache " + to_string(cache) + " B" +
           std::to_string(B) + " Hq" + std::to_string(Hq) + " Hkv" + std::to_string(Hkv) + " D" +
           std::to_string(D) + " R" + std::to_string(2 * half) + " Snew" + std::to_string(snew) +
           " Sq" + std::to_string(sq) + " page " + std::to_string(page) +
           (interleaved ? " interleaved" : "") + (same_position ? " same-position" : "") +
           (f32_table ? " f32 table" : "") + (check ? "" : " unchecked") +
           (q_in_place ? " q in place" : "");
  }
};

// The inputs of one case (k / v / table: the caches before the append, dense or paged; q_out
// poisoned, unused when q is rotated in place) and the expectation (want_k / want_v after the
// append, q_want: q rotated).
struct RotaryAppendData {
  HostTensor k, v, table, kn, vn, q, q_out, cos, sin, ks, vs, lens;
  HostTensor want_k, want_v, q_want;

  RotaryAppendData(const RotaryAppendCase& c, std::uint64_t seed)
      : k(c.cache, {c.B, c.Sk, c.Hkv, c.D}),
        v(c.cache, {c.B, c.Sk, c.Hkv, c.D}),
        kn(c.dtype, {c.B, c.snew, c.Hkv, c.D}),
        vn(c.dtype, {c.B, c.snew, c.Hkv, c.D}),
        q(c.dtype, {c.B, c.sq, c.Hq, c.D}),
        q_out(c.dtype, {c.B, c.sq, c.Hq, c.D}),
        cos(c.f32_table ? DType::f32 : c.dtype, {c.Sk, c.half}),
        sin(c.f32_table ? DType::f32 : c.dtype, {c.Sk, c.half}),
        ks(DType::f32, {c.Hkv}),
        vs(DType::f32, {c.Hkv}),
        q_want(c.dtype, {c.B, c.sq, c.Hq, c.D}) {
    k.randomize(seed);
    v.randomize(seed + 1);
    kn.randomize(seed + 2);
    vn.randomize(seed + 3);
    q.randomize(seed + 4);
    q_out.poison();
    cos.randomize(seed + 5);
    sin.randomize(seed + 6);
    for (int h = 0; h < c.Hkv; ++h) {
      ks.set(h, 0.02f + 0.01f * h);
      vs.set(h, 0.03f + 0.01f * h);
    }
    std::uint64_t st = seed;
    std::vector<int> used(c.B);
    for (int& u : used) {
      u = static_cast<int>(next_random(st) % (c.Sk - std::max(c.snew, c.sq) + 1));
    }
    lens = int32s(used);
    if (c.page > 0) {
      PagedCache pc = page_cache(k, v, c.page, {}, 2, seed + 7);
      k = pc.k;
      v = pc.v;
      table = pc.table;
    }
    // The other way: apply_rotary at cache_seqlens, then the plain append.
    HostTensor kn_rot(c.dtype, {c.B, c.snew, c.Hkv, c.D});
    RotaryArgs r;
    r.cos = cos.view();
    r.sin = sin.view();
    r.seqlen_offsets = lens.view();
    r.interleaved = c.interleaved;
    r.x = kn.view();
    r.out = kn_rot.view();
    apply_rotary(r);
    r.x = q.view();
    r.out = q_want.view();
    r.same_position = c.same_position;
    apply_rotary(r);
    want_k = k;
    want_v = v;
    AppendKvArgs a;
    a.k_cache = want_k.view();
    a.v_cache = want_v.view();
    a.k_new = kn_rot.view();
    a.v_new = vn.view();
    a.cache_seqlens = lens.view();
    if (c.page > 0) a.block_table = table.view();
    if (c.quantized()) {
      a.k_scale = ks.view();
      a.v_scale = vs.view();
    }
    append_kv(a);
  }
};

}  // namespace gpuattn::testing
