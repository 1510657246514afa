// The forward tile configuration table and its selection rule (core/tile_config.h): the pick at
// hand-written points (real GPUs and shapes, each expectation a literal name worked out by hand),
// the 2-CTAs-per-SM and shared-memory boundaries in concrete numbers, properties of the rule on a
// grid of devices, masks and shapes, and every entry says why. No test here computes the rule a
// second way: a change of the rule has to change the expectations it breaks, one by one.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/decode_split.h"
#include "core/tile_config.h"

namespace gpuattn {
namespace {

FwdShape shape(int sm_major, bool sm90, int num_sms, int seqlen_q, int batch, int hq) {
  FwdShape s;
  s.sm_major = sm_major;
  s.sm90_kernel_available = sm90;
  s.num_sms = num_sms;
  s.head_dim = 128;
  s.seqlen_q = seqlen_q;
  s.seqlen_k = seqlen_q;
  s.batch = batch;
  s.hq = hq;
  return s;
}

FwdKernel pick(const FwdShape& s) {
  return select_fwd_config(s).kernel;
}

TEST(TileConfig, TableIsIndexedByKernelAndExplained) {
  ASSERT_EQ(kFwdTileConfigs.size(), 16u);
  for (std::size_t i = 0; i < kFwdTileConfigs.size(); ++i) {
    const TileConfig& c = kFwdTileConfigs[i];
    EXPECT_EQ(static_cast<std::size_t>(c.kernel), i);
    EXPECT_EQ(&tile_config(c.kernel), &c);
    ASSERT_NE(c.name, nullptr);
    EXPECT_GT(std::strlen(c.name), 0u);
    ASSERT_NE(c.why, nullptr) << c.name;
    EXPECT_GT(std::strlen(c.why), 40u) << c.name << ": a why, not a label";
    EXPECT_GT(c.block_m, 0) << c.name;
    EXPECT_GT(c.block_n, 0) << c.name;
    EXPECT_GT(c.warps, 0) << c.name;
    EXPECT_GT(c.stages, 0) << c.name;
    // Two CTAs an SM: the one-consumer head-dim-64 kernel only.
    EXPECT_EQ(c.ctas_per_sm, c.kernel == FwdKernel::sm90_ws_64x128_2cta ? 2 : 1) << c.name;
  }
}

TEST(TileConfig, TableHoldsTheCompiledTiles) {
  const TileConfig& sm90 = tile_config(FwdKernel::sm90_ws_128x128);
  EXPECT_EQ(sm90.block_m, 128);  // 2 consumer warpgroups x 64 rows
  EXPECT_EQ(sm90.block_n, 128);
  EXPECT_EQ(sm90.warps, 12);  // + the producer warpgroup
  EXPECT_EQ(sm90.stages, 2);
  const TileConfig& d256 = tile_config(FwdKernel::sm90_ws_128x64_d256);
  EXPECT_EQ(d256.block_m, 128);
  EXPECT_EQ(d256.block_n, 64);  // O's 128 registers per thread leave room for S and P of 64 keys
  EXPECT_EQ(d256.warps, 12);
  EXPECT_EQ(d256.stages, 2);
  const TileConfig& comp = tile_config(FwdKernel::sm90_ws_128x64_compensated);
  EXPECT_EQ(comp.block_m, 128);
  EXPECT_EQ(comp.block_n, 64);  // O, its Kahan terms and a fresh P V slab leave room for 64 keys
  EXPECT_EQ(comp.warps, 12);
  EXPECT_EQ(comp.stages, 2);
  const TileConfig& d256_80 = tile_config(FwdKernel::sm90_ws_128x80_d256);
  EXPECT_EQ(d256_80.block_m, 128);
  EXPECT_EQ(d256_80.block_n, 80);  // S 40 + P 20 + O 128 registers; K/V stages of 40 KB
  EXPECT_EQ(d256_80.warps, 12);
  EXPECT_EQ(d256_80.stages, 2);
  const TileConfig& d64 = tile_config(FwdKernel::sm90_ws_192x128);
  EXPECT_EQ(d64.block_m, 192);  // 3 consumer warpgroups x 64 rows
  EXPECT_EQ(d64.block_n, 128);
  EXPECT_EQ(d64.warps, 16);  // + the producer warpgroup
  EXPECT_EQ(d64.stages, 2);
  EXPECT_EQ(tile_config(FwdKernel::sm80_128x64).block_m, 128);
  EXPECT_EQ(tile_config(FwdKernel::sm80_64x64).block_m, 64);
  EXPECT_EQ(tile_config(FwdKernel::sm80_64x64_compensated).block_m, 64);
  for (FwdKernel k :
       {FwdKernel::sm80_128x64, FwdKernel::sm80_64x64, FwdKernel::sm80_64x64_compensated}) {
    EXPECT_EQ(tile_config(k).block_n, 64);
    EXPECT_EQ(tile_config(k).warps, 4);
    EXPECT_EQ(tile_config(k).stages, 2);
  }
}

TEST(TileConfig, HopperTakesTheWgmmaKernelForEveryStandardCall) {
  for (bool dense : {true, false}) {  // false: a window, global tokens or a block layout
    for (bool causal : {false, true}) {
      FwdShape s = shape(9, true, 132, 4096, 4, 16);
      s.dense_or_causal = dense;
      s.causal = causal;
      EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << dense << causal;
      s.seqlen_q = 65;  // however small the grid (64 rows or fewer: decode_16x64, below)
      s.batch = 1;
      s.hq = 1;
      EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << dense << causal;
      s.seqlen_q = 1;  // decode takes dense and causal calls; masks stay on the wgmma kernel
      EXPECT_EQ(pick(s), dense ? FwdKernel::decode_16x64 : FwdKernel::sm90_ws_128x128)
          << dense << causal;
    }
  }
}

// A quantized KV cache (int8 / FP8 E4M3): the decode calls of decode_16x64 take the 8-bit kernel,
// on any GPU from sm 8; every other call is picked as its dequantized 16-bit copy's.
TEST(TileConfig, QuantizedCacheDecodeTakesTheEightBitKernel) {
  FwdShape s = shape(9, true, 132, 1, 8, 32);
  s.hkv = 8;
  s.seqlen_k = 4096;
  s.kv_quantized = true;
  EXPECT_EQ(pick(s), FwdKernel::decode_q8_16x64);
  s.seqlen_q = 17;  // 68 rows a KV head: the copy's prefill kernel
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
  s.seqlen_q = 1;
  s.precision = Precision::compensated;
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated);
  s.precision = Precision::standard;
  s.sm_major = 8;
  s.sm90_kernel_available = false;
  EXPECT_EQ(pick(s), FwdKernel::decode_q8_16x64);
  s.kv_quantized = false;
  EXPECT_EQ(pick(s), FwdKernel::decode_16x64);
  const TileConfig& d = tile_config(FwdKernel::decode_q8_16x64);
  EXPECT_EQ(d.block_m, 16);
  EXPECT_EQ(d.block_n, 64);
  EXPECT_EQ(d.warps, 4);
  EXPECT_STREQ(d.name, "decode_q8_16x64");
}

// Decode: at most 64 query rows per KV head (seqlen_q x hq / hkv), standard precision, no mask
// beyond causal, on every GPU from sm 8 whose shared memory holds the kernel's.
TEST(TileConfig, DecodeTakesFewRowsPerKvHead) {
  for (bool causal : {false, true}) {
    FwdShape s = shape(9, true, 132, 1, 8, 32);  // compare_torch's B8 Hq32 Hkv8 Sq1 Sk4096 D128
    s.hkv = 8;
    s.seqlen_k = 4096;
    s.causal = causal;
    EXPECT_EQ(pick(s), FwdKernel::decode_16x64) << causal;
    s.seqlen_q = 16;  // 16 x 4 = 64 rows
    EXPECT_EQ(pick(s), FwdKernel::decode_16x64) << causal;
    s.seqlen_q = 17;  // 68 rows: the prefill kernel
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.seqlen_q = 1;
    s.hq = 64;  // MQA 64:1 with hkv 1: 64 rows
    s.hkv = 1;
    EXPECT_EQ(pick(s), FwdKernel::decode_16x64) << causal;
    s.hq = 128;  // 128 rows
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.hq = 32;
    s.hkv = 8;
    s.dense_or_causal = false;  // a window, global tokens or a block layout
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.dense_or_causal = true;
    s.precision = Precision::compensated;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated) << causal;
    s.precision = Precision::standard;
    s.decode_allowed = false;  // GPUATTN_KERNEL=sm80 or sm90_*
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.sm90_kernel_available = false;
    EXPECT_EQ(pick(s), FwdKernel::sm80_64x64) << causal;
    s.decode_allowed = true;
    EXPECT_EQ(pick(s), FwdKernel::decode_16x64) << causal;  // the portable kernel, any GPU
    for (int major : {8, 10, 12}) {
      s.sm_major = major;
      EXPECT_EQ(pick(s), FwdKernel::decode_16x64) << major;
    }
    // 99 KB per block (sm_86, sm_89, sm_120): 68 KB at head dim 128 fit, 136 KB at 256 do not.
    EXPECT_EQ(DecodePlan::smem_bytes(64), 51200);   // 3 stages
    EXPECT_EQ(DecodePlan::smem_bytes(128), 69632);  // 2 stages
    EXPECT_EQ(DecodePlan::smem_bytes(256), 139264);
    s.max_smem_per_block = 99 * 1024;
    EXPECT_EQ(pick(s), FwdKernel::decode_16x64) << causal;
    s.head_dim = 256;
    EXPECT_EQ(pick(s), FwdKernel::sm80_64x64) << causal;
    s.max_smem_per_block = 163 * 1024;
    EXPECT_EQ(pick(s), FwdKernel::decode_16x64) << causal;
  }
  const TileConfig& d = tile_config(FwdKernel::decode_16x64);
  EXPECT_EQ(d.block_m, 16);  // packed rows of a GQA group: one mma.sync m16 tile
  EXPECT_EQ(d.block_n, 64);  // 4 warps x 16 keys
  EXPECT_EQ(d.warps, 4);
  EXPECT_EQ(d.stages, 2);
}

