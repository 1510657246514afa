#include "core/tile_config.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/decode_split.h"
#include "gpuattn/types.h"

namespace gpuattn {

static_assert(
    [] {
      for (std::size_t i = 0; i < kFwdTileConfigs.size(); ++i) {
        if (static_cast<std::size_t>(kFwdTileConfigs[i].kernel) != i) return false;
      }
      return true;
    }(),
    "kFwdTileConfigs is indexed by FwdKernel");

const TileConfig& tile_config(FwdKernel kernel) {
  return kFwdTileConfigs[static_cast<std::size_t>(kernel)];
}

FwdShape fwd_shape(const FwdParams& p, int sm_major, bool sm90_kernel_available, int num_sms,
                   int max_smem_per_block) {
  FwdShape s;
  s.sm_major = sm_major;
  s.sm90_kernel_available = sm90_kernel_available;
  s.num_sms = num_sms;
  s.head_dim = p.head_dim;
  s.causal = p.causal;
  s.dense_or_causal = p.dense_or_causal();
  s.precision = p.precision;
  s.seqlen_q = p.seqlen_q;
  s.seqlen_k = p.seqlen_k;
  s.batch = p.batch;
  s.hq = p.hq;
  s.max_smem_per_block = max_smem_per_block;
  s.hkv = p.hkv;
  s.kv_quantized = p.kv_quantized();
  s.alibi = p.has_alibi();
  s.varlen = p.is_varlen();
  return s;
}

bool sm90_dense_instantiation(FwdKernel kernel, const FwdParams& p) {
  switch (kernel) {
    case FwdKernel::sm90_ws_128x128:
      return p.dense_or_causal() || (p.head_dim == 128 && p.banded()) ||
             p.whole_tile_layout(128, 128);
    case FwdKernel::sm90_ws_128x64_d256: return p.dense_or_causal();
    case FwdKernel::sm90_ws_192x128:      // dense and causal calls only (run_fwd checks)
    case FwdKernel::sm90_ws_128x80_d256:  // likewise
    case FwdKernel::sm90_ws_128x128_s3:   // likewise
    case FwdKernel::sm90_ws_128x128_s4:   // causal calls only (run_fwd checks)
    case FwdKernel::sm90_ws_64x128_2cta:  // dense and causal calls only (run_fwd checks)
      return true;
    case FwdKernel::sm90_ws_128x64_compensated:
    case FwdKernel::decode_16x64:
    case FwdKernel::decode_q8_16x64:
    case FwdKernel::sm80_128x64:
    case FwdKernel::sm80_64x64:
    case FwdKernel::sm80_64x64_compensated:
    case FwdKernel::sm90_fp8_128x128:
    case FwdKernel::sm90_fp8_192x128:
    case FwdKernel::sm90_fp8_128x128_d256: return false;  // not instantiations of fwd_sm90.cuh
  }
  return false;
}

namespace {

// The choice KernelChoiceScope read for the call running on this thread, if any.
thread_local const KernelChoice* t_call_choice = nullptr;

KernelChoice read_kernel_choice() {
  const char* env = std::getenv("GPUATTN_KERNEL");
  const std::string want = env ? env : "auto";
  if (want == "auto") return KernelChoice::automatic;
  if (want == "sm80") return KernelChoice::sm80;
  if (want == "sm90_ws_192x128") return KernelChoice::sm90_ws_192x128;
  if (want == "sm90_ws_128x128") return KernelChoice::sm90_ws_128x128;
  if (want == "sm90_fp8_128x128_d256") return KernelChoice::sm90_fp8_128x128_d256;
  if (want == "sm90_ws_64x128_2cta") return KernelChoice::sm90_ws_64x128_2cta;
  if (want == "sm90_ws_128x128_s4") return KernelChoice::sm90_ws_128x128_s4;
  if (want == "sm90_ws_128x128_s3") return KernelChoice::sm90_ws_128x128_s3;
  throw Error(ErrorCode::invalid_argument,
              "gpuattn: environment variable GPUATTN_KERNEL='" + want +
                  "' is not one of auto, sm80, sm90_ws_192x128, sm90_ws_128x128, "
                  "sm90_fp8_128x128_d256, sm90_ws_64x128_2cta, sm90_ws_128x128_s4, "
                  "sm90_ws_128x128_s3");
}

}  // namespace

KernelChoice kernel_choice_from_env() {
  return t_call_choice != nullptr ? *t_call_choice : read_kernel_choice();
}

KernelChoiceScope::KernelChoiceScope() : choice_(read_kernel_choice()), outer_(t_call_choice) {
  t_call_choice = &choice_;
}

KernelChoiceScope::~KernelChoiceScope() {
  t_call_choice = outer_;
}

void apply_kernel_choice(FwdShape& s, KernelChoice choice) {
  s.decode_allowed = choice == KernelChoice::automatic;
  s.force_192x128 = choice == KernelChoice::sm90_ws_192x128;
  s.force_128x128 = choice == KernelChoice::sm90_ws_128x128;
  s.force_64x128_2cta = choice == KernelChoice::sm90_ws_64x128_2cta;
  s.force_128x128_s4 = choice == KernelChoice::sm90_ws_128x128_s4;
  s.force_128x128_s3 = choice == KernelChoice::sm90_ws_128x128_s3;
}

bool sm90_late_pv_wait(FwdKernel kernel, int head_dim, bool causal, bool dense_or_causal) {
  if (kernel == FwdKernel::sm90_ws_128x128_s3) return true;  // head dim 128
  if (kernel == FwdKernel::sm90_ws_128x128_s4) return true;  // head dim 64, causal calls
  if (kernel != FwdKernel::sm90_ws_128x128) return false;
  return head_dim == 128 || (head_dim == 64 && !causal && dense_or_causal);
}

bool d64_four_stages(const FwdShape& s) {
  return s.head_dim == 64 && s.causal && s.dense_or_causal && s.seqlen_q < kD64FourStageMaxRows &&
         s.precision == Precision::standard && !s.force_128x128;
}

bool three_consumers_pay(const FwdShape& s) {
  if (s.causal && s.seqlen_q < kThreeConsumersCausalMinRows) return false;
  const long long heads = static_cast<long long>(s.hq) * s.batch;
  const long long sms = std::max(s.num_sms, 1);
  auto waves = [&](int rows) {
    const long long items = (s.seqlen_q + rows - 1) / rows * heads;
    return (items + sms - 1) / sms;
  };
  return 5 * waves(192) < 4 * waves(128);
}

bool two_ctas_pay(const FwdShape& s) {
  if (s.head_dim != 64 || !s.dense_or_causal || s.varlen || s.precision != Precision::standard ||
      s.force_128x128 || s.force_192x128 || s.force_64x128_2cta || s.seqlen_k > kTwoCtaMaxKeys) {
    return false;
  }
  const long long slots = 2LL * std::max(s.num_sms, 1);
  const long long items = (s.seqlen_q + 63LL) / 64 * s.hq * s.batch;
  if (s.causal) return items <= slots;
  return items <= kTwoCtaMaxWaves * slots && !three_consumers_pay(s);
}

const TileConfig& select_fwd_config(const FwdShape& s) {
  const int group = s.hkv > 0 ? s.hq / s.hkv : 1;
  const bool decode_fits =
      s.max_smem_per_block <= 0 || DecodePlan::smem_bytes(s.head_dim) <= s.max_smem_per_block;
  if (s.decode_allowed && s.sm_major >= 8 && s.precision == Precision::standard &&
      s.dense_or_causal && DecodePlan::eligible(s.seqlen_q, group) && decode_fits) {
    return tile_config(s.kv_quantized ? FwdKernel::decode_q8_16x64 : FwdKernel::decode_16x64);
  }
  if (s.sm_major == 9 && s.sm90_kernel_available) {
    if (s.precision == Precision::standard) {
      if (s.head_dim == 256) {
        const bool wide = s.dense_or_causal && s.seqlen_k >= kD256WideTileMinKeys;
        return tile_config(wide ? FwdKernel::sm90_ws_128x80_d256 : FwdKernel::sm90_ws_128x64_d256);
      }
      // ALiBi (dense and causal calls here, and windows alone at head dim 128: see
      // pick_forward_kernel) at head dim 64: the 2-consumer kernel, or the 3-consumer one where it
      // pays (or is forced), each in an instantiation with the bias; the two-CTA and 4-stage
      // kernels leave it out (FwdTraits::kAlibi, fwd_sm90.cuh: it cost their plain calls up to
      // 8.6%), whatever GPUATTN_KERNEL forces. At head dim 128 the plain call's rule (the 3-stage
      // kernel and the 2-stage one both have instantiations with the bias).
      if (s.alibi && s.head_dim == 64) {
        const bool three = s.dense_or_causal &&
                           (s.force_192x128 || (!s.force_128x128 && three_consumers_pay(s)));
        return tile_config(three ? FwdKernel::sm90_ws_192x128 : FwdKernel::sm90_ws_128x128);
      }
      if (s.head_dim == 128 && s.dense_or_causal &&
          (s.force_128x128_s3 || (s.seqlen_k <= kD128ThreeStageMaxKeys && !s.force_128x128))) {
        return tile_config(FwdKernel::sm90_ws_128x128_s3);
      }
      if (s.head_dim == 64 && s.dense_or_causal && s.causal && s.force_128x128_s4) {
        return tile_config(FwdKernel::sm90_ws_128x128_s4);
      }
      if (s.head_dim == 64 && s.dense_or_causal &&
          ((s.force_64x128_2cta && !s.varlen) || two_ctas_pay(s))) {
        return tile_config(FwdKernel::sm90_ws_64x128_2cta);
      }
      const bool three = s.head_dim == 64 && s.dense_or_causal &&
                         (s.force_192x128 || (!s.force_128x128 && three_consumers_pay(s)));
      if (three) return tile_config(FwdKernel::sm90_ws_192x128);
      return tile_config(d64_four_stages(s) ? FwdKernel::sm90_ws_128x128_s4
                                            : FwdKernel::sm90_ws_128x128);
    }
    if (s.head_dim != 256) return tile_config(FwdKernel::sm90_ws_128x64_compensated);
  }
  if (s.precision == Precision::compensated) return tile_config(FwdKernel::sm80_64x64_compensated);
  // The sm_80 kernel has no 2-m-tile configuration at head dim 256 (O alone is 128 registers).
  if (s.head_dim == 256) return tile_config(FwdKernel::sm80_64x64);
  const int large_m = tile_config(FwdKernel::sm80_128x64).block_m;
  const long long large_ctas =
      static_cast<long long>((s.seqlen_q + large_m - 1) / large_m) * s.hq * s.batch;
  if (large_ctas < 2LL * s.num_sms) return tile_config(FwdKernel::sm80_64x64);
  // The 128-row tiles only where they fit the device's shared memory per block (with a block
  // layout's bitmaps, so that the mask never changes the pick): not at head dim 128 on sm_86/89.
  const bool large_fits =
      s.max_smem_per_block <= 0 ||
      sm80_smem_bytes(FwdKernel::sm80_128x64, s.head_dim, true) <= s.max_smem_per_block;
  return tile_config(large_fits ? FwdKernel::sm80_128x64 : FwdKernel::sm80_64x64);
}

}  // namespace gpuattn
