// gpuattn::append_kv on CUDA: the device caches after an append equal the CPU backend's, byte for
// byte, dense and paged (pages of 1, 16 and 64 keys, shuffled), checked and unchecked (the
// unchecked append captured into a CUDA graph and replayed), and with rotary tables (k rotated on
// the way, q into q_out) equal to the CPU's apply_rotary then plain append; a bad length, page or
// rotary position is an error naming it, with the device caches (and q_out) untouched.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/rotary_append.h"
#include "common/test_util.h"
#include "cuda/cuda_test_util.h"
#include "gpuattn/kv_cache.h"
#include "gpuattn/rotary.h"

namespace gpuattn::testing {
namespace {

class AppendKvCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  }
};

struct Caches {
  HostTensor k, v, table;  // table: empty shape for a dense cache
};

void expect_device_equals(const DeviceBuffer& d, const HostTensor& want, const char* what) {
  HostTensor got = want;
  d.download(got.data());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.bytes()), 0) << what << " differs";
}

// Each set of lengths in `bad`, uploaded as cache_seqlens (lens and dlens, the view a reads), is
// refused with an invalid_argument holding its words; `untouched` then checks what must not have
// been written.
void expect_lengths_refused(const AppendKvArgs& a, HostTensor& lens, DeviceBuffer& dlens,
                            const std::vector<std::pair<std::vector<int>, std::string>>& bad,
                            const std::function<void()>& untouched) {
  for (const auto& [values, words] : bad) {
    SCOPED_TRACE(words);
    for (std::size_t b = 0; b < values.size(); ++b) {
      static_cast<std::int32_t*>(lens.data())[b] = values[b];
    }
    dlens.upload(lens.data());
    try {
      append_kv(a);
      ADD_FAILURE() << "no error; expected one naming '" << words << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    untouched();
  }
}

TEST_F(AppendKvCuda, EqualsTheCpuAppend) {
  const int B = 3, Sk = 300, Hkv = 4;
  const std::vector<int> used = {0, 150, 297};
  HostTensor lens(DType::i32, {B});
  for (int b = 0; b < B; ++b) static_cast<std::int32_t*>(lens.data())[b] = used[b];
  for (int D : {64, 128, 256}) {
    for (int page : {0, 1, 16, 64}) {  // 0: dense
      for (bool check : {true, false}) {
        const int sn = 3;
        const std::string name =
            "D" + std::to_string(D) + " page " + std::to_string(page) + (check ? "" : " unchecked");
        SCOPED_TRACE(name);
        HostTensor k(DType::bf16, {B, Sk, Hkv, D}), v(DType::bf16, {B, Sk, Hkv, D}),
            kn(DType::bf16, {B, sn, Hkv, D}), vn(DType::bf16, {B, sn, Hkv, D});
        const std::uint64_t seed = seed_of("AppendKvCuda/" + name);
        k.randomize(seed);
        v.randomize(seed + 1);
        kn.randomize(seed + 2);
        vn.randomize(seed + 3);
        Caches c{k, v, HostTensor()};
        if (page > 0) {
          const PagedCache pc = page_cache(k, v, page, {}, 3, seed + 4);
          c = Caches{pc.k, pc.v, pc.table};
        }
        // The CPU backend's append: the expectation.
        Caches want = c;
        AppendKvArgs h;
        h.k_cache = want.k.view();
        h.v_cache = want.v.view();
        h.k_new = kn.view();
        h.v_new = vn.view();
        h.cache_seqlens = lens.view();
        if (page > 0) h.block_table = want.table.view();
        append_kv(h);

        DeviceBuffer dk(c.k.bytes()), dv(c.v.bytes()), dkn(kn.bytes()), dvn(vn.bytes()),
            dlens(lens.bytes()), dtable(page > 0 ? c.table.bytes() : 4);
        dk.upload(c.k.data());
        dv.upload(c.v.data());
        dkn.upload(kn.data());
        dvn.upload(vn.data());
        dlens.upload(lens.data());
        if (page > 0) dtable.upload(c.table.data());
        AppendKvArgs a;
        a.k_cache = c.k.view(Device::cuda, dk.get());
        a.v_cache = c.v.view(Device::cuda, dv.get());
        a.k_new = kn.view(Device::cuda, dkn.get());
        a.v_new = vn.view(Device::cuda, dvn.get());
        a.cache_seqlens = lens.view(Device::cuda, dlens.get());
        if (page > 0) a.block_table = c.table.view(Device::cuda, dtable.get());
        a.check_indices = check;
        if (check) {
          append_kv(a);
        } else {  // captured and replayed twice: the same bytes land twice
          cudaStream_t stream = nullptr;
          TEST_CUDA_CHECK(cudaStreamCreate(&stream));
          a.stream = stream;
          run_captured(stream, [&] { append_kv(a); }, 2, "append");
          TEST_CUDA_CHECK(cudaStreamDestroy(stream));
        }
        TEST_CUDA_CHECK(cudaDeviceSynchronize());
        expect_device_equals(dk, want.k, "k_cache");
        expect_device_equals(dv, want.v, "v_cache");
      }
    }
  }
}

// Block tables whose rows overlap (stride 0: one row for every sequence; a batch of one with an odd
// stride) are read as the CPU reads them; their host check's copy took the stride as a pitch,
// which the runtime refused ("invalid pitch argument") for a valid call.
TEST_F(AppendKvCuda, TablesOfOverlappingRows) {
  const int Sk = 32, Hkv = 2, D = 64, page = 16, sn = 3;
  for (const int B : {1, 2}) {
    SCOPED_TRACE("B " + std::to_string(B));
    HostTensor lens(DType::i32, {B});
    for (int b = 0; b < B; ++b) static_cast<std::int32_t*>(lens.data())[b] = 10 * b;
    HostTensor k(DType::f16, {6, page, Hkv, D}), v(DType::f16, {6, page, Hkv, D}),
        kn(DType::f16, {B, sn, Hkv, D}), vn(DType::f16, {B, sn, Hkv, D}),
        table(DType::i32, {1, Sk / page});
    const std::uint64_t seed = seed_of("AppendKvCuda/overlapping/" + std::to_string(B));
    k.randomize(seed);
    v.randomize(seed + 1);
    kn.randomize(seed + 2);
    vn.randomize(seed + 3);
    static_cast<std::int32_t*>(table.data())[0] = 4;
    static_cast<std::int32_t*>(table.data())[1] = 1;
    TensorView tview = table.view();
    tview.shape[0] = B;
    tview.stride[0] = B == 1 ? 1 : 0;  // B 1: any stride; B 2: both sequences on row 0
    HostTensor wk = k, wv = v;
    AppendKvArgs h;
    h.k_cache = wk.view();
    h.v_cache = wv.view();
    h.k_new = kn.view();
    h.v_new = vn.view();
    h.cache_seqlens = lens.view();
    h.block_table = tview;
    append_kv(h);
    DeviceBuffer dk(k.bytes()), dv(v.bytes()), dkn(kn.bytes()), dvn(vn.bytes()),
        dlens(lens.bytes()), dtable(table.bytes());
    dk.upload(k.data());
    dv.upload(v.data());
    dkn.upload(kn.data());
    dvn.upload(vn.data());
    dlens.upload(lens.data());
    dtable.upload(table.data());
    AppendKvArgs a;
    a.k_cache = k.view(Device::cuda, dk.get());
    a.v_cache = v.view(Device::cuda, dv.get());
    a.k_new = kn.view(Device::cuda, dkn.get());
    a.v_new = vn.view(Device::cuda, dvn.get());
    a.cache_seqlens = lens.view(Device::cuda, dlens.get());
    a.block_table = tview;
    a.block_table.device = Device::cuda;
    a.block_table.data = dtable.get();
    EXPECT_NO_THROW(append_kv(a));
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    expect_device_equals(dk, wk, "k_cache");
    expect_device_equals(dv, wv, "v_cache");
  }
}

TEST_F(AppendKvCuda, BadLengthsAndPagesAreNamedAndTheCachesUntouched) {
  const int B = 2, Hkv = 2, D = 64, sn = 4, page = 8, pages = 8;
  HostTensor pool(DType::f16, {pages, page, Hkv, D}), kn(DType::f16, {B, sn, Hkv, D}),
      lens(DType::i32, {B}), table(DType::i32, {B, 4});
  pool.randomize(1);
  kn.randomize(2);
  const std::vector<int> entries = {0, 1, 2, 3, 4, 5, 6, 99};
  for (int i = 0; i < 8; ++i) static_cast<std::int32_t*>(table.data())[i] = entries[i];
  DeviceBuffer dk(pool.bytes()), dv(pool.bytes()), dkn(kn.bytes()), dlens(lens.bytes()),
      dtable(table.bytes());
  dk.upload(pool.data());
  dv.upload(pool.data());
  dkn.upload(kn.data());
  dtable.upload(table.data());
  AppendKvArgs a;
  a.k_cache = pool.view(Device::cuda, dk.get());
  a.v_cache = pool.view(Device::cuda, dv.get());
  a.k_new = kn.view(Device::cuda, dkn.get());
  a.v_new = kn.view(Device::cuda, dkn.get());
  a.cache_seqlens = lens.view(Device::cuda, dlens.get());
  a.block_table = table.view(Device::cuda, dtable.get());
  const std::vector<std::pair<std::vector<int>, std::string>> bad = {
      {{0, 29}, "cache_seqlens[1] is 29: with 4 new keys it must be in [0, 28]"},
      {{-3, 0}, "cache_seqlens[0] is -3"},
      {{0, 28}, "block_table[1][3] is 99"},
  };
  expect_lengths_refused(a, lens, dlens, bad, [&] {
    expect_device_equals(dk, pool, "k_cache");
    expect_device_equals(dv, pool, "v_cache");
  });
}

// The fused rotation against the CPU's two steps (apply_rotary at cache_seqlens, then the plain
// append; common/rotary_append.h), byte for byte: dense and paged caches of 16 bits, int8 and
// e4m3, both pair layouts, partial rotary dims (R not a multiple of the 8-feature chunk), float32
// and 16-bit tables, q per row or at one position, checked and unchecked (captured into a graph).
TEST_F(AppendKvCuda, RotaryEqualsRotatingFirst) {
  std::uint64_t st = 31337;
  for (int n = 0; n < 24; ++n) {
    const RotaryAppendCase c = RotaryAppendCase::random(st, 200, {64, 128, 256});
    const std::string name = "case " + std::to_string(n) + ": " + c.name();
    SCOPED_TRACE(name);
    const RotaryAppendData d(c, seed_of("AppendKvCuda/rotary/" + name));
    std::vector<DeviceBuffer> bufs;
    auto on_device = [&](const HostTensor& t) {
      bufs.emplace_back(t.bytes());
      bufs.back().upload(t.data());
      return t.view(Device::cuda, bufs.back().get());
    };
    bufs.reserve(12);
    AppendKvArgs a;
    a.k_cache = on_device(d.k);
    a.v_cache = on_device(d.v);
    a.k_new = on_device(d.kn);
    a.v_new = on_device(d.vn);
    a.cache_seqlens = on_device(d.lens);
    if (c.page > 0) a.block_table = on_device(d.table);
    if (c.quantized()) {
      a.k_scale = on_device(d.ks);
      a.v_scale = on_device(d.vs);
    }
    a.rotary_cos = on_device(d.cos);
    a.rotary_sin = on_device(d.sin);
    a.rotary_interleaved = c.interleaved;
    a.q = on_device(d.q);
    a.q_out = c.q_in_place ? a.q : on_device(d.q_out);
    a.q_same_position = c.same_position;
    a.check_indices = c.check;
    if (c.check) {
      append_kv(a);
    } else {  // captured and replayed twice: the same bytes land twice (in place: once)
      cudaStream_t stream = nullptr;
      TEST_CUDA_CHECK(cudaStreamCreate(&stream));
      a.stream = stream;
      run_captured(stream, [&] { append_kv(a); }, c.q_in_place ? 1 : 2, "rotary append");
      TEST_CUDA_CHECK(cudaStreamDestroy(stream));
    }
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    auto expect_equals = [&](const TensorView& got, const HostTensor& want, const char* what) {
      HostTensor host = want;
      TEST_CUDA_CHECK(cudaMemcpy(host.data(), got.data, want.bytes(), cudaMemcpyDeviceToHost));
      EXPECT_EQ(std::memcmp(host.data(), want.data(), want.bytes()), 0) << what << " differs";
    };
    expect_equals(a.k_cache, d.want_k, "k_cache");
    expect_equals(a.v_cache, d.want_v, "v_cache");
    expect_equals(a.q_out, d.q_want, "q_out");
    // q apart from the caches: rotated in the append's own launch (captured, not run).
    EXPECT_EQ(unchecked_kernels(a, [](const AppendKvArgs& u) { append_kv(u); }, "rotary append"),
              1);
  }
}

// q lying in the cache the append writes (a view of cached rows where the new keys land) is
// rotated before the append, in a launch of its own (two kernels captured), in stream order:
// q_out equals the CPU's from a copy of q.
TEST_F(AppendKvCuda, RotaryQInACacheIsReadBeforeTheAppend) {
  const int B = 2, Sk = 16, Hkv = 2, D = 64;
  HostTensor k(DType::bf16, {B, Sk, Hkv, D}), v(DType::bf16, {B, Sk, Hkv, D}),
      kn(DType::bf16, {B, 1, Hkv, D}), vn(DType::bf16, {B, 1, Hkv, D}),
      cos(DType::bf16, {16, 32}), sin(DType::bf16, {16, 32}), q(DType::bf16, {B, 1, Hkv, D});
  for (HostTensor* x : {&k, &v, &kn, &vn, &cos, &sin}) x->randomize(x->bytes() + 11);
  const HostTensor lens = int32s({3, 3});
  for (int b = 0; b < B; ++b) {  // q: row 3 of each sequence's cache, where the new key lands
    std::memcpy(static_cast<std::uint16_t*>(q.data()) + b * Hkv * D,
                static_cast<const std::uint16_t*>(k.data()) + (b * Sk + 3) * Hkv * D, Hkv * D * 2);
  }
  HostTensor want_k = k, want_v = v, want_q(DType::bf16, {B, 1, Hkv, D});
  AppendKvArgs h;
  h.k_cache = want_k.view();
  h.v_cache = want_v.view();
  h.k_new = kn.view();
  h.v_new = vn.view();
  h.cache_seqlens = lens.view();
  h.rotary_cos = cos.view();
  h.rotary_sin = sin.view();
  h.q = q.view();
  h.q_out = want_q.view();
  append_kv(h);
  DeviceBuffer dk(k.bytes()), dv(v.bytes()), dkn(kn.bytes()), dvn(vn.bytes()), dcos(cos.bytes()),
      dsin(sin.bytes()), dlens(lens.bytes()), dq_out(want_q.bytes());
  dk.upload(k.data());
  dv.upload(v.data());
  dkn.upload(kn.data());
  dvn.upload(vn.data());
  dcos.upload(cos.data());
  dsin.upload(sin.data());
  dlens.upload(lens.data());
  AppendKvArgs a;
  a.k_cache = k.view(Device::cuda, dk.get());
  a.v_cache = v.view(Device::cuda, dv.get());
  a.k_new = kn.view(Device::cuda, dkn.get());
  a.v_new = vn.view(Device::cuda, dvn.get());
  a.cache_seqlens = lens.view(Device::cuda, dlens.get());
  a.rotary_cos = cos.view(Device::cuda, dcos.get());
  a.rotary_sin = sin.view(Device::cuda, dsin.get());
  a.q = k.view(Device::cuda, static_cast<std::uint16_t*>(dk.get()) + 3 * Hkv * D);
  a.q.shape = {B, 1, Hkv, D};
  a.q_out = want_q.view(Device::cuda, dq_out.get());
  EXPECT_EQ(unchecked_kernels(a, [](const AppendKvArgs& u) { append_kv(u); },
                              "rotary append, q in a cache"),
            2);
  append_kv(a);
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  expect_device_equals(dq_out, want_q, "q_out");
  expect_device_equals(dk, want_k, "k_cache");
}

TEST_F(AppendKvCuda, ARotaryPositionPastTheTableIsNamedAndNothingWritten) {
  const int B = 2, Sk = 16, Hkv = 2, D = 64;
  HostTensor k(DType::f16, {B, Sk, Hkv, D}), kn(DType::f16, {B, 1, Hkv, D}),
      q(DType::f16, {B, 3, 4, D}), cos(DType::f16, {12, 32});
  for (HostTensor* x : {&k, &kn, &q, &cos}) x->randomize(x->bytes());
  DeviceBuffer dk(k.bytes()), dv(k.bytes()), dkn(kn.bytes()), dq(q.bytes()), dq_out(q.bytes()),
      dcos(cos.bytes()), dlens(8);
  dk.upload(k.data());
  dv.upload(k.data());
  dkn.upload(kn.data());
  dq.upload(q.data());
  dq_out.upload(q.data());
  dcos.upload(cos.data());
  AppendKvArgs a;
  a.k_cache = k.view(Device::cuda, dk.get());
  a.v_cache = k.view(Device::cuda, dv.get());
  a.k_new = kn.view(Device::cuda, dkn.get());
  a.v_new = kn.view(Device::cuda, dkn.get());
  HostTensor lens(DType::i32, {B});
  a.cache_seqlens = lens.view(Device::cuda, dlens.get());
  a.rotary_cos = cos.view(Device::cuda, dcos.get());
  a.rotary_sin = cos.view(Device::cuda, dcos.get());
  a.q = q.view(Device::cuda, dq.get());
  a.q_out = q.view(Device::cuda, dq_out.get());
  const std::vector<std::pair<std::vector<int>, std::string>> bad = {
      {{0, 12}, "cache_seqlens[1] is 12: new key row 0 of sequence 1 takes rotary position 12"},
      {{10, 0}, "cache_seqlens[0] is 10: query rows 0..2 of sequence 0 take rotary positions "
                "10..12, past the 12 positions of rotary_cos/rotary_sin"},
  };
  expect_lengths_refused(a, lens, dlens, bad, [&] {
    expect_device_equals(dk, k, "k_cache");
    expect_device_equals(dv, k, "v_cache");
    expect_device_equals(dq_out, q, "q_out");
  });
}

// A host array marked as device memory is named, and reported from append_kv.
TEST_F(AppendKvCuda, HostMemoryInADeviceViewIsNamed) {
  HostTensor cache(DType::f16, {2, 16, 2, 64}), kn(DType::f16, {2, 1, 2, 64}),
      lens(DType::i32, {2});
  DeviceBuffer dcache(cache.bytes()), dkn(kn.bytes()), dlens(lens.bytes());
  AppendKvArgs a;
  a.k_cache = cache.view(Device::cuda, dcache.get());
  a.v_cache = cache.view(Device::cuda, cache.data());  // host memory
  a.k_new = kn.view(Device::cuda, dkn.get());
  a.v_new = kn.view(Device::cuda, dkn.get());
  a.cache_seqlens = lens.view(Device::cuda, dlens.get());
  try {
    append_kv(a);
    ADD_FAILURE() << "no error for a host v_cache";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gpuattn::append_kv: v_cache pointer"), std::string::npos) << what;
    EXPECT_NE(what.find("is host memory"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace gpuattn::testing