// ALiBi calls on Hopper take the kernels whose dense loop adds the bias (FwdTraits::kAlibi): at
// head dim 64 the 3-consumer kernel where it pays (its ALiBi instantiation) and the 2-consumer one
// elsewhere (not the two-CTA or 4-stage kernels; GPUATTN_KERNEL forces 3 or 2 consumers only), at
// 128 and 256 the plain call's (the 3-stage D128 kernel has instantiations with the bias too).
TEST(TileConfig, HopperAlibiCallsTakeTheKernelsWithTheBias) {
  for (bool causal : {false, true}) {
    FwdShape s = shape(9, true, 132, 4096, 4, 16);  // B4 H16 S4096: 3 consumers pay (below)
    s.head_dim = 64;
    s.causal = causal;
    s.alibi = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_192x128) << causal;
    s.force_128x128 = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_128x128 = false;
    s.force_64x128_2cta = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_192x128) << causal;
    s.force_64x128_2cta = false;
    s = shape(9, true, 132, 1024, 1, 16);  // one wave either way: plain calls take two CTAs
    s.head_dim = 64;
    s.causal = causal;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_64x128_2cta) << causal;
    s.alibi = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_192x128 = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_192x128) << causal;
    s.force_192x128 = false;
    s.force_128x128_s4 = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_128x128_s4 = false;
    s.head_dim = 128;  // 1024 keys: the 3-stage kernel
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s3) << causal;
    s.force_192x128 = true;  // which exists at head dim 64 only
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s3) << causal;
    s.force_192x128 = false;
    s.force_128x128 = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_128x128 = false;
    s.dense_or_causal = false;  // a window alone: the 2-stage kernel's dense loop, forced or not
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_128x128_s3 = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_128x128_s3 = false;
    s.dense_or_causal = true;
    s.seqlen_q = s.seqlen_k = 4096;  // past kD128ThreeStageMaxKeys: the 2-stage kernel
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_128x128_s3 = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s3) << causal;
    s.force_128x128_s3 = false;
    s.dense_or_causal = false;  // a window alone: the 2-stage kernel's dense loop
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.dense_or_causal = true;
    for (int keys : {1024, 4096}) {
      s.seqlen_q = s.seqlen_k = keys;
      s.head_dim = 256;
      s.alibi = false;
      const FwdKernel plain = pick(s);
      s.alibi = true;
      EXPECT_EQ(pick(s), plain) << causal << " " << keys;
    }
  }
}

TEST(TileConfig, HopperTakesThreeConsumersForLargeDenseAndCausalGridsAtHeadDim64) {
  for (bool causal : {false, true}) {
    // B4 H16 S4096: 22 x 64 = 1408 items of 192 rows, 11 waves on 132 SMs, against 2048 items of
    // 128 rows, 16 waves: 5 x 11 < 4 x 16.
    FwdShape s = shape(9, true, 132, 4096, 4, 16);
    s.head_dim = 64;
    s.causal = causal;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_192x128) << causal;
    s.dense_or_causal = false;  // a window, global tokens or a block layout: 2 consumers
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_192x128 = true;  // GPUATTN_KERNEL=sm90_ws_192x128 does not change that
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_192x128 = false;
    s.dense_or_causal = true;
    s.force_128x128 = true;  // GPUATTN_KERNEL=sm90_ws_128x128: the 2-consumer kernel
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_128x128 = false;
    s.dense_or_causal = false;
    s.precision = Precision::compensated;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated) << causal;
    s.dense_or_causal = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated) << causal;
    s.force_192x128 = true;  // nor of a compensated call
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated) << causal;
    s.force_192x128 = false;
    s.precision = Precision::standard;
    s.sm90_kernel_available = false;  // GPUATTN_KERNEL=sm80: 2048 row blocks of 128
    EXPECT_EQ(pick(s), FwdKernel::sm80_128x64) << causal;
    // One row block: one consumer, two CTAs an SM (two_ctas_pay); 2 consumers (4 K/V stages if
    // causal) under GPUATTN_KERNEL=sm90_ws_128x128; 3 when GPUATTN_KERNEL=sm90_ws_192x128 forces
    // them.
    s = shape(9, true, 132, 65, 1, 1);
    s.head_dim = 64;
    s.causal = causal;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_64x128_2cta) << causal;
    s.force_128x128 = true;  // (the 2-stage kernel even when causal)
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << causal;
    s.force_128x128 = false;
    s.force_64x128_2cta = true;  // forcing it changes nothing here
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_64x128_2cta) << causal;
    s.force_64x128_2cta = false;
    s.force_192x128 = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_192x128) << causal;
    s.head_dim = 128;  // which exists at head dim 64 only (65 keys: the 3-stage D128 kernel)
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s3) << causal;
  }
}

// GPUATTN_KERNEL, restored afterwards.
class KernelEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* env = std::getenv("GPUATTN_KERNEL");
    had_ = env != nullptr;
    if (had_) saved_ = env;
  }
  void TearDown() override {
    if (had_) {
      setenv("GPUATTN_KERNEL", saved_.c_str(), 1);
    } else {
      unsetenv("GPUATTN_KERNEL");
    }
  }

 private:
  bool had_ = false;
  std::string saved_;
};

// Each choice sets its own force flag alone, and only "auto" lets decode calls take decode_16x64.
TEST(TileConfig, ApplyKernelChoiceSetsOneForceAndDecodeOnlyOnAuto) {
  const KernelChoice all[] = {KernelChoice::automatic,
                              KernelChoice::sm80,
                              KernelChoice::sm90_ws_192x128,
                              KernelChoice::sm90_ws_128x128,
                              KernelChoice::sm90_fp8_128x128_d256,
                              KernelChoice::sm90_ws_64x128_2cta,
                              KernelChoice::sm90_ws_128x128_s4,
                              KernelChoice::sm90_ws_128x128_s3};
  for (const KernelChoice c : all) {
    FwdShape s;
    s.force_192x128 = s.force_128x128 = s.force_64x128_2cta = s.force_128x128_s4 = true;
    s.force_128x128_s3 = true;
    apply_kernel_choice(s, c);
    const int i = static_cast<int>(c);
    EXPECT_EQ(s.decode_allowed, c == KernelChoice::automatic) << i;
    EXPECT_EQ(s.force_192x128, c == KernelChoice::sm90_ws_192x128) << i;
    EXPECT_EQ(s.force_128x128, c == KernelChoice::sm90_ws_128x128) << i;
    EXPECT_EQ(s.force_64x128_2cta, c == KernelChoice::sm90_ws_64x128_2cta) << i;
    EXPECT_EQ(s.force_128x128_s4, c == KernelChoice::sm90_ws_128x128_s4) << i;
    EXPECT_EQ(s.force_128x128_s3, c == KernelChoice::sm90_ws_128x128_s3) << i;
  }
}

TEST_F(KernelEnv, NamesTheChoiceOrTheBadValue) {
  unsetenv("GPUATTN_KERNEL");
  EXPECT_EQ(kernel_choice_from_env(), KernelChoice::automatic);
  setenv("GPUATTN_KERNEL", "auto", 1);
  EXPECT_EQ(kernel_choice_from_env(), KernelChoice::automatic);
  setenv("GPUATTN_KERNEL", "sm80", 1);
  EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm80);
  setenv("GPUATTN_KERNEL", "sm90_ws_192x128", 1);
  EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm90_ws_192x128);
  setenv("GPUATTN_KERNEL", "sm90_ws_128x128", 1);
  EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm90_ws_128x128);
  setenv("GPUATTN_KERNEL", "sm90_fp8_128x128_d256", 1);
  EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm90_fp8_128x128_d256);
  setenv("GPUATTN_KERNEL", "sm90_ws_64x128_2cta", 1);
  EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm90_ws_64x128_2cta);
  setenv("GPUATTN_KERNEL", "sm90_ws_128x128_s4", 1);
  EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm90_ws_128x128_s4);
  setenv("GPUATTN_KERNEL", "sm90_ws_128x128_s3", 1);
  EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm90_ws_128x128_s3);
  for (const char* bad : {"", "SM80", "sm90", "sm90_ws_128x64_d256", "sm90_ws_128x128 "}) {
    setenv("GPUATTN_KERNEL", bad, 1);
    try {
      kernel_choice_from_env();
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("GPUATTN_KERNEL='" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

// A call reads GPUATTN_KERNEL once (KernelChoiceScope): while its scope lives, a change of the
// environment does not reach the call's later picks; scopes nest; after them the variable is read
// again. A bad value is refused when the scope opens.
TEST_F(KernelEnv, ACallReadsTheChoiceOnce) {
  setenv("GPUATTN_KERNEL", "sm80", 1);
  {
    const KernelChoiceScope call;
    setenv("GPUATTN_KERNEL", "sm90_ws_192x128", 1);
    EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm80);
    {
      const KernelChoiceScope inner;
      EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm90_ws_192x128);
    }
    EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm80);
  }
  EXPECT_EQ(kernel_choice_from_env(), KernelChoice::sm90_ws_192x128);
  setenv("GPUATTN_KERNEL", "bogus", 1);
  EXPECT_THROW(KernelChoiceScope{}, Error);
  EXPECT_THROW(kernel_choice_from_env(), Error);  // no scope left open by the failed one
}

