// The forward kernels' performance model (gpuattn/perf_model.h).
#include "gpuattn/perf_model.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "core/tile_config.h"
#include "gpuattn/types.h"

namespace gpuattn {

DeviceSpec DeviceSpec::h200() {
  DeviceSpec d;
  d.name = "NVIDIA H200";
  return d;
}

const std::vector<KernelCost>& default_kernel_costs() {
  // Fitted by `gpuattn model --fit` on bench/results/2026-11-22-h200-26db5b6/sweep.json (the FA3
  // grid: S 512-16384, causal and not, D 64/128/256) and 2026-11-22-h200-471ccd2/bench.json (the
  // DESIGN shapes), minimizing the largest relative error of each (configuration, head dim).
  static const std::vector<KernelCost> costs = {
      {"sm90_ws_128x128", 64, 0.59, 2.00},
      {"sm90_ws_128x128", 128, 0.83, 2.70},
      {"sm90_ws_192x128", 64, 0.71, 2.00},
      {"sm90_ws_128x64_d256", 256, 0.86, 3.95},
      {"sm90_ws_128x80_d256", 256, 0.95, 3.95},
      // Not fitted: sm90_ws_128x128's D128 costs (the 3-stage kernel measured 0.92-1.0x its
      // time on the short calls it takes).
      {"sm90_ws_128x128_s3", 128, 0.83, 2.70},
      // Not fitted: sm90_ws_128x128's D64 costs (fitted on the 2026-11-22 kernels like the
      // others) with the efficiency scaled by the same-run A/B against 2 stages (0.955-0.971x the
      // time, 2026-11-23-h200-s24 call 6), so that `--configs` compares it with the other D64
      // configurations on one footing. Fitting it alone on d55b09d's two points (0.81) also
      // absorbed that day's faster machine and kernels, and made it look 12-15% faster than
      // sm90_ws_192x128 at causal S4096, where it never ran.
      {"sm90_ws_128x128_s4", 64, 0.62, 2.00},
      // Not fitted: sm90_ws_128x128's D64 costs with the efficiency scaled by the same-run A/B
      // against it on the small grids it takes (0.91-0.96x the time, 2026-11-30-h200-s55 calls
      // 3-5). Its SM's rate is shared by its two CTAs (TileConfig::ctas_per_sm).
      {"sm90_ws_64x128_2cta", 64, 0.62, 2.00},
  };
  return costs;
}

namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw Error(ErrorCode::invalid_argument, "predict_forward: " + what);
}

// The busiest SM's time when `costs` (one per item) go to `sms` SMs, longest first, each to the
// least loaded SM (the persistent kernels' causal order; for equal items it is the static one).
double longest_first(std::vector<double> costs, int sms) {
  std::sort(costs.begin(), costs.end(), std::greater<double>());
  std::priority_queue<double, std::vector<double>, std::greater<double>> load;
  for (int i = 0; i < sms; ++i) load.push(0.0);
  double busiest = 0;
  for (double c : costs) {
    const double t = load.top() + c;
    load.pop();
    load.push(t);
    busiest = std::max(busiest, t);
  }
  return busiest;
}

}  // namespace

