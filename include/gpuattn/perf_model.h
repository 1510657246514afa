// A performance model of the forward kernels: predicts the time of one attention_forward call
// from the configuration the dispatch picks (select_fwd_config), the work items it makes (one per
// block_m query rows of a head), how those items share the SMs (a longest-first schedule), and a
// per-kernel cost of a key tile and of an item's fixed part, calibrated on measured times
// (`gpuattn model --fit`). Host only; no GPU needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuattn {

// The device the prediction is for.
struct DeviceSpec {
  std::string name;
  int sm_major = 9;
  int num_sms = 132;
  int max_smem_per_block = 232448;
  double peak_tflops = 780;  // 16-bit dense GEMM (cuBLASLt 8192^3), measured
  double hbm_tbps = 4.3;     // device-to-device copy, read + write, measured
  double launch_us = 4.5;    // an empty kernel between two events, and the teardown

  // The H200 of bench/results (132 SMs; GEMM 768-804 TFLOP/s, copy 4.26 TB/s, empty launch
  // 3.39 us + 1.1 us of a real kernel's launch and teardown, sm90-kernel-notes.md).
  static DeviceSpec h200();
};

// One call's shape (dense layout, standard precision).
struct PerfShape {
  int batch = 1, hq = 1, hkv = 1, seqlen_q = 1, seqlen_k = 1, head_dim = 64;
  int dtype_bytes = 2;
  bool causal = false;
  std::string config;  // a TileConfig name to model instead of the dispatch's pick ("": the pick)
};

// The calibrated cost of one kernel configuration at one head dim: a key tile of block_m x
// block_n x head_dim runs at `efficiency` of an SM's share of the GEMM peak, and every work item
// adds `item_us` (its Q load, prologue, row totals and output).
struct KernelCost {
  std::string config;  // a TileConfig name (select_fwd_config)
  int head_dim = 0;
  double efficiency = 0.8;
  double item_us = 1.0;
};

// The costs fitted on the H200 results in bench/results (see their `why`s in the .cpp).
const std::vector<KernelCost>& default_kernel_costs();

struct Prediction {
  std::string config;      // the configuration the dispatch picks on the device
  std::int64_t items = 0;  // work items (block_m query rows of one head)
  std::int64_t tiles = 0;  // key tiles over every item (visible ones: causal skips the rest)
  double tile_us = 0;      // one key tile
  double item_us = 0;      // one item's fixed part
  double compute_us = 0;   // the busiest SM under a longest-first schedule
  double memory_us = 0;    // q, k, v and out once through HBM
  double launch_us = 0;
  double total_us = 0;  // launch + max(compute, memory)
  double waves = 0;     // items / the CTAs resident at once (SMs x TileConfig::ctas_per_sm)
};

// The prediction for `s` on `d` with `costs` (default_kernel_costs(); a configuration and head
// dim missing there takes efficiency 0.8 and 1 us an item). Throws gpuattn::Error
// (invalid_argument) naming a non-positive size, a head dim other than 64, 128 or 256, or an
// unknown s.config.
Prediction predict_forward(const PerfShape& s, const DeviceSpec& d,
                           const std::vector<KernelCost>& costs = default_kernel_costs());

}  // namespace gpuattn