// GPUATTN_KERNEL=sm90_ws_128x128_s3: the 3-stage head-dim-128 kernel at any length, for the dense
// and causal standard-precision calls it runs; other calls keep the rule.
TEST(TileConfig, ForcedThreeStagesTakeEveryLengthAtHeadDim128) {
  for (const int keys : {2048, 2049, 32768}) {
    FwdShape s = shape(9, true, 132, keys, 4, 16);
    s.head_dim = 128;
    s.force_128x128_s3 = true;
    for (const bool causal : {false, true}) {
      for (const bool varlen : {false, true}) {  // varlen too (the max length)
        s.causal = causal;
        s.varlen = varlen;
        EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s3)
            << keys << " causal " << causal << " varlen " << varlen;
      }
    }
    s.varlen = false;
    s.force_128x128_s3 = false;  // the rule: 3 stages up to kD128ThreeStageMaxKeys keys only
    EXPECT_EQ(pick(s), keys <= kD128ThreeStageMaxKeys ? FwdKernel::sm90_ws_128x128_s3
                                                      : FwdKernel::sm90_ws_128x128)
        << keys;
    s.force_128x128_s3 = true;
    s.dense_or_causal = false;  // a window or a block layout: not this kernel's
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << keys;
    s.dense_or_causal = true;
    s.precision = Precision::compensated;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated) << keys;
    s.precision = Precision::standard;
    s.head_dim = 64;  // other head dims as "auto"
    s.force_128x128_s3 = false;
    const FwdKernel d64 = pick(s);
    s.force_128x128_s3 = true;
    EXPECT_EQ(pick(s), d64) << keys;
    s.head_dim = 256;
    EXPECT_EQ(pick(s), keys >= kD256WideTileMinKeys ? FwdKernel::sm90_ws_128x80_d256
                                                    : FwdKernel::sm90_ws_128x64_d256)
        << keys;
  }
}

TEST(TileConfig, HopperTakesFourStagesForCausalCallsOnTwoConsumersAtHeadDim64) {
  // B32 H32 S512 causal: under 2048 rows, so 2 consumers; causal and no other mask: 4 stages.
  FwdShape s = shape(9, true, 132, 512, 32, 32);
  s.head_dim = 64;
  s.causal = true;
  EXPECT_TRUE(d64_four_stages(s));
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s4);
  s.dense_or_causal = false;  // a causal window, global tokens or a block layout: 2 stages
  EXPECT_FALSE(d64_four_stages(s));
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
  s.dense_or_causal = true;
  s.force_128x128 = true;  // GPUATTN_KERNEL=sm90_ws_128x128: the 2-stage kernel
  EXPECT_FALSE(d64_four_stages(s));
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
  s.force_128x128 = false;
  s.causal = false;  // dense non-causal: 3 consumers here (24 against 32 waves)
  EXPECT_FALSE(d64_four_stages(s));
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_192x128);
  s.batch = 1;  // and on a small grid (128 items of 64 rows) one consumer, two CTAs an SM
  s.hq = 16;
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_64x128_2cta);
  s.causal = true;  // causal too: one wave of them
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_64x128_2cta);
  s.hq = 33;  // 264 items: the last count of one wave
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_64x128_2cta);
  s.hq = 34;  // 272: 4 K/V stages on 2 consumers
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s4);
  s.hq = 16;
  s.precision = Precision::compensated;
  EXPECT_FALSE(d64_four_stages(s));
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated);
  s.precision = Precision::standard;
  s.head_dim = 128;  // head dim 128: the 3-stage kernel up to 2048 keys
  EXPECT_FALSE(d64_four_stages(s));
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s3);
  s.head_dim = 64;
  s.seqlen_q = s.seqlen_k = kD64FourStageMaxRows - 1;  // the last row count it takes
  EXPECT_TRUE(d64_four_stages(s));
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s4);
  s.seqlen_q = kD64FourStageMaxRows;  // from 2048 rows on a small grid (B1 H16): 2 stages
  EXPECT_FALSE(d64_four_stages(s));
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
  s.seqlen_q = s.seqlen_k = 4096;  // causal from 2048 rows, on a grid that fills the GPU: 3
  s.batch = 4;
  s.hq = 32;
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_192x128);
  s.force_128x128_s4 = true;  // GPUATTN_KERNEL=sm90_ws_128x128_s4: every causal call it runs
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s4);
  s.batch = 1;  // a small grid too (the rule: sm90_ws_64x128_2cta)
  s.hq = 1;
  s.seqlen_q = s.seqlen_k = 512;
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s4);
  s.varlen = true;
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s4);
  s.varlen = false;
  s.causal = false;  // other calls as the rule takes them
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_64x128_2cta);
  s.causal = true;
  s.dense_or_causal = false;  // a mask beside causal: the masked 2-stage kernel
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
  s.dense_or_causal = true;
  s.precision = Precision::compensated;
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated);
  s.precision = Precision::standard;
  s.head_dim = 128;
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128_s3);
  s.head_dim = 64;
  s.force_128x128_s4 = false;
  s.batch = 4;
  s.hq = 32;
  s.seqlen_q = s.seqlen_k = 4096;
  s.sm90_kernel_available = false;  // GPUATTN_KERNEL=sm80
  EXPECT_EQ(pick(s), FwdKernel::sm80_128x64);
  const TileConfig& c = tile_config(FwdKernel::sm90_ws_128x128_s4);
  EXPECT_EQ(c.block_m, 128);
  EXPECT_EQ(c.block_n, 128);
  EXPECT_EQ(c.warps, 12);
  EXPECT_EQ(c.stages, 4);
}

TEST(TileConfig, TwoCtasPayOnSmallHeadDim64Grids) {
  auto at = [](int seqlen, int batch, int hq, bool causal, int sms = 132) {
    FwdShape s = shape(9, true, sms, seqlen, batch, hq);
    s.head_dim = 64;
    s.causal = causal;
    return s;
  };
  // Non-causal: up to kTwoCtaMaxWaves waves of 64-row items on 2 x 132 CTAs, unless 3 consumers
  // pay.
  EXPECT_TRUE(two_ctas_pay(at(1024, 1, 16, false)));                   // 256 items
  EXPECT_TRUE(two_ctas_pay(at(1024, 3, 16, false)));                   // 768
  EXPECT_TRUE(two_ctas_pay(at(64, 1, kTwoCtaMaxWaves * 264, false)));  // 792
  EXPECT_FALSE(two_ctas_pay(at(64, 1, kTwoCtaMaxWaves * 264 + 1, false)));
  EXPECT_FALSE(two_ctas_pay(at(1024, 4, 16, false)));  // 3 consumers pay (3 against 4 waves)
  EXPECT_TRUE(three_consumers_pay(at(1024, 4, 16, false)));
  EXPECT_FALSE(two_ctas_pay(at(4096, 1, 19, false)));  // 1216 items: 2 consumers
  EXPECT_FALSE(three_consumers_pay(at(4096, 1, 19, false)));
  // At most kTwoCtaMaxKeys keys: B1 H8 S4096, 512 items and no third consumer, stays on 2.
  EXPECT_FALSE(two_ctas_pay(at(4096, 1, 8, false)));
  EXPECT_FALSE(three_consumers_pay(at(4096, 1, 8, false)));
  EXPECT_TRUE(two_ctas_pay(at(kTwoCtaMaxKeys, 1, 8, false)));
  FwdShape more_keys = at(512, 1, 8, true);  // Sq != Sk: the keys count
  EXPECT_TRUE(two_ctas_pay(more_keys));
  more_keys.seqlen_k = kTwoCtaMaxKeys + 1;
  EXPECT_FALSE(two_ctas_pay(more_keys));
  // Causal: one wave (each CTA one item).
  EXPECT_TRUE(two_ctas_pay(at(1024, 1, 16, true)));       // 256
  EXPECT_TRUE(two_ctas_pay(at(64, 1, 264, true)));        // 264
  EXPECT_FALSE(two_ctas_pay(at(64, 1, 265, true)));       // 265
  EXPECT_FALSE(two_ctas_pay(at(1024, 2, 16, true)));      // 512
  EXPECT_TRUE(two_ctas_pay(at(1024, 1, 16, true, 128)));  // the SMs count: 256 of 256
  EXPECT_FALSE(two_ctas_pay(at(1024, 1, 16, true, 127)));
  // Never: another head dim, a mask beyond causal, varlen, compensated precision, or a kernel
  // that GPUATTN_KERNEL names (the forced one is picked without the rule).
  for (bool causal : {false, true}) {
    FwdShape s = at(1024, 1, 16, causal);
    ASSERT_TRUE(two_ctas_pay(s));
    for (int d : {128, 256}) {
      s.head_dim = d;
      EXPECT_FALSE(two_ctas_pay(s)) << d;
    }
    s.head_dim = 64;
    s.dense_or_causal = false;
    EXPECT_FALSE(two_ctas_pay(s));
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
    s.dense_or_causal = true;
    s.varlen = true;
    EXPECT_FALSE(two_ctas_pay(s));
    EXPECT_NE(pick(s), FwdKernel::sm90_ws_64x128_2cta);
    const FwdKernel rule = pick(s);
    s.force_64x128_2cta = true;  // the kernel runs no varlen calls: they keep the rule's pick
    EXPECT_EQ(pick(s), rule);
    s.force_64x128_2cta = false;
    s.varlen = false;
    s.precision = Precision::compensated;
    EXPECT_FALSE(two_ctas_pay(s));
    s.force_64x128_2cta = true;  // nor a compensated call
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated);
    s.force_64x128_2cta = false;
    s.precision = Precision::standard;
    s.force_128x128 = true;
    EXPECT_FALSE(two_ctas_pay(s));
    s.force_128x128 = false;
    s.force_192x128 = true;
    EXPECT_FALSE(two_ctas_pay(s));
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_192x128);
    s.force_192x128 = false;
    s = at(4096, 4, 32, causal);  // a large grid, forced
    EXPECT_NE(pick(s), FwdKernel::sm90_ws_64x128_2cta);
    s.force_64x128_2cta = true;
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_64x128_2cta);
    s.dense_or_causal = false;  // a mask: 2 consumers, forced or not
    EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
  }
  const TileConfig& c = tile_config(FwdKernel::sm90_ws_64x128_2cta);
  EXPECT_EQ(c.block_m, 64);  // one consumer warpgroup
  EXPECT_EQ(c.block_n, 128);
  EXPECT_EQ(c.warps, 8);  // + the producer warpgroup
  EXPECT_EQ(c.stages, 2);
  EXPECT_EQ(c.ctas_per_sm, 2);
}

