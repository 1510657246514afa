// The forward kernels' performance model (gpuattn/perf_model.h): what it must get right whatever
// its fitted costs (the dispatch's configuration, items, waves, the causal triangle, decode calls
// bound by bandwidth), and errors. Its agreement with measured H200 times is the ctest
// tools.model_matches_the_h200_results.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "common/expect_error.h"
#include "gpuattn/perf_model.h"

namespace gpuattn::testing {
namespace {

PerfShape shape(int b, int h, int s, int d, bool causal = false) {
  PerfShape p;
  p.batch = b;
  p.hq = p.hkv = h;
  p.seqlen_q = p.seqlen_k = s;
  p.head_dim = d;
  p.causal = causal;
  return p;
}

TEST(PerfModel, ItemsWavesAndTheDispatchPick) {
  const DeviceSpec h200 = DeviceSpec::h200();
  PerfShape s = shape(1, 16, 1024, 64);
  s.config = "sm90_ws_128x128";  // 2 consumers
  Prediction p = predict_forward(s, h200);
  EXPECT_EQ(p.config, "sm90_ws_128x128");
  EXPECT_EQ(p.items, 16 * 8);  // 128-row items of 16 heads
  EXPECT_EQ(p.tiles, 16 * 8 * 8);
  EXPECT_NEAR(p.waves, 128.0 / 132, 1e-12);
  // One wave: the busiest SM runs one item.
  EXPECT_NEAR(p.compute_us, p.item_us + 8 * p.tile_us, 1e-9);
  EXPECT_NEAR(p.total_us, p.launch_us + p.compute_us, 1e-9);
  // The dispatch takes one consumer and two CTAs an SM there: 64-row items, 264 CTAs at once,
  // each at half its SM's rate (a 64-row tile as long as a 128-row one at the same efficiency).
  const double tile_128 = p.tile_us;
  p = predict_forward(shape(1, 16, 1024, 64), h200);
  EXPECT_EQ(p.config, "sm90_ws_64x128_2cta");
  EXPECT_EQ(p.items, 16 * 16);
  EXPECT_EQ(p.tiles, 16 * 16 * 8);
  EXPECT_NEAR(p.waves, 256.0 / 264, 1e-12);
  EXPECT_NEAR(p.compute_us, p.item_us + 8 * p.tile_us, 1e-9);
  EXPECT_NEAR(p.tile_us / tile_128, 0.59 / 0.62, 1e-9);  // the two configurations' efficiencies
  // Large head-dim-64 grids take the 3-consumer kernel; head dim 256 its 80-key tiles.
  EXPECT_EQ(predict_forward(shape(4, 32, 4096, 64), h200).config, "sm90_ws_192x128");
  EXPECT_EQ(predict_forward(shape(4, 8, 4096, 256), h200).config, "sm90_ws_128x80_d256");
}

TEST(PerfModel, OneMoreItemThanSmsTakesASecondWave) {
  DeviceSpec d = DeviceSpec::h200();
  d.num_sms = 16;
  PerfShape s = shape(1, 16, 128, 128);  // 16 items of one tile each
  const double one = predict_forward(s, d).compute_us;
  s.hq = s.hkv = 17;
  const double two = predict_forward(s, d).compute_us;
  EXPECT_NEAR(two, 2 * one, 1e-9);
}

TEST(PerfModel, CausalIsAboutHalfAtLengthAndLongestFirstBalancesIt) {
  const DeviceSpec d = DeviceSpec::h200();
  const Prediction full = predict_forward(shape(1, 32, 32768, 128), d);
  const Prediction causal = predict_forward(shape(1, 32, 32768, 128, true), d);
  EXPECT_EQ(causal.tiles, 32LL * (256 * 257 / 2));  // row block r sees r + 1 tiles
  EXPECT_NEAR(causal.compute_us / full.compute_us, 0.5, 0.02);
  // Bottom-right alignment: 1 query row against 4096 keys sees them all, causal or not.
  PerfShape one_row = shape(1, 1, 1, 128, true);
  one_row.seqlen_k = 4096;
  one_row.config = "sm90_ws_128x128";  // (the dispatch would take the decode kernel)
  EXPECT_EQ(predict_forward(one_row, d).tiles, 32);
}

TEST(PerfModel, DecodeCallsAreBoundByBandwidth) {
  PerfShape s = shape(8, 32, 1, 128);
  s.hkv = 8;
  s.seqlen_k = 4096;
  const Prediction p = predict_forward(s, DeviceSpec::h200());
  EXPECT_EQ(p.config, "decode_16x64");
  const double kv_bytes = 2.0 * 8 * 4096 * 8 * 128 * 2;
  EXPECT_GT(p.memory_us, kv_bytes / 4.3e12 * 1e6);
  EXPECT_NEAR(p.total_us, p.launch_us + p.memory_us, 1e-9);
}

TEST(PerfModel, ErrorsNameTheValue) {
  const DeviceSpec d = DeviceSpec::h200();
  expect_invalid_argument([&] { predict_forward(shape(0, 16, 1024, 64), d); },
                          "batch 0 is not positive");
  expect_invalid_argument([&] { predict_forward(shape(1, 16, 1024, 96), d); },
                          "head_dim 96 is not 64, 128 or 256");
  PerfShape s = shape(1, 16, 1024, 64);
  s.config = "sm91_fast";
  expect_invalid_argument([&] { predict_forward(s, d); }, "config 'sm91_fast'");
  expect_invalid_argument([&] { predict_forward(shape(65535, 65535, 1024, 64), d); },
                          "work items, more than the model simulates (2^26)");
  // 2^30 x 2^30 heads x 16 row blocks is 2^64: the product wrapped to 0 and passed the bound.
  expect_invalid_argument([&] { predict_forward(shape(1 << 30, 1 << 30, 2048, 128), d); },
                          "work items, more than the model simulates (2^26)");
  // Lengths past the calls' 2^30 (INT_MAX + 63 wrapped the tile counts negative).
  expect_invalid_argument([&] { predict_forward(shape(1, 1, INT_MAX, 64), d); },
                          "seqlen_q 2147483647 is past 2^30");
  s = shape(1, 16, 1024, 64);
  s.seqlen_k = INT_MAX;
  expect_invalid_argument([&] { predict_forward(s, d); }, "seqlen_k 2147483647 is past 2^30");
  s = shape(1, 16, 1024, 64);
  s.hkv = 3;
  expect_invalid_argument([&] { predict_forward(s, d); }, "hq 16 is not a multiple of hkv 3");
  DeviceSpec none = d;
  none.hbm_tbps = 0.0;
  expect_invalid_argument([&] { predict_forward(shape(1, 16, 1024, 64), none); },
                          "hbm_tbps 0.000000 must be positive");
}

}  // namespace
}  // namespace gpuattn::testing
