// The forward tile configuration table and its selection rule (core/tile_config.h): the rule
// reproduces the documented dispatch on a grid of devices, masks and shapes, the 2-CTAs-per-SM
// boundary, and every entry says why.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

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
  s.batch = batch;
  s.hq = hq;
  return s;
}

FwdKernel pick(const FwdShape& s) {
  return select_fwd_config(s).kernel;
}

// The dispatch as tile_config.h documents it: Hopper with the sm_90a kernel takes it for every
// standard-precision call whatever the mask (sm90::usable is true only on sm 9.x), with 64-key
// tiles at head dim 256, and for every compensated call at head dims 64 and 128; everything else
// goes to sm_80's compensated / 2-CTAs-per-SM choice.
FwdKernel expected(const FwdShape& s) {
  if (s.sm_major == 9 && s.sm90_kernel_available) {
    if (s.precision == Precision::standard) {
      return s.head_dim == 256 ? FwdKernel::sm90_ws_128x64_d256 : FwdKernel::sm90_ws_128x128;
    }
    if (s.head_dim != 256) return FwdKernel::sm90_ws_128x64_compensated;
  }
  if (s.precision == Precision::compensated) return FwdKernel::sm80_64x64_compensated;
  if (s.head_dim == 256) return FwdKernel::sm80_64x64;  // no 128x64 on sm_80 at head dim 256
  const long long ctas = static_cast<long long>((s.seqlen_q + 127) / 128) * s.hq * s.batch;
  return ctas < 2LL * s.num_sms ? FwdKernel::sm80_64x64 : FwdKernel::sm80_128x64;
}

TEST(TileConfig, TableIsIndexedByKernelAndExplained) {
  ASSERT_EQ(kFwdTileConfigs.size(), 6u);
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
      s.seqlen_q = 1;  // however small the grid
      s.batch = 1;
      s.hq = 1;
      EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << dense << causal;
    }
  }
}

TEST(TileConfig, HopperTakesTheNarrowTilesAtHeadDim256) {
  for (bool dense : {true, false}) {
    for (bool causal : {false, true}) {
      FwdShape s = shape(9, true, 132, 4096, 4, 16);
      s.head_dim = 256;
      s.dense_or_causal = dense;
      s.causal = causal;
      EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_d256) << dense << causal;
      s.seqlen_q = 1;
      s.batch = 1;
      s.hq = 1;
      EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_d256) << dense << causal;
      for (int d : {64, 128}) {  // the other head dims keep 128-key tiles
        s.head_dim = d;
        EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128) << d;
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

TEST(TileConfig, GridSizeDoesNotOverflow) {
  // 2^30 rows / 128 x 2^16 heads x 2^10 batch = 2^49 CTAs: well past int.
  EXPECT_EQ(pick(shape(8, false, 132, 1 << 30, 1 << 10, 1 << 16)), FwdKernel::sm80_128x64);
}

TEST(TileConfig, RuleMatchesTheDispatchOnAGrid) {
  int checked = 0;
  for (int major : {8, 9}) {
    for (bool sm90 : {false, true}) {
      for (int sms : {108, 132}) {
        for (Precision prec : {Precision::standard, Precision::compensated}) {
          for (bool dense : {true, false}) {
            for (bool causal : {false, true}) {
              for (int seqlen : {1, 64, 127, 128, 129, 512, 1000, 1024, 4096, 32768}) {
                for (int batch : {1, 2, 4, 16}) {
                  for (int hq : {1, 8, 16, 27, 32, 33}) {
                    FwdShape s = shape(major, sm90, sms, seqlen, batch, hq);
                    s.precision = prec;
                    s.dense_or_causal = dense;
                    s.causal = causal;
                    for (int d : {64, 128, 256}) {
                      s.head_dim = d;
                      ASSERT_EQ(pick(s), expected(s))
                          << "sm " << major << " sm90 " << sm90 << " sms " << sms << " prec "
                          << to_string(prec) << " dense " << dense << " causal " << causal << " S "
                          << seqlen << " B " << batch << " H " << hq << " D " << d;
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
  }
  EXPECT_EQ(checked, 2 * 2 * 2 * 2 * 2 * 2 * 10 * 4 * 6 * 3);
}

TEST(TileConfig, ShapeFromParams) {
  FwdParams p;
  p.batch = 3;
  p.hq = 16;
  p.hkv = 4;
  p.head_dim = 64;
  p.seqlen_q = 777;
  p.causal = true;
  p.precision = Precision::compensated;
  FwdShape s = fwd_shape(p, 9, true, 132);
  EXPECT_EQ(s.sm_major, 9);
  EXPECT_TRUE(s.sm90_kernel_available);
  EXPECT_EQ(s.num_sms, 132);
  EXPECT_EQ(s.batch, 3);
  EXPECT_EQ(s.hq, 16);
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.seqlen_q, 777);
  EXPECT_TRUE(s.causal);
  EXPECT_TRUE(s.dense_or_causal);
  EXPECT_EQ(s.precision, Precision::compensated);
  p.window_left = 128;  // a sliding window runs on the sm_90a kernel too
  p.precision = Precision::standard;
  s = fwd_shape(p, 9, true, 132);
  EXPECT_FALSE(s.dense_or_causal);
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
  p.window_left = -1;
  const unsigned char layout[1] = {1};
  p.block_layout = layout;  // and so does a block layout
  s = fwd_shape(p, 9, true, 132);
  EXPECT_FALSE(s.dense_or_causal);
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x128);
  s = fwd_shape(p, 9, false, 132);             // GPUATTN_KERNEL=sm80
  EXPECT_EQ(pick(s), FwdKernel::sm80_128x64);  // 7 * 16 * 3 = 336 CTAs >= 2 * 132
  s.num_sms = 170;
  EXPECT_EQ(pick(s), FwdKernel::sm80_64x64);  // 336 < 340
  p.precision = Precision::compensated;       // the block layout too runs on the compensated kernel
  EXPECT_EQ(pick(fwd_shape(p, 9, true, 132)), FwdKernel::sm90_ws_128x64_compensated);
  EXPECT_EQ(pick(fwd_shape(p, 9, false, 132)), FwdKernel::sm80_64x64_compensated);
  EXPECT_EQ(pick(fwd_shape(p, 8, false, 108)), FwdKernel::sm80_64x64_compensated);
  p.precision = Precision::standard;
  p.head_dim = 256;  // the head dim reaches the rule
  s = fwd_shape(p, 9, true, 132);
  EXPECT_EQ(s.head_dim, 256);
  EXPECT_EQ(pick(s), FwdKernel::sm90_ws_128x64_d256);
}

}  // namespace
}  // namespace gpuattn