TEST(TileConfig, ThreeConsumersPayByWaves) {
  auto pays = [](int seqlen, int batch, int hq, bool causal, int sms = 132) {
    FwdShape s = shape(9, true, sms, seqlen, batch, hq);
    s.head_dim = 64;
    s.causal = causal;
    return three_consumers_pay(s);
  };
  // Waves of 192-row items against waves of 128-row items; 3 consumers when 5 x the first is
  // below 4 x the second.
  // B1 H16 S1024: 96 items against 128, on 132 SMs 1 wave against 1.
  EXPECT_FALSE(pays(1024, 1, 16, false));
  EXPECT_TRUE(pays(1024, 1, 16, false, 96));   // 1 against 2
  EXPECT_FALSE(pays(1024, 1, 16, false, 64));  // 2 against 2
  EXPECT_TRUE(pays(512, 32, 32, false));       // 3072 items against 4096: 24 against 32 waves
  EXPECT_FALSE(pays(2048, 1, 16, false));      // 176 against 256: 2 against 2
  EXPECT_TRUE(pays(4096, 1, 16, false));       // 352 against 512: 3 against 4
  EXPECT_TRUE(pays(4096, 4, 32, false));       // 2816 against 4096: 22 against 32
  EXPECT_FALSE(pays(1, 1, 1, false, 0));       // SM count unknown (0): taken as 1
  // Causal: as dense from 2048 rows on, never below.
  EXPECT_TRUE(pays(4096, 4, 32, true));
  EXPECT_TRUE(pays(2048, 8, 32, true));  // 2816 against 4096: 22 against 32
  EXPECT_FALSE(pays(2047, 8, 32, true));
  EXPECT_FALSE(pays(1024, 16, 32, true));  // 3072 against 4096, but 1024 rows
  EXPECT_FALSE(pays(512, 32, 32, true));
}

TEST(TileConfig, HopperTakesTheNarrowTilesAtHeadDim256) {
  for (bool dense : {true, false}) {
    for (bool causal : {false, true}) {
      FwdShape s = shape(9, true, 132, 4096, 4, 16);
      s.head_dim = 256;
      s.dense_or_causal = dense;
      s.causal = causal;
      // 80-key tiles for dense and causal calls from 1024 keys, whatever the grid; 64 with fewer
      // keys, or with a window, global tokens or a block layout (the masked instantiation).
      const FwdKernel want =
          dense ? FwdKernel::sm90_ws_128x80_d256 : FwdKernel::sm90_ws_128x64_d256;
      EXPECT_EQ(pick(s), want) << dense << causal;
      s.seqlen_q = 65;  // one row block (64 rows or fewer: decode_16x64)
      s.batch = 1;
      s.hq = 1;
      EXPECT_EQ(pick(s), want) << dense << causal;
      s.seqlen_k = kD256WideTileMinKeys;
      EXPECT_EQ(pick(s), want) << dense << causal;
      s.seqlen_k = kD256WideTileMinKeys - 1;  // the last 80-key tile would be a short one
      EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_d256) << dense << causal;
      s.seqlen_q = 4096;
      EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_d256) << dense << causal;  // keys, not rows
      for (int d : {64, 128}) {  // the other head dims keep 128-key tiles (a small grid: one
        s.head_dim = d;          // consumer and two CTAs an SM at head dim 64 for dense and
                                 // causal calls, 3 stages at 128)
        const FwdKernel own =
            d == 128 ? FwdKernel::sm90_ws_128x128_s3 : FwdKernel::sm90_ws_64x128_2cta;
        EXPECT_EQ(pick(s), dense ? own : FwdKernel::sm90_ws_128x128) << d;
      }
    }
  }
  // Without the sm_90a kernel, or in compensated precision (O and its Kahan terms would take 256
  // registers per thread), head dim 256 gets an sm80 pick: sm80_64x64 whatever the grid (the
  // sm_80 kernel has no 128x64 configuration there).
  FwdShape s = shape(9, false, 132, 4096, 4, 16);
  s.head_dim = 256;
  EXPECT_EQ(pick(s), FwdKernel::sm80_64x64);
  s = shape(9, true, 132, 4096, 4, 16);
  s.head_dim = 256;
  s.precision = Precision::compensated;
  EXPECT_EQ(pick(s), FwdKernel::sm80_64x64_compensated);
  s = shape(8, true, 108, 4096, 4, 16);
  s.head_dim = 256;
  EXPECT_EQ(pick(s), FwdKernel::sm80_64x64);
}

TEST(TileConfig, HopperFallsBackToSm80) {
  for (bool dense : {true, false}) {
    FwdShape s = shape(9, false, 132, 4096, 4, 16);  // no sm_90a code, or GPUATTN_KERNEL=sm80
    s.dense_or_causal = dense;
    EXPECT_EQ(pick(s), FwdKernel::sm80_128x64) << dense;
    s.seqlen_q = 1024;
    s.batch = 1;
    EXPECT_EQ(pick(s), FwdKernel::sm80_64x64) << dense;  // 8 * 16 CTAs < 2 * 132
    s.precision = Precision::compensated;
    EXPECT_EQ(pick(s), FwdKernel::sm80_64x64_compensated) << dense;
  }
}

TEST(TileConfig, HopperTakesTheCompensatedWgmmaKernelAtHeadDims64And128) {
  for (bool dense : {true, false}) {  // one instantiation serves every mask
    for (bool causal : {false, true}) {
      for (int d : {64, 128}) {
        FwdShape s = shape(9, true, 132, 4096, 4, 16);
        s.precision = Precision::compensated;
        s.head_dim = d;
        s.dense_or_causal = dense;
        s.causal = causal;
        EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated) << dense << causal << d;
        s.seqlen_q = 1;  // however small the grid
        s.batch = 1;
        s.hq = 1;
        EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_compensated) << dense << causal << d;
        s.sm90_kernel_available = false;  // GPUATTN_KERNEL=sm80 or no sm_90a code
        EXPECT_EQ(pick(s), FwdKernel::sm80_64x64_compensated) << dense << causal << d;
      }
      FwdShape s = shape(9, true, 132, 4096, 4, 16);
      s.precision = Precision::compensated;
      s.head_dim = 256;  // stays on the sm_80 path
      s.dense_or_causal = dense;
      s.causal = causal;
      EXPECT_EQ(pick(s), FwdKernel::sm80_64x64_compensated) << dense << causal;
    }
  }
  for (int major : {7, 8, 10, 12}) {  // other GPUs keep the sm_80 compensated kernel
    FwdShape s = shape(major, true, 108, 4096, 4, 16);
    s.precision = Precision::compensated;
    EXPECT_EQ(pick(s), FwdKernel::sm80_64x64_compensated) << major;
  }
}

TEST(TileConfig, OtherArchitecturesNeverTakeTheSm90Kernel) {
  for (int major : {7, 8, 10, 12}) {
    EXPECT_EQ(pick(shape(major, true, 108, 4096, 4, 16)), FwdKernel::sm80_128x64) << major;
    EXPECT_EQ(pick(shape(major, true, 108, 1024, 1, 16)), FwdKernel::sm80_64x64) << major;
  }
}

TEST(TileConfig, CompensatedIgnoresTheGridSize) {
  for (int seqlen : {1, 1024, 32768}) {
    FwdShape s = shape(8, false, 108, seqlen, 4, 16);
    s.precision = Precision::compensated;
    EXPECT_EQ(pick(s), FwdKernel::sm80_64x64_compensated) << seqlen;
  }
}

TEST(TileConfig, SmallGridBoundaryIsTwoCtasPerSm) {
  // 132 SMs: 264 CTAs of 128 rows is the first grid that keeps the 128-row tiles.
  EXPECT_EQ(pick(shape(8, false, 132, 128 * 264, 1, 1)), FwdKernel::sm80_128x64);
  EXPECT_EQ(pick(shape(8, false, 132, 128 * 263, 1, 1)), FwdKernel::sm80_64x64);
  EXPECT_EQ(pick(shape(8, false, 132, 128 * 263 + 1, 1, 1)), FwdKernel::sm80_128x64);  // rounds up
  EXPECT_EQ(pick(shape(8, false, 132, 1024, 1, 33)), FwdKernel::sm80_128x64);  // 8 * 33 = 264
  EXPECT_EQ(pick(shape(8, false, 132, 1024, 1, 32)), FwdKernel::sm80_64x64);   // 256
  EXPECT_EQ(pick(shape(8, false, 132, 1024, 11, 3)), FwdKernel::sm80_128x64);  // 8 * 3 * 11
  // 108 SMs (A100): 216 CTAs.
  EXPECT_EQ(pick(shape(8, false, 108, 1024, 27, 1)), FwdKernel::sm80_128x64);  // 8 * 27 = 216
  EXPECT_EQ(pick(shape(8, false, 108, 1023, 27, 1)), FwdKernel::sm80_128x64);  // still 8 blocks
  EXPECT_EQ(pick(shape(8, false, 108, 896, 27, 1)), FwdKernel::sm80_64x64);    // 7 * 27 = 189
  // The seed-001 shape (B1 H16 S1024) is a small grid on both.
  EXPECT_EQ(pick(shape(8, false, 108, 1024, 1, 16)), FwdKernel::sm80_64x64);
  EXPECT_EQ(pick(shape(9, false, 132, 1024, 1, 16)), FwdKernel::sm80_64x64);
}