Prediction predict_forward(const PerfShape& s, const DeviceSpec& d,
                           const std::vector<KernelCost>& costs) {
  for (const auto& [v, name] : {std::pair{s.batch, "batch"},
                                {s.hq, "hq"},
                                {s.hkv, "hkv"},
                                {s.seqlen_q, "seqlen_q"},
                                {s.seqlen_k, "seqlen_k"},
                                {s.dtype_bytes, "dtype_bytes"},
                                {d.num_sms, "num_sms"}}) {
    if (v <= 0) invalid(std::string(name) + " " + std::to_string(v) + " is not positive");
  }
  if (s.head_dim != 64 && s.head_dim != 128 && s.head_dim != 256) {
    invalid("head_dim " + std::to_string(s.head_dim) + " is not 64, 128 or 256");
  }
  // The attention calls' own limits (2^30 rows and keys on CUDA), so the tile counts fit an int.
  for (const auto& [v, name] : {std::pair{s.seqlen_q, "seqlen_q"}, {s.seqlen_k, "seqlen_k"}}) {
    if (v > (1 << 30)) invalid(std::string(name) + " " + std::to_string(v) + " is past 2^30");
  }
  if (s.hkv > s.hq || s.hq % s.hkv != 0) {
    invalid("hq " + std::to_string(s.hq) + " is not a multiple of hkv " + std::to_string(s.hkv));
  }
  if (!(d.peak_tflops > 0.0) || !(d.hbm_tbps > 0.0) || d.num_sms > (1 << 20)) {
    invalid("device peak_tflops " + std::to_string(d.peak_tflops) + " and hbm_tbps " +
            std::to_string(d.hbm_tbps) + " must be positive, num_sms " + std::to_string(d.num_sms) +
            " at most 2^20");
  }
  FwdShape f;
  f.sm_major = d.sm_major;
  f.sm90_kernel_available = d.sm_major == 9;
  f.num_sms = d.num_sms;
  f.head_dim = s.head_dim;
  f.causal = s.causal;
  f.seqlen_q = s.seqlen_q;
  f.seqlen_k = s.seqlen_k;
  f.batch = s.batch;
  f.hq = s.hq;
  f.hkv = s.hkv;
  f.max_smem_per_block = d.max_smem_per_block;
  const TileConfig* pick = &select_fwd_config(f);
  if (!s.config.empty()) {
    pick = nullptr;
    for (const TileConfig& c : kFwdTileConfigs) {
      if (s.config == c.name) pick = &c;
    }
    if (pick == nullptr) invalid("config '" + s.config + "' is not a TileConfig name");
  }
  const TileConfig& cfg = *pick;

  Prediction p;
  p.config = cfg.name;
  p.launch_us = d.launch_us;
  const double bytes = static_cast<double>(s.dtype_bytes) * s.batch * s.head_dim *
                       (2.0 * s.seqlen_q * s.hq + 2.0 * s.seqlen_k * s.hkv);
  p.memory_us = bytes / (d.hbm_tbps * 1e12) * 1e6;
  if (cfg.kernel == FwdKernel::decode_16x64 || cfg.kernel == FwdKernel::decode_q8_16x64) {
    // streams the cache: bandwidth alone
    p.total_us = p.launch_us + p.memory_us;
    return p;
  }
  KernelCost cost{cfg.name, s.head_dim, 0.8, 1.0};
  for (const KernelCost& c : costs) {
    if (c.config == cfg.name && c.head_dim == s.head_dim) cost = c;
  }
  const int bm = cfg.block_m, bn = cfg.block_n;
  // A CTA's share of its SM: the SMs' CTAs (cfg.ctas_per_sm each) split its rate.
  const int slots = d.num_sms * cfg.ctas_per_sm;
  const double sm_tflops = d.peak_tflops / slots * cost.efficiency;
  p.tile_us = 4.0 * bm * bn * s.head_dim / (sm_tflops * 1e12) * 1e6;
  p.item_us = cost.item_us;
  const int row_blocks = static_cast<int>((std::int64_t{s.seqlen_q} + bm - 1) / bm);
  const int key_tiles = static_cast<int>((std::int64_t{s.seqlen_k} + bn - 1) / bn);
  const long long heads = static_cast<long long>(s.batch) * s.hq;
  // Every item is simulated (longest first over the SMs): bound their count, and with it the
  // memory (a stride-free shape like B65535 H65535 would ask for terabytes). Divided, not
  // multiplied: B = Hq = 2^30 made batch x hq x row blocks wrap to 0.
  constexpr long long kMostItems = 1LL << 26;
  if (heads > kMostItems / row_blocks) {
    invalid("batch x hq x row blocks = " + std::to_string(s.batch) + " x " + std::to_string(s.hq) +
            " x " + std::to_string(row_blocks) +
            " work items, more than the model simulates (2^26)");
  }
  // Each row block's visible key tiles (causal: bottom-right aligned; a block that sees no key
  // still costs its fixed part).
  std::vector<int> tiles_of(row_blocks, key_tiles);
  if (s.causal) {
    for (int r = 0; r < row_blocks; ++r) {
      const long long last_row = std::min<long long>((r + 1LL) * bm, s.seqlen_q) - 1;
      const long long last_key = last_row + s.seqlen_k - s.seqlen_q;
      tiles_of[r] = static_cast<int>(
          std::clamp<long long>(last_key < 0 ? 0 : (last_key + bn) / bn, 0, key_tiles));
    }
  }
  std::vector<double> item_costs;
  item_costs.reserve(static_cast<std::size_t>(heads * row_blocks));
  for (long long h = 0; h < heads; ++h) {
    for (int r = 0; r < row_blocks; ++r) {
      item_costs.push_back(p.item_us + tiles_of[r] * p.tile_us);
      p.tiles += tiles_of[r];
    }
  }
  p.items = static_cast<std::int64_t>(item_costs.size());
  p.waves = static_cast<double>(p.items) / slots;
  p.compute_us = longest_first(std::move(item_costs), slots);
  p.total_us = p.launch_us + std::max(p.compute_us, p.memory_us);
  return p;
}

}  // namespace gpuattn
