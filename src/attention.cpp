// Public entry point: validate once, then hand the params to the backend.
#include "gpuattn/attention.h"

#include "core/append_kv.h"
#include "core/decode_split.h"
#include "core/fwd_params.h"
#include "core/rotary.h"
#include "cpu/cpu_append_kv.h"
#include "cpu/cpu_attention.h"
#include "cpu/cpu_rotary.h"
#include "gpuattn/kv_cache.h"
#include "gpuattn/rotary.h"
#if defined(GPUATTN_WITH_CUDA)
#include "cuda/cuda_attention.h"
#endif

namespace gpuattn {

void attention_forward(const AttentionArgs& args) {
  const FwdParams p = make_fwd_params(args);
  if (p.device == Device::cpu) {
    cpu_attention_forward(p);
    return;
  }
#if defined(GPUATTN_WITH_CUDA)
  cuda_attention_forward(p, args.stream);
#else
  throw Error(ErrorCode::not_supported,
              "gpuattn::attention_forward: tensors are on cuda but this build has no CUDA backend");
#endif
}

void check_attention_args(const AttentionArgs& args) {
  (void)make_fwd_params(args);
}

std::int64_t attention_counters_needed(const AttentionArgs& args) {
  AttentionArgs a = args;
  a.counters = TensorView{};  // the answer sizes them: a host view here is no error
  const FwdParams p = make_fwd_params(a);
  if (p.precision == Precision::standard && p.dense_or_causal() &&
      DecodePlan::eligible(p.seqlen_q, p.group_size())) {
    // A decode call's split counts: one per KV head and 16-row block of each sequence (slots 0:
    // the plan's units do not depend on the split count).
    const DecodePlan d =
        DecodePlan::plan(p.batch, p.hkv, p.group_size(), p.seqlen_q, p.seqlen_k, 0);
    return d.units > 1 ? d.units : 1;
  }
  return 1;  // a persistent causal or masked call's work counter
}

void append_kv(const AppendKvArgs& args) {
  const AppendParams p = make_append_params(args);
  if (p.device == Device::cpu) {
    cpu_append_kv(p);
    return;
  }
#if defined(GPUATTN_WITH_CUDA)
  cuda_append_kv(p, args.stream);
#else
  throw Error(ErrorCode::not_supported,
              "gpuattn::append_kv: the caches are on cuda but this build has no CUDA backend");
#endif
}

void apply_rotary(const RotaryArgs& args) {
  const RotaryParams p = make_rotary_params(args);
  if (p.device == Device::cpu) {
    cpu_apply_rotary(p);
    return;
  }
#if defined(GPUATTN_WITH_CUDA)
  cuda_apply_rotary(p, args.stream);
#else
  throw Error(ErrorCode::not_supported,
              "gpuattn::apply_rotary: x is on cuda but this build has no CUDA backend");
#endif
}

bool cuda_available() {
#if defined(GPUATTN_WITH_CUDA)
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

const char* to_string(Backend b) {
  switch (b) {
    case Backend::automatic: return "auto";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "unknown";
}

const char* to_string(Precision p) {
  return p == Precision::standard ? "standard" : "compensated";
}

}  // namespace gpuattn