// The shared memory of the sm80_* configurations against the real devices' opt-in limits per
// block: 99 KB (sm_86, sm_89, sm_120), 163 KB (A100), 227 KB (H100, H200, B200).
TEST(TileConfig, Sm80SharedMemoryAgainstRealDevices) {
  constexpr int k99 = 99 * 1024, k163 = 163 * 1024;
  for (bool blocks : {false, true}) {
    for (FwdKernel k :
         {FwdKernel::sm80_128x64, FwdKernel::sm80_64x64, FwdKernel::sm80_64x64_compensated}) {
      EXPECT_GT(sm80_smem_bytes(k, 64, blocks), 0);
      EXPECT_LE(sm80_smem_bytes(k, 64, blocks), k99) << "every D64 configuration fits 99 KB";
      EXPECT_LE(sm80_smem_bytes(k, 128, blocks), k163) << "every D128 one fits an A100";
    }
    EXPECT_GT(sm80_smem_bytes(FwdKernel::sm80_128x64, 128, blocks), k99);  // the reviewer's case
    EXPECT_LE(sm80_smem_bytes(FwdKernel::sm80_64x64, 128, blocks), k99);   // its fallback
    EXPECT_LE(sm80_smem_bytes(FwdKernel::sm80_64x64_compensated, 128, blocks), k99);
    EXPECT_EQ(sm80_smem_bytes(FwdKernel::sm80_128x64, 256, blocks), 0);   // not compiled
    EXPECT_GT(sm80_smem_bytes(FwdKernel::sm80_64x64, 256, blocks), k99);  // nothing fits 99 KB
    EXPECT_LE(sm80_smem_bytes(FwdKernel::sm80_64x64, 256, blocks), k163);
    EXPECT_GT(sm80_smem_bytes(FwdKernel::sm80_64x64_compensated, 256, blocks), k99);
    for (FwdKernel k : {FwdKernel::sm90_ws_128x128, FwdKernel::sm90_ws_128x64_d256,
                        FwdKernel::sm90_ws_128x64_compensated, FwdKernel::sm90_ws_192x128,
                        FwdKernel::sm90_ws_128x80_d256}) {
      EXPECT_EQ(sm80_smem_bytes(k, 128, blocks), 0);
    }
  }
  EXPECT_EQ(sm80_smem_bytes(FwdKernel::sm80_64x64, 96, false), 0);  // no such head dim
  EXPECT_EQ(sm80_smem_bytes(FwdKernel::sm80_128x64, 128, true),
            sm80_smem_bytes(FwdKernel::sm80_128x64, 128, false) + kSm80BlockLayoutSmemBytes);
}

TEST(TileConfig, SharedMemoryBoundaryIsTheBlockLayoutNeed) {
  // A large grid at head dim 128 keeps the 128-row tiles exactly while their block-layout
  // instantiation fits; 0 (unknown) keeps them too.
  const int need = sm80_smem_bytes(FwdKernel::sm80_128x64, 128, true);
  FwdShape s = shape(8, false, 108, 4096, 4, 16);
  for (int limit : {0, need, need + 1, 163 * 1024}) {
    s.max_smem_per_block = limit;
    EXPECT_EQ(pick(s), FwdKernel::sm80_128x64) << limit;
  }
  for (int limit : {need - 1, 99 * 1024, 1}) {
    s.max_smem_per_block = limit;
    EXPECT_EQ(pick(s), FwdKernel::sm80_64x64) << limit;
  }
  // Nothing fits 64 KB at head dim 128: the smaller tiles, whose launch then fails clearly.
  s.max_smem_per_block = 64 * 1024;
  EXPECT_EQ(pick(s), FwdKernel::sm80_64x64);
  s.precision = Precision::compensated;
  EXPECT_EQ(pick(s), FwdKernel::sm80_64x64_compensated);
  // Hopper's sm90 picks do not read it (every sm 9.x device has 227 KB).
  s = shape(9, true, 132, 4096, 4, 16);
  s.max_smem_per_block = 227 * 1024;
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
}

TEST(TileConfig, GridSizeDoesNotOverflow) {
  // 2^30 rows / 128 x 2^16 heads x 2^10 batch = 2^49 CTAs: well past int.
  EXPECT_EQ(pick(shape(8, false, 132, 1 << 30, 1 << 10, 1 << 16)), FwdKernel::sm80_128x64);
}

// ---- the pick at named points ------------------------------------------------------------------

// A device as the rule sees it: compute capability major, whether the sm_90a kernel runs for the
// call's dtype and head dim (false under GPUATTN_KERNEL=sm80 or without sm_90a code), SM count,
// opt-in shared memory per block (0: unknown).
struct Gpu {
  int sm_major;
  bool sm90;
  int sms;
  int smem;
};
constexpr int kKB = 1024;
constexpr Gpu kH100{9, true, 132, 227 * kKB};  // H100 SXM
constexpr Gpu kH200{9, true, 132, 227 * kKB};
constexpr Gpu kH100Pcie{9, true, 114, 227 * kKB};     // H100 PCIe
constexpr Gpu kHopperSm80{9, false, 132, 227 * kKB};  // H200 with GPUATTN_KERNEL=sm80
constexpr Gpu kA100{8, false, 108, 163 * kKB};
constexpr Gpu kRtx3090{8, false, 82, 99 * kKB};   // sm_86: the rule reads the major version only
constexpr Gpu kA6000{8, false, 84, 99 * kKB};     // sm_86
constexpr Gpu kRtx4090{8, false, 128, 99 * kKB};  // sm_89
constexpr Gpu kL40s{8, false, 142, 99 * kKB};     // sm_89
constexpr Gpu kUnknownSmem{8, false, 82, 0};      // an RTX 3090 whose limit was not passed in
constexpr Gpu kB200{10, false, 148, 227 * kKB};
constexpr Gpu kRtx5090{12, false, 170, 99 * kKB};

FwdShape on(Gpu g, int head_dim, int seqlen_q, int batch, int hq) {
  FwdShape s = shape(g.sm_major, g.sm90, g.sms, seqlen_q, batch, hq);
  s.head_dim = head_dim;
  s.max_smem_per_block = g.smem;
  return s;
}
FwdShape causal(FwdShape s) {
  s.causal = true;
  return s;
}
FwdShape masked(FwdShape s) {  // a window, global tokens or a block layout
  s.dense_or_causal = false;
  return s;
}
FwdShape compensated(FwdShape s) {
  s.precision = Precision::compensated;
  return s;
}
FwdShape with_sm90_flag(FwdShape s) {  // the flag set on a GPU that is not sm 9.x
  s.sm90_kernel_available = true;
  return s;
}

struct Point {
  const char* what;
  FwdShape shape;
  const char* want;  // the configuration's name
};

// Row blocks below are ceil(S / 128) * H * B; "2 x SMs" is the sm_80 rule's boundary. A dtype
// in a description is for the reader: the rule does not read it (the sm90 flag carries it).
const Point kPoints[] = {
    // Hopper with the sm_90a kernel: sm90_ws_128x128 for every standard call at D128, for
    // masked ones at D64 and for dense and causal ones at D64 whose grid is mid-sized,
    // sm90_ws_64x128_2cta for those on small grids (two_ctas_pay), sm90_ws_192x128 for the
    // other dense and causal ones at D64 (waves of 192-row items x 5 < waves of 128-row items x
    // 4; causal from 2048 rows); 64-key tiles at D256; the compensated wgmma kernel at D64/D128,
    // the sm_80 one at D256.
    {"H100 132 SMs, D128, fp16, B1 H16 S1024", on(kH100, 128, 1024, 1, 16), "sm90_ws_128x128_s3"},
    {"H100 132 SMs, D128, fp16, B1 H16 S2049: past kD128ThreeStageMaxKeys",
     on(kH100, 128, 2049, 1, 16), "sm90_ws_128x128"},
    {"H200 132 SMs, D64, fp16, B1 H16 S1024: 96 x 192 rows, 128 x 128 rows, 1 wave each; 256 x "
     "64 rows, under 3 x 264",
     on(kH200, 64, 1024, 1, 16), "sm90_ws_64x128_2cta"},
    {"H200 132 SMs, D64, fp16, B1 H19 S4096: 1216 x 64 rows, over 3 x 264; 5 against 4 waves",
     on(kH200, 64, 4096, 1, 19), "sm90_ws_128x128"},
    {"H200 132 SMs, D64, fp16, B3 H16 S1024: 768 x 64 rows, 3 against 3 waves",
     on(kH200, 64, 1024, 3, 16), "sm90_ws_64x128_2cta"},
    {"H200 132 SMs, D64, fp16, causal, B1 H16 S1024: 256 x 64 rows, one wave of 264",
     causal(on(kH200, 64, 1024, 1, 16)), "sm90_ws_64x128_2cta"},
    {"H200 132 SMs, D64, fp16, causal, B2 H16 S1024: 512 x 64 rows, 4 stages",
     causal(on(kH200, 64, 1024, 2, 16)), "sm90_ws_128x128_s4"},
    {"H200 132 SMs, D64, fp16, B4 H32 S4096: 22 against 32 waves", on(kH200, 64, 4096, 4, 32),
     "sm90_ws_192x128"},
    {"H200 132 SMs, D64, fp16, B32 H32 S512: 24 against 32 waves", on(kH200, 64, 512, 32, 32),
     "sm90_ws_192x128"},
    {"H200 132 SMs, D64, fp16, causal, B32 H32 S512: under 2048 rows, 4 stages",
     causal(on(kH200, 64, 512, 32, 32)), "sm90_ws_128x128_s4"},
    {"H200 132 SMs, D64, fp16, causal, B1 H8 S4096: 2 against 2 waves, 2048+ rows: 2 stages",
     causal(on(kH200, 64, 4096, 1, 8)), "sm90_ws_128x128"},
    {"H200 132 SMs, D64, fp16, causal, B1 H9 S2047: 288 x 64 rows, 4 stages",
     causal(on(kH200, 64, 2047, 1, 9)), "sm90_ws_128x128_s4"},
    {"H200 132 SMs, D64, fp16, B1 H16 S2048: 2 against 2 waves; 512 x 64 rows",
     on(kH200, 64, 2048, 1, 16), "sm90_ws_64x128_2cta"},
    {"H100 PCIe 114 SMs, D64, B1 H16 S2048: 176 / 114 -> 2 against 256 / 114 -> 3 waves",
     on(kH100Pcie, 64, 2048, 1, 16), "sm90_ws_192x128"},
    {"H100 132 SMs, D64, bf16, causal, B4 H32 S4096", causal(on(kH100, 64, 4096, 4, 32)),
     "sm90_ws_192x128"},
    {"H100 132 SMs, D64, bf16, causal sliding window, B4 H32 S4096",
     masked(causal(on(kH100, 64, 4096, 4, 32))), "sm90_ws_128x128"},
    {"H100 PCIe 114 SMs, D128, B1 H1 S65 (one row block)", on(kH100Pcie, 128, 65, 1, 1),
     "sm90_ws_128x128_s3"},
    {"H100 PCIe 114 SMs, D128, B1 H1 S64: 64 rows, decode", on(kH100Pcie, 128, 64, 1, 1),
     "decode_16x64"},
    {"H200 132 SMs, D256, causal, B1 H1 S1: decode", causal(on(kH200, 256, 1, 1, 1)),
     "decode_16x64"},
    {"H200 132 SMs, D128, block layout, B2 H16 S65536", masked(on(kH200, 128, 65536, 2, 16)),
     "sm90_ws_128x128"},
    {"H200 132 SMs, D256, bf16, B2 H8 S1000", on(kH200, 256, 1000, 2, 8), "sm90_ws_128x64_d256"},
    {"H200 132 SMs, D256, B4 H8 S4096", on(kH200, 256, 4096, 4, 8), "sm90_ws_128x80_d256"},
    {"H200 132 SMs, D256, causal, B1 H1 S65", causal(on(kH200, 256, 65, 1, 1)),
     "sm90_ws_128x64_d256"},
    {"H200 132 SMs, D256, causal, B1 H1 S1024", causal(on(kH200, 256, 1024, 1, 1)),
     "sm90_ws_128x80_d256"},
    {"H200 132 SMs, D256, causal, global tokens, B1 H1 S1", masked(causal(on(kH200, 256, 1, 1, 1))),
     "sm90_ws_128x64_d256"},
    {"H200 132 SMs, D128, compensated, B2 H16 S4096", compensated(on(kH200, 128, 4096, 2, 16)),
     "sm90_ws_128x64_compensated"},
    {"H200 132 SMs, D64, compensated, causal window, B1 H1 S17",
     compensated(masked(causal(on(kH200, 64, 17, 1, 1)))), "sm90_ws_128x64_compensated"},
    {"H200 132 SMs, D256, compensated, B2 H16 S2048 (no wgmma compensated kernel at D256)",
     compensated(on(kH200, 256, 2048, 2, 16)), "sm80_64x64_compensated"},

    // Hopper under GPUATTN_KERNEL=sm80: the sm_80 rule, boundary 2 x 132 = 264 row blocks.
    {"H200 sm80, D128, B1 H16 S1024: 8 x 16 = 128 < 264", on(kHopperSm80, 128, 1024, 1, 16),
     "sm80_64x64"},
    {"H200 sm80, D128, B4 H16 S4096: 32 x 16 x 4 = 2048", on(kHopperSm80, 128, 4096, 4, 16),
     "sm80_128x64"},
    {"H200 sm80, D128, B1 H33 S1024: 8 x 33 = 264 = 2 x 132", on(kHopperSm80, 128, 1024, 1, 33),
     "sm80_128x64"},
    {"H200 sm80, D128, B1 H32 S1024: 8 x 32 = 256 < 264", on(kHopperSm80, 128, 1024, 1, 32),
     "sm80_64x64"},
    {"H200 sm80, D64, causal window, B1 H32 S1024: 256 < 264 (the mask does not count)",
     masked(causal(on(kHopperSm80, 64, 1024, 1, 32))), "sm80_64x64"},
    {"H200 sm80, D256, B4 H16 S4096: 2048 row blocks, but no 128-row tiles at D256",
     on(kHopperSm80, 256, 4096, 4, 16), "sm80_64x64"},
    {"H200 sm80, D128, compensated, B4 H16 S4096", compensated(on(kHopperSm80, 128, 4096, 4, 16)),
     "sm80_64x64_compensated"},
    {"H200 sm80, varlen max S2048, B4 H8: 16 x 8 x 4 = 512 (max length x batch)",
     on(kHopperSm80, 128, 2048, 4, 8), "sm80_128x64"},

    // A100, 108 SMs: boundary 216 row blocks.
    {"A100 108 SMs, D128, fp16, B1 H16 S1024: 128 < 216", on(kA100, 128, 1024, 1, 16),
     "sm80_64x64"},
    {"A100 108 SMs, D128, B1 H27 S1024: 8 x 27 = 216 = 2 x 108", on(kA100, 128, 1024, 1, 27),
     "sm80_128x64"},
    {"A100 108 SMs, D128, B1 H27 S897: ceil(897 / 128) = 8, 216", on(kA100, 128, 897, 1, 27),
     "sm80_128x64"},
    {"A100 108 SMs, D128, B1 H27 S896: 7 x 27 = 189 < 216", on(kA100, 128, 896, 1, 27),
     "sm80_64x64"},
    {"A100 108 SMs, D64, B27 H1 S1023: 8 x 1 x 27 = 216 (batch counts)", on(kA100, 64, 1023, 27, 1),
     "sm80_128x64"},
    {"A100 108 SMs, D128, causal, B2 H13 S1024: 8 x 13 x 2 = 208 < 216",
     causal(on(kA100, 128, 1024, 2, 13)), "sm80_64x64"},
    {"A100 108 SMs, D256, B16 H32 S32768", on(kA100, 256, 32768, 16, 32), "sm80_64x64"},
    {"A100 108 SMs, D64, compensated, B16 H32 S32768", compensated(on(kA100, 64, 32768, 16, 32)),
     "sm80_64x64_compensated"},
    {"A100 108 SMs, D128, B4 H16 S4096, sm90 flag set (read on sm 9.x only)",
     with_sm90_flag(on(kA100, 128, 4096, 4, 16)), "sm80_128x64"},

    // sm_86 / sm_89, 99 KB of shared memory per block: the same grid rule with their SM counts,
    // but at D128 sm80_128x64 (102 KB) does not fit, so every D128 call takes sm80_64x64 (85 KB).
    // At D256 nothing fits (sm80_64x64 160 KB): the pick stays, the launcher says not_supported.
    {"RTX 3090 sm_86 82 SMs 99 KB, D64, B1 H16 S2048: 16 x 16 = 256 >= 164, 54 KB fits",
     on(kRtx3090, 64, 2048, 1, 16), "sm80_128x64"},
    {"RTX 3090 sm_86 82 SMs 99 KB, D64, B1 H8 S2048: 16 x 8 = 128 < 164",
     on(kRtx3090, 64, 2048, 1, 8), "sm80_64x64"},
    {"RTX 3090 sm_86 82 SMs 99 KB, D128, B1 H41 S512: 164 = 2 x 82, but 102 KB > 99 KB",
     on(kRtx3090, 128, 512, 1, 41), "sm80_64x64"},
    {"RTX 3090 sm_86 82 SMs 99 KB, D128, B1 H1 S20864: 163 < 164", on(kRtx3090, 128, 20864, 1, 1),
     "sm80_64x64"},
    {"RTX 3090 sm_86 82 SMs, limit unknown (0), D128, B1 H41 S512: the grid rule alone",
     on(kUnknownSmem, 128, 512, 1, 41), "sm80_128x64"},
    {"A6000 sm_86 84 SMs 99 KB, D128, B1 H16 S1280: 10 x 16 = 160 < 168",
     on(kA6000, 128, 1280, 1, 16), "sm80_64x64"},
    {"A6000 sm_86 84 SMs 99 KB, D128, causal block layout, B8 H32 S8192: 16384 row blocks",
     masked(causal(on(kA6000, 128, 8192, 8, 32))), "sm80_64x64"},
    {"A6000 sm_86 84 SMs 99 KB, D256, B1 H1 S1 (decode's 136 KB do not fit either; 160 KB: "
     "not_supported at launch)",
     on(kA6000, 256, 1, 1, 1), "sm80_64x64"},
    {"RTX 4090 sm_89 128 SMs 99 KB, D128, B2 H32 S512: 256 = 2 x 128, but 102 KB > 99 KB",
     on(kRtx4090, 128, 512, 2, 32), "sm80_64x64"},
    {"RTX 4090 sm_89 128 SMs 99 KB, D128, B2 H32 S384: 3 x 32 x 2 = 192 < 256",
     on(kRtx4090, 128, 384, 2, 32), "sm80_64x64"},
    {"RTX 4090 sm_89 128 SMs 99 KB, D64, B4 H32 S4096: 4096 row blocks, 54 KB fits",
     on(kRtx4090, 64, 4096, 4, 32), "sm80_128x64"},
    {"RTX 4090 sm_89 128 SMs 99 KB, D64, causal, B1 H16 S1024: 128 < 256",
     causal(on(kRtx4090, 64, 1024, 1, 16)), "sm80_64x64"},
    {"L40S sm_89 142 SMs 99 KB, D128, B4 H16 S4096: 2048 row blocks, but 102 KB > 99 KB",
     on(kL40s, 128, 4096, 4, 16), "sm80_64x64"},
    {"L40S sm_89 142 SMs 99 KB, D128, B1 H8 S1024: 64 < 284", on(kL40s, 128, 1024, 1, 8),
     "sm80_64x64"},
    {"L40S sm_89 142 SMs 99 KB, D128, compensated, B1 H1 S1", compensated(on(kL40s, 128, 1, 1, 1)),
     "sm80_64x64_compensated"},

    // Newer GPUs run the sm_80 kernel (the sm_90a kernel is sm 9.x only).
    {"B200 sm_100 148 SMs, D128, B4 H16 S4096, sm90 flag set",
     with_sm90_flag(on(kB200, 128, 4096, 4, 16)), "sm80_128x64"},
    {"B200 sm_100 148 SMs, D128, B1 H16 S1024: 128 < 296", on(kB200, 128, 1024, 1, 16),
     "sm80_64x64"},
    {"B200 sm_100 148 SMs 227 KB, D256, B4 H16 S4096", on(kB200, 256, 4096, 4, 16), "sm80_64x64"},
    {"RTX 5090 sm_120 170 SMs, D64, B1 H16 S2048: 256 < 340", on(kRtx5090, 64, 2048, 1, 16),
     "sm80_64x64"},
    {"RTX 5090 sm_120 170 SMs 99 KB, D128, B4 H16 S4096: 2048 row blocks, but 102 KB > 99 KB",
     on(kRtx5090, 128, 4096, 4, 16), "sm80_64x64"},
    {"RTX 5090 sm_120 170 SMs 99 KB, D256, compensated, B4 H16 S4096 (128 KB: not_supported at "
     "launch)",
     compensated(on(kRtx5090, 256, 4096, 4, 16)), "sm80_64x64_compensated"},
};

TEST(TileConfig, PicksAtNamedPoints) {
  for (const Point& pt : kPoints) {
    const TileConfig& c = select_fwd_config(pt.shape);
    EXPECT_STREQ(c.name, pt.want) << pt.what;
    EXPECT_EQ(&tile_config(c.kernel), &c) << pt.what;
  }
}

// ---- properties of the rule on a grid ----------------------------------------------------------

// What must hold whatever the tuning: causal and the mask change the pick only on Hopper at head
// dim 64 in standard precision, from sm90_ws_192x128 to sm90_ws_128x128 (for a window, global
// tokens or a block layout, and for causal calls under 2048 rows); sm90_* only on sm 9.x with the
// sm_90a kernel; the precision picks a kernel of that precision; nothing 128 rows x 2 m-tiles at
// head dim 256 on sm_80; on sm_80 a larger grid never goes back from 128-row to 64-row tiles; and a
// picked sm80_* configuration fits a known shared memory limit (with a block layout's bitmaps)
// unless no sm80_* configuration of the call's precision fits at its head dim.
TEST(TileConfig, RuleHoldsItsPropertiesOnAGrid) {
  int checked = 0;
  const int seqlens[] = {1, 64, 127, 128, 129, 512, 1000, 1024, 4096, 32768};
  // 0: unknown; 64 KB: nothing fits at D128; 99 KB: sm_86/89/120; 163 KB: A100; 227 KB: Hopper.
  const int smem_limits[] = {0, 64 * 1024, 99 * 1024, 163 * 1024, 227 * 1024};
  const FwdKernel sm80_kernels[] = {FwdKernel::sm80_128x64, FwdKernel::sm80_64x64,
                                    FwdKernel::sm80_64x64_compensated};
  for (int major : {8, 9, 10}) {
    for (bool sm90 : {false, true}) {
      for (int sms : {82, 108, 132}) {
        for (int smem : smem_limits) {
          for (Precision prec : {Precision::standard, Precision::compensated}) {
            for (int batch : {1, 2, 4, 16}) {
              for (int hq : {1, 8, 16, 27, 32, 33}) {
                for (int d : {64, 128, 256}) {
                  bool seen_large = false;
                  for (int seqlen : seqlens) {
                    FwdShape s = shape(major, sm90, sms, seqlen, batch, hq);
                    s.precision = prec;
                    s.head_dim = d;
                    s.max_smem_per_block = smem;
                    s.decode_allowed = false;  // the prefill rule (decode_16x64: below)
                    const FwdKernel k = pick(s);
                    const std::string where = "sm " + std::to_string(major) + " sm90 " +
                                              std::to_string(sm90) + " sms " + std::to_string(sms) +
                                              " smem " + std::to_string(smem) + " prec " +
                                              to_string(prec) + " S " + std::to_string(seqlen) +
                                              " B " + std::to_string(batch) + " H " +
                                              std::to_string(hq) + " D " + std::to_string(d);
                    // decode_16x64: exactly the standard-precision dense and causal calls of at
                    // most 64 rows per KV head (here hkv = hq) on sm 8 and newer whose shared
                    // memory fits; every other call as the prefill rule.
                    for (bool dense : {true, false}) {
                      for (bool causal : {false, true}) {
                        FwdShape a = s;
                        a.decode_allowed = true;
                        a.dense_or_causal = dense;
                        a.causal = causal;
                        FwdShape prefill = a;
                        prefill.decode_allowed = false;
                        const bool decode = major >= 8 && prec == Precision::standard && dense &&
                                            seqlen <= 64 &&
                                            (smem == 0 || DecodePlan::smem_bytes(d) <= smem);
                        ASSERT_EQ(pick(a), decode ? FwdKernel::decode_16x64 : pick(prefill))
                            << where << " dense " << dense << " causal " << causal;
                      }
                    }
                    for (bool dense : {true, false}) {
                      for (bool causal : {false, true}) {
                        FwdShape m = s;
                        m.dense_or_causal = dense;
                        m.causal = causal;
                        const FwdKernel km = pick(m);
                        // One consumer, two CTAs an SM: exactly the standard dense and causal
                        // D64 calls of two_ctas_pay; a mask takes 2 consumers there, and a causal
                        // call that two_ctas_pay refuses the 2-consumer causal pick.
                        const bool two_cta = major == 9 && sm90 && d == 64 &&
                                             prec == Precision::standard && two_ctas_pay(m);
                        ASSERT_EQ(km == FwdKernel::sm90_ws_64x128_2cta, two_cta)
                            << where << " dense " << dense << " causal " << causal;
                        if (two_cta) EXPECT_TRUE(dense) << where;
                        if (two_cta || k == FwdKernel::sm90_ws_64x128_2cta) {
                          if (!two_cta && !dense) {
                            ASSERT_EQ(km, FwdKernel::sm90_ws_128x128) << where;
                          } else if (!two_cta) {  // causal, more than one wave
                            ASSERT_TRUE(causal && (km == FwdKernel::sm90_ws_128x128_s4 ||
                                                   km == FwdKernel::sm90_ws_128x128))
                                << where;
                          }
                          continue;
                        }
                        if (km == FwdKernel::sm90_ws_128x128_s4) {  // causal D64, 2 consumers
                          EXPECT_TRUE(major == 9 && sm90 && d == 64 &&
                                      prec == Precision::standard && dense && causal &&
                                      seqlen < kD64FourStageMaxRows)
                              << where;
                        }
                        if (k == FwdKernel::sm90_ws_128x128 && d == 64) {  // 4 stages if causal
                          ASSERT_EQ(km, dense && causal && seqlen < kD64FourStageMaxRows
                                            ? FwdKernel::sm90_ws_128x128_s4
                                            : k)
                              << where << " dense " << dense << " causal " << causal;
                        } else if (k == FwdKernel::sm90_ws_128x80_d256) {  // 64 keys for a mask
                          ASSERT_EQ(km, dense ? k : FwdKernel::sm90_ws_128x64_d256) << where;
                        } else if (k == FwdKernel::sm90_ws_128x128_s3) {  // 2 stages for a mask
                          ASSERT_EQ(km, dense ? k : FwdKernel::sm90_ws_128x128) << where;
                        } else if (k != FwdKernel::sm90_ws_192x128) {
                          ASSERT_EQ(km, k) << where << " dense " << dense << " causal " << causal;
                        } else if (km != k) {  // to 2 consumers, for a mask or a short causal call
                          ASSERT_TRUE(km == (dense ? FwdKernel::sm90_ws_128x128_s4
                                                   : FwdKernel::sm90_ws_128x128) ||
                                      (dense && causal && km == FwdKernel::sm90_ws_128x128))
                              << where;
                          EXPECT_TRUE(!dense || (causal && seqlen < 2048))
                              << where << " dense " << dense << " causal " << causal;
                        } else {
                          EXPECT_TRUE(dense && (!causal || seqlen >= 2048))
                              << where << " dense " << dense << " causal " << causal;
                        }
                      }
                    }
                    if (k == FwdKernel::sm90_ws_192x128) {
                      EXPECT_TRUE(major == 9 && sm90 && d == 64 && prec == Precision::standard)
                          << where;
                    }
                    if (k == FwdKernel::sm90_ws_128x80_d256 ||
                        k == FwdKernel::sm90_ws_128x64_d256) {  // a dense call: keys decide
                      EXPECT_EQ(k == FwdKernel::sm90_ws_128x80_d256, seqlen >= kD256WideTileMinKeys)
                          << where;
                    }
                    if (k == FwdKernel::sm90_ws_128x128_s3) {  // a dense call: keys decide
                      EXPECT_TRUE(major == 9 && sm90 && d == 128 && prec == Precision::standard &&
                                  seqlen <= kD128ThreeStageMaxKeys)
                          << where;
                    }
                    if (major == 9 && sm90 && d == 128 && prec == Precision::standard &&
                        seqlen <= kD128ThreeStageMaxKeys) {
                      EXPECT_EQ(k, FwdKernel::sm90_ws_128x128_s3) << where;
                    }
                    const bool is_sm90 =
                        k == FwdKernel::sm90_ws_128x128 || k == FwdKernel::sm90_ws_128x64_d256 ||
                        k == FwdKernel::sm90_ws_128x64_compensated ||
                        k == FwdKernel::sm90_ws_192x128 || k == FwdKernel::sm90_ws_128x80_d256 ||
                        k == FwdKernel::sm90_ws_128x128_s3 || k == FwdKernel::sm90_ws_128x128_s4 ||
                        k == FwdKernel::sm90_ws_64x128_2cta;
                    if (major != 9 || !sm90) EXPECT_FALSE(is_sm90) << where;
                    EXPECT_NE(k, FwdKernel::sm90_ws_128x128_s4) << where << ": a dense call";
                    const bool is_compensated = k == FwdKernel::sm80_64x64_compensated ||
                                                k == FwdKernel::sm90_ws_128x64_compensated;
                    EXPECT_EQ(is_compensated, prec == Precision::compensated) << where;
                    if (d == 256) {
                      EXPECT_NE(k, FwdKernel::sm80_128x64) << where;
                      EXPECT_NE(k, FwdKernel::sm90_ws_128x128) << where;
                      EXPECT_NE(k, FwdKernel::sm90_ws_128x64_compensated) << where;
                      EXPECT_NE(k, FwdKernel::sm90_ws_192x128) << where;
                    } else {
                      EXPECT_NE(k, FwdKernel::sm90_ws_128x64_d256) << where;
                      EXPECT_NE(k, FwdKernel::sm90_ws_128x80_d256) << where;
                    }
                    if (k == FwdKernel::sm80_128x64) seen_large = true;
                    if (seen_large) EXPECT_NE(k, FwdKernel::sm80_64x64) << where;
                    const int need = sm80_smem_bytes(k, d, true);
                    if (!is_sm90) EXPECT_GT(need, 0) << where << ": an sm80 pick compiled at D";
                    if (!is_sm90 && smem > 0 && need > smem) {
                      for (FwdKernel other : sm80_kernels) {
                        const bool same_precision =
                            (other == FwdKernel::sm80_64x64_compensated) == is_compensated;
                        const int other_need = sm80_smem_bytes(other, d, true);
                        if (same_precision && other_need > 0) {
                          EXPECT_GT(other_need, smem)
                              << where << ": " << tile_config(k).name << " needs " << need
                              << " bytes, but " << tile_config(other).name << " fits";
                        }
                      }
                    }
                    ++checked;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 3 * 2 * 3 * 5 * 2 * 4 * 6 * 3 * 10);
}

// Which instantiation of the sm_90a kernel a call takes (sm90_dense_instantiation): the dense
// one for dense and causal calls, a window alone at head dim 128 and a layout of whole 128 x 128
// tiles at head dims 64 and 128; the masked one for global tokens, other layouts, windows at 64
// and 256, and every compensated call.
TEST(TileConfig, DenseInstantiationRule) {
  const std::uint8_t layout[1] = {1};
  for (int d : {64, 128, 256}) {
    const FwdKernel k = d == 256 ? FwdKernel::sm90_ws_128x64_d256 : FwdKernel::sm90_ws_128x128;
    FwdParams p;
    p.head_dim = d;
    EXPECT_TRUE(sm90_dense_instantiation(k, p)) << d;
    p.causal = true;
    EXPECT_TRUE(sm90_dense_instantiation(k, p)) << d;
    p.window_left = 100;  // causal + a window
    EXPECT_EQ(sm90_dense_instantiation(k, p), d == 128) << d;
    p.global_tokens = 4;
    EXPECT_FALSE(sm90_dense_instantiation(k, p)) << d;
    p.global_tokens = 0;
    p.window_left = -1;
    p.causal = false;
    p.block_layout = layout;
    for (int bq : {64, 128, 256}) {
      for (int bk : {64, 128, 384}) {
        p.block_q = bq;
        p.block_k = bk;
        const bool whole = d <= 128 && bq % 128 == 0 && bk % 128 == 0;
        EXPECT_EQ(sm90_dense_instantiation(k, p), whole) << d << " " << bq << "x" << bk;
        p.causal = true;  // the diagonal cuts tiles: masked
        EXPECT_FALSE(sm90_dense_instantiation(k, p)) << d << " " << bq << "x" << bk;
        p.causal = false;
      }
    }
    EXPECT_FALSE(sm90_dense_instantiation(FwdKernel::sm90_ws_128x64_compensated, p));
  }
  FwdParams dense;
  EXPECT_TRUE(sm90_dense_instantiation(FwdKernel::sm90_ws_192x128, dense));
  EXPECT_TRUE(sm90_dense_instantiation(FwdKernel::sm90_ws_128x80_d256, dense));
  EXPECT_FALSE(sm90_dense_instantiation(FwdKernel::sm90_ws_128x64_compensated, dense));
  for (FwdKernel k :
       {FwdKernel::sm80_128x64, FwdKernel::sm80_64x64, FwdKernel::sm80_64x64_compensated}) {
    EXPECT_FALSE(sm90_dense_instantiation(k, dense)) << tile_config(k).name;
  }
}

TEST(TileConfig, LatePvWaitRule) {
  // sm90_ws_128x128: every head-dim-128 call; head dim 64 only dense (no window, global tokens or
  // layout) and non-causal. The late wait is what FwdTraits::kLateWait compiles: the 4-stage
  // head-dim-64 kernel has it too (the causal calls it runs), the 2-stage one's causal calls not.
  for (bool causal : {false, true}) {
    for (bool dense : {false, true}) {
      EXPECT_TRUE(sm90_late_pv_wait(FwdKernel::sm90_ws_128x128, 128, causal, dense));
      EXPECT_EQ(sm90_late_pv_wait(FwdKernel::sm90_ws_128x128, 64, causal, dense), !causal && dense)
          << causal << dense;
      // sm90_ws_128x128_s3 (head dim 128) and sm90_ws_128x128_s4 (head dim 64): always.
      EXPECT_TRUE(sm90_late_pv_wait(FwdKernel::sm90_ws_128x128_s3, 128, causal, dense));
      EXPECT_TRUE(sm90_late_pv_wait(FwdKernel::sm90_ws_128x128_s4, 64, causal, dense));
      for (FwdKernel k :
           {FwdKernel::sm90_ws_192x128, FwdKernel::sm90_ws_128x64_d256,
            FwdKernel::sm90_ws_128x80_d256, FwdKernel::sm90_ws_128x64_compensated,
            FwdKernel::sm80_128x64, FwdKernel::sm80_64x64, FwdKernel::sm80_64x64_compensated}) {
        for (int d : {64, 128, 256}) {
          EXPECT_FALSE(sm90_late_pv_wait(k, d, causal, dense)) << tile_config(k).name << " " << d;
        }
      }
    }
  }
}

TEST(TileConfig, ShapeFromParams) {
  FwdParams p;
  p.batch = 3;
  p.hq = 16;
  p.hkv = 4;
  p.head_dim = 64;
  p.seqlen_q = 777;
  p.seqlen_k = 900;
  p.causal = true;
  p.precision = Precision::compensated;
  FwdShape s = fwd_shape(p, 9, true, 132, 227 * kKB);
  EXPECT_EQ(s.sm_major, 9);
  EXPECT_TRUE(s.sm90_kernel_available);
  EXPECT_EQ(s.num_sms, 132);
  EXPECT_EQ(s.max_smem_per_block, 227 * kKB);
  EXPECT_EQ(s.batch, 3);
  EXPECT_EQ(s.hq, 16);
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.seqlen_q, 777);
  EXPECT_EQ(s.seqlen_k, 900);
  EXPECT_TRUE(s.causal);
  EXPECT_TRUE(s.dense_or_causal);
  EXPECT_EQ(s.precision, Precision::compensated);
  p.window_left = 128;  // a sliding window runs on the sm_90a kernel too
  p.precision = Precision::standard;
  s = fwd_shape(p, 9, true, 132, 227 * kKB);
  EXPECT_FALSE(s.dense_or_causal);
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
  p.window_left = -1;
  const unsigned char layout[1] = {1};
  p.block_layout = layout;  // and so does a block layout
  s = fwd_shape(p, 9, true, 132, 227 * kKB);
  EXPECT_FALSE(s.dense_or_causal);
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
  s = fwd_shape(p, 9, false, 132, 227 * kKB);  // GPUATTN_KERNEL=sm80
  EXPECT_EQ(pick(s), FwdKernel::sm80_128x64);  // 7 * 16 * 3 = 336 CTAs >= 2 * 132
  s.num_sms = 170;
  EXPECT_EQ(pick(s), FwdKernel::sm80_64x64);  // 336 < 340
  p.head_dim = 128;                           // and the limit reaches the rule: 102 KB > 99 KB
  EXPECT_EQ(pick(fwd_shape(p, 8, false, 82, 163 * kKB)), FwdKernel::sm80_128x64);
  EXPECT_EQ(pick(fwd_shape(p, 8, false, 82, 99 * kKB)), FwdKernel::sm80_64x64);
  EXPECT_EQ(pick(fwd_shape(p, 8, false, 82, 0)), FwdKernel::sm80_128x64);  // unknown: not checked
  p.head_dim = 64;
  p.precision = Precision::compensated;  // the block layout too runs on the compensated kernel
  EXPECT_EQ(pick(fwd_shape(p, 9, true, 132, 227 * kKB)), FwdKernel::sm90_ws_128x64_compensated);
  EXPECT_EQ(pick(fwd_shape(p, 9, false, 132, 227 * kKB)), FwdKernel::sm80_64x64_compensated);
  EXPECT_EQ(pick(fwd_shape(p, 8, false, 108, 163 * kKB)), FwdKernel::sm80_64x64_compensated);
  p.precision = Precision::standard;
  p.head_dim = 256;  // the head dim reaches the rule
  s = fwd_shape(p, 9, true, 132, 227 * kKB);
  EXPECT_EQ(s.head_dim, 256);
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_d256);  // a mask: the 64-key masked kernel
  p.block_layout = nullptr;
  EXPECT_EQ(pick(fwd_shape(p, 9, true, 132, 227 * kKB)), FwdKernel::sm90_ws_128x64_d256);  // 900
  p.seqlen_k = 4096;  // keys reach the rule
  EXPECT_EQ(pick(fwd_shape(p, 9, true, 132, 227 * kKB)), FwdKernel::sm90_ws_128x80_d256);
}

}  // namespace
}  // namespace gpuattn
