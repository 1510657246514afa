// `gpuattn bench`: time per shape, µs/head, TFLOP/s and % of the measured GEMM peak for our kernel
// and the 3-kernel cuBLASLt baseline; JSON with device, date and commit; the table printed last.
// --shapes sweep is the FA3 figure's grid (bench/plot_sweep.py plots it against the anchors).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>

#include "common.h"
#include "core/decode_split.h"
#include "core/fwd_params.h"
#include "core/tile_config.h"
#if defined(GPUATTN_WITH_CUDA)
#include "cuda/fwd_sm90.h"
#include "device.h"
#endif
#include "prefill_lens.h"

namespace gpuattn::tool {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The baseline materializes [B*Hq, Sq, Sk] fp32 scores: skip it beyond this (plus its 32 MiB
// of cuBLASLt workspace).
constexpr std::size_t kMaxBaselineBytes = (std::size_t(8) << 30) + (std::size_t(32) << 20);
constexpr int kPeakGemmN = 8192;

struct Row {
  Case c;
  double flops = 0;
  int buffer_sets = 1;
  double ms = kNaN;
  double base_ms = kNaN;
  std::string base_note;
  std::string error;
  std::string config = "cpu";  // the tile configuration the CUDA dispatch picked
};

// The FA3 paper's sweep (its benchmark convention): fp16, B*S = `tokens` in total, hidden
// `hidden` = H*D, S from 512 to 16k, head dims 64, 128 and 256, causal and not.
// Keep in step with SWEEP in bench/torch_anchors.py.
std::vector<Case> sweep_shapes(const std::vector<int>& seqlens, int tokens, int hidden) {
  std::vector<Case> v;
  for (int d : {64, 128, 256}) {
    for (bool causal : {false, true}) {
      for (int s : seqlens) {
        v.push_back(dense_case(tokens / s, hidden / d, hidden / d, s, s, d, DType::f16, causal));
      }
    }
  }
  return v;
}

std::vector<Case> cuda_shapes(const std::string& set) {
  if (set == "sweep") return sweep_shapes({512, 1024, 2048, 4096, 8192, 16384}, 16384, 2048);
  const DType h = DType::f16, bf = DType::bf16;
  if (set == "varlen") {
    const std::vector<int>& l = prefill_lens();  // serving prefill, 16 prompts
    return {varlen_case(l, l, 32, 8, 128, h, true), varlen_case(l, l, 32, 8, 128, bf, true),
            varlen_case(l, l, 32, 8, 128, h, false), varlen_case(l, l, 32, 8, 64, h, true),
            varlen_case(l, l, 16, 16, 256, bf, true)};
  }
  std::vector<Case> v = {
      dense_case(1, 16, 16, 1024, 1024, 64, h, false),  // seed report 001's shape
      dense_case(4, 16, 16, 4096, 4096, 128, h, false),
      dense_case(4, 16, 16, 4096, 4096, 128, h, true),
      dense_case(4, 16, 16, 4096, 4096, 128, bf, false),
      dense_case(4, 16, 16, 4096, 4096, 128, bf, true),
      dense_case(1, 32, 32, 32768, 32768, 128, h, true),
      dense_case(16, 16, 16, 1024, 1024, 128, h, true),
      dense_case(4, 32, 32, 4096, 4096, 64, h, false),  // head dims 64 and 256 at S4096,
      dense_case(4, 8, 8, 4096, 4096, 256, h, false),   // hidden H*D = 2048 as above
  };
  if (set == "quick") v.resize(3);
  if (set == "seed") {
    const int seed[][2] = {{1, 1024},  {2, 2048},  {4, 4096}, {1, 8192},
                           {2, 16384}, {1, 32768}, {1, 65536}};
    for (const auto& s : seed) {
      for (bool causal : {false, true}) {
        v.push_back(dense_case(s[0], 32, 32, s[1], s[1], 128, h, causal));
      }
    }
  }
  return v;
}

std::vector<Case> cpu_shapes(const std::string& set) {
  // The sweep scaled down for the CPU backend (B*S = 512, H*D = 256): checks the plumbing only.
  if (set == "sweep") return sweep_shapes({128, 256, 512}, 512, 256);
  if (set == "varlen") {  // the plumbing of a packed batch: lengths 1 to 300
    const std::vector<int> l = {300, 17, 1, 129};
    return {varlen_case(l, l, 4, 2, 64, DType::f16, true),
            varlen_case(l, l, 4, 4, 128, DType::bf16, false)};
  }
  if (set == "seed") {
    throw UsageError(
        "gpuattn bench: --shapes seed is the seed report's (B, 32, S, 128) table, too large for "
        "the CPU backend; on cpu: default, quick, sweep or varlen (or --shape)");
  }
  const bool quick = set == "quick";
  std::vector<Case> v = {dense_case(1, 4, 4, 256, 256, 64, DType::f16, false),
                         dense_case(1, 4, 4, 256, 256, 64, DType::f16, true),
                         dense_case(1, 4, 4, 512, 512, 128, DType::bf16, true),
                         dense_case(1, 4, 4, 256, 256, 64, DType::f32, false)};
  if (quick) v.resize(3);  // the first three, as on the GPU
  return v;
}

void bench_cpu(Row& r, std::uint64_t seed, double warmup_ms, double rep_ms) {
  HostProblem hp(r.c, seed);
  AttentionArgs a = hp.host_args();
  a.lse = TensorView{};
  using clock = std::chrono::steady_clock;
  auto ms_since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  const auto w0 = clock::now();
  do attention_forward(a);  // at least one call: first-touch and thread start-up
  while (ms_since(w0) < warmup_ms);
  std::vector<double> ms;
  const auto r0 = clock::now();
  while (ms.size() < 3 || ms_since(r0) < rep_ms) {
    const auto t0 = clock::now();
    attention_forward(a);
    ms.push_back(ms_since(t0));
  }
  r.ms = median(ms);
  r.base_note = "cuda only";
}

#if defined(GPUATTN_WITH_CUDA)
struct DeviceSet {
  cuda::Buffer q, k, v, out;
  AttentionArgs args;
};

void bench_cuda(Row& r, std::uint64_t seed, double warmup_ms, double rep_ms, bool with_baseline) {
  const Case& c = r.c;
  HostProblem hp(c, seed);
  // One set of inputs: the timer flushes the L2 before every call (do_bench's protocol), so every
  // run reads them from HBM already. Rotating among copies as well (enough for twice the L2, up
  // to 32) was a protocol the anchors do not share. It was not what put the one-wave call 5.8%
  // above do_bench's time of the same kernel (session 60: 17.44 against 16.48 us): with one set
  // it took 17.3 us (session 61, call 2), within the run-to-run spread of the other shapes.
  r.buffer_sets = 1;
  std::vector<DeviceSet> sets(static_cast<std::size_t>(r.buffer_sets));
  cuda::Buffer cu_q, cu_k;  // varlen: every set's cu_seqlens (read only)
  cuda::Buffer alibi;       // c.alibi: the slopes (read only)
  if (c.alibi) {
    alibi = cuda::Buffer(hp.alibi.size() * sizeof(float));
    cuda::upload(alibi.get(), hp.alibi.data(), hp.alibi.size() * sizeof(float));
  }
  if (c.varlen()) {
    cu_q = cuda::Buffer(hp.cu_q.bytes());
    cu_k = cuda::Buffer(hp.cu_k.bytes());
    cuda::upload(cu_q.get(), hp.cu_q.data(), hp.cu_q.bytes());
    cuda::upload(cu_k.get(), hp.cu_k.data(), hp.cu_k.bytes());
  }
  for (auto& s : sets) {
    s.q = cuda::Buffer(hp.q.bytes());
    s.k = cuda::Buffer(hp.k.bytes());
    s.v = cuda::Buffer(hp.v.bytes());
    s.out = cuda::Buffer(hp.out.bytes());
    cuda::upload(s.q.get(), hp.q.data(), hp.q.bytes());
    cuda::upload(s.k.get(), hp.k.data(), hp.k.bytes());
    cuda::upload(s.v.get(), hp.v.data(), hp.v.bytes());
    s.args = make_args(c, Device::cuda, s.q.get(), s.k.get(), s.v.get(), s.out.get(), nullptr,
                       cu_q.get(), cu_k.get());
    if (c.alibi) {
      s.args.alibi_slopes = TensorView::contiguous(alibi.get(), DType::f32, Device::cuda, {c.hq});
    }
  }
  const auto n = sets.size();
  try {
    r.ms = median(cuda::time_sustained([&](int i) { attention_forward(sets[i % n].args); },
                                       warmup_ms, rep_ms));
  } catch (const std::exception& e) {
    r.error = e.what();
    cuda::synchronize();
  }

  if (!with_baseline) {
    r.base_note = "skipped (sweep)";
    return;
  }
  if (c.varlen()) {  // the 3-kernel baseline takes dense batches only
    r.base_note = "n/a: varlen";
    return;
  }
  if (c.softcap != 0.f || c.alibi) {  // nor soft-capping or ALiBi
    r.base_note = c.alibi ? "n/a: alibi" : "n/a: softcap";
    return;
  }
  const std::size_t ws_bytes = cuda::baseline_workspace_bytes(sets[0].args);
  const cuda::DeviceInfo info = cuda::device_info();
  if (ws_bytes > kMaxBaselineBytes || ws_bytes + (std::size_t(1) << 30) > info.free_bytes) {
    r.base_note = "n/a: workspace " + fmt(static_cast<double>(ws_bytes) / (1 << 30), 1) + " GiB";
    return;
  }
  try {
    cuda::Buffer ws(ws_bytes);
    r.base_ms = median(cuda::time_sustained(
        [&](int i) { cuda::baseline_forward(sets[i % n].args, ws); }, warmup_ms, rep_ms));
  } catch (const std::exception& e) {
    r.base_note = std::string("error: ") + e.what();
  }
}
#endif

// The tile configuration the CUDA dispatch picks for `c` (select_fwd_config, the rule of
// cuda_attention.cpp) on a device of compute capability `sm_major` with `num_sms` SMs and
// `max_smem_per_block` bytes of opt-in shared memory per block.
std::string pick_config(const Case& c, int sm_major, bool sm90_available, int num_sms,
                        int max_smem_per_block, KernelChoice choice = KernelChoice::automatic) {
  if ((c.dtype != DType::f16 && c.dtype != DType::bf16) ||
      (c.d != 64 && c.d != 128 && c.d != 256)) {
    return "none (no CUDA kernel)";
  }
  FwdShape s;
  s.sm_major = sm_major;
  // Caps above the fast tanh's run the sm_80 kernel (pick_forward_kernel), as does ALiBi in
  // compensated precision; at head dim 64 ALiBi takes sm90_ws_128x128 or sm90_ws_192x128
  // (s.alibi).
  s.sm90_kernel_available = sm90_available && !(c.softcap > FwdParams::kFastTanhMaxCap) &&
                            !(c.alibi && c.precision != Precision::standard);
  s.num_sms = num_sms;
  s.head_dim = c.d;
  s.causal = c.causal;
  s.dense_or_causal = true;  // the bench cases have no window or global tokens
  s.varlen = c.varlen();     // (GPUATTN_KERNEL=sm90_ws_64x128_2cta leaves varlen to the rule)
  s.precision = c.precision;
  s.seqlen_q = c.sq;
  s.seqlen_k = c.sk;  // head dim 256 on Hopper: 80-key tiles from kD256WideTileMinKeys keys
  s.batch = c.batch;
  s.hq = c.hq;
  s.alibi = c.alibi;
  s.hkv =
      c.hkv;  // the decode rule counts query heads a KV head (0 read as hq: GQA shown as decode)
  s.max_smem_per_block = max_smem_per_block;
  apply_kernel_choice(s, choice);
  const TileConfig& t = select_fwd_config(s);
  // Nothing fits (head dim 256 on a 99 KB device): the sm_80 launcher refuses the pick with
  // not_supported.
  const int need = sm80_smem_bytes(t.kernel, c.d, false);
  if (max_smem_per_block > 0 && need > max_smem_per_block) {
    return "none (" + std::to_string(need / 1024) + " KB smem > " +
           std::to_string(max_smem_per_block / 1024) + " KB)";
  }
  // (ALiBi at head dim 64 runs an instantiation of its own, without the late wait.)
  const bool late = c.precision == Precision::standard && !(c.alibi && c.d == 64) &&
                    sm90_late_pv_wait(t.kernel, c.d, c.causal, /*dense_or_causal=*/true);
  return std::string(t.name) + (late ? " (late P V wait)" : "");
}

#if defined(GPUATTN_WITH_CUDA)
// On this device, as cuda_attention.cpp decides (GPUATTN_KERNEL, see kernel_choice_from_env).
std::string pick_config_here(const Case& c, const cuda::DeviceInfo& info) {
  const KernelChoice choice = kernel_choice_from_env();
  const bool sm90 = choice != KernelChoice::sm80 && sm90::usable(c.dtype, c.d);
  return pick_config(c, info.cc_major, sm90, info.sm_count, info.max_smem_per_block, choice);
}
#endif

// Prints `text` wrapped at 100 columns, every line indented by `indent`.
void print_wrapped(const std::string& text, const std::string& indent) {
  std::string line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > 100) {
      std::cout << indent << line << "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = end + 1;
  }
  if (!line.empty()) std::cout << indent << line << "\n";
}

// The stages column of --show-config: the decode kernels' ring depth is DecodePlan's by head dim
// (the table's entry holds one figure), the others' the entry's.
std::string stages_text(const TileConfig& t) {
  const bool q8 = t.kernel == FwdKernel::decode_q8_16x64;
  if (t.kernel != FwdKernel::decode_16x64 && !q8) return std::to_string(t.stages);
  const int scale = q8 ? 2 : 1;  // the 8-bit ring holds twice the stages (the same bytes)
  std::string text;
  for (const int d : {64, 128, 256}) {
    text += (text.empty() ? "" : "/") + std::to_string(scale * DecodePlan::stages(d));
  }
  text += " (D64/128/256";
  if (!q8) text += "; lean D64 " + std::to_string(DecodePlan::stages(64, true));
  return text + ")";
}

// `gpuattn bench --show-config`: the table of core/tile_config.h and the pick for each shape.
int show_config(const std::string& set, const std::vector<Case>& own) {
  std::cout << "forward tile configurations (src/core/tile_config.h)\n";
  std::vector<std::vector<std::string>> table;
  for (const TileConfig& t : kFwdTileConfigs) {
    table.push_back({t.name, std::to_string(t.block_m) + "x" + std::to_string(t.block_n),
                     std::to_string(t.warps), stages_text(t)});
  }
  print_table({"config", "rows x keys", "warps", "stages"}, table);
  for (const TileConfig& t : kFwdTileConfigs) {
    std::cout << "\n" << t.name << ":\n";
    print_wrapped(t.why, "  ");
  }

  const std::vector<Case> cases = own.empty() ? cuda_shapes(set) : own;
  std::vector<std::string> header = {"shape", "dtype", "causal", "128-row CTAs"};
  std::vector<std::function<std::string(const Case&)>> picks;
  std::cout << "\n";
  print_wrapped("The dispatch's pick per shape of " +
                    (own.empty() ? "--shapes " + set : "--shape") +
                    " (dense or causal, standard precision; on Hopper a window, global tokens "
                    "or a block layout run sm90_ws_128x128, or sm90_ws_128x64_d256 at head dim "
                    "256, and "
                    "compensated precision sm90_ws_128x64_compensated at head dims 64/128, "
                    "elsewhere sm80_64x64_compensated; 'late P V wait': each tile's softmax "
                    "overlaps the P V GEMM before it, see sm90_late_pv_wait):",
                "");
#if defined(GPUATTN_WITH_CUDA)
  if (cuda_available()) {
    const cuda::DeviceInfo info = cuda::device_info();
    const char* env = std::getenv("GPUATTN_KERNEL");
    std::cout << "this device: " << info.name << " (sm " << info.cc_major << "." << info.cc_minor
              << ", " << info.sm_count << " SMs, " << info.max_smem_per_block / 1024
              << " KB shared memory per block), GPUATTN_KERNEL=" << (env ? env : "(unset)") << "\n";
    header.push_back("config");
    picks.push_back([info](const Case& c) { return pick_config_here(c, info); });
  }
#endif
  if (picks.empty()) {
    print_wrapped(
        "no CUDA device here (or a build without the CUDA backend): the picks for an "
        "H200 (sm 9.0, 132 SMs, 227 KB shared memory per block, a build with sm_90a), an A100 "
        "(sm 8.0, 108 SMs, 163 KB) and an L40S (sm 8.9, 142 SMs, 99 KB)",
        "");
    header.insert(header.end(), {"H200", "A100", "L40S"});
    picks.push_back([](const Case& c) { return pick_config(c, 9, true, 132, 227 * 1024); });
    picks.push_back([](const Case& c) { return pick_config(c, 8, false, 108, 163 * 1024); });
    picks.push_back([](const Case& c) { return pick_config(c, 8, false, 142, 99 * 1024); });
  }
  table.clear();
  for (const Case& c : cases) {
    const long long ctas = static_cast<long long>((c.sq + 127) / 128) * c.hq * c.batch;
    std::vector<std::string> row = {c.shape() + c.option_words(), to_string(c.dtype), c.causal ? "yes" : "no",
                                    std::to_string(ctas)};
    for (const auto& pick : picks) row.push_back(pick(c));
    table.push_back(row);
  }
  print_table(header, table);
  return 0;
}

double tflops(double flops, double ms) {
  return flops / (ms * 1e-3) / 1e12;
}
// Enough digits for the CPU backend's fractions of a TFLOP/s.
std::string fmt_tflops(double x) {
  return fmt(x, x < 10 ? 3 : 1);
}

// --shape SPEC: shapes of the caller's, ';'-separated, each in parse_shape_words' words.
std::vector<Case> parse_shapes(const std::string& spec) {
  std::vector<Case> out;
  for (const std::string& one : split_shapes("gpuattn bench", spec)) {
    out.push_back(parse_shape_words("gpuattn bench", one));
  }
  return out;
}

// --only WORDS: whether every word names a word of the case's label ("D64", "S512", "causal",
// "float16", ...); "non-causal" matches the cases without "causal".
bool matches_only(const Case& c, const std::string& words) {
  std::istringstream label_in(c.label()), words_in(words);
  std::set<std::string> have;
  for (std::string w; label_in >> w;) have.insert(w);
  for (std::string w; words_in >> w;) {
    if (w == "non-causal" ? have.count("causal") != 0 : have.count(w) == 0) return false;
  }
  return true;
}

void print_help() {
  std::cout <<
      R"(usage: gpuattn bench [--device cpu|cuda|auto] [--shapes default|seed|quick|sweep|varlen]
                    [--shape SPEC] [--json FILE] [--warmup MS] [--rep MS] [--only WORDS]
                    [--precision standard|compensated] [--show-config]

Times attention_forward per shape (CUDA: the protocol of triton.testing.do_bench, which times
the torch anchors: warm-up by time, then calls for --rep ms, each between CUDA events after a
256 MiB L2-flush memset, one set of inputs, the median;
CPU: median wall time of the calls in --rep ms, at least 3) and prints time, µs/head
(time / (B*Hq)), TFLOP/s (4*Sq*Sk*D*B*Hq, causal: visible elements only), % of the measured
peak (a cuBLASLt 8192^3 GEMM of the same dtype, measured once per run), and the same for the
3-kernel baseline (cuBLASLt QK^T, softmax kernel, cuBLASLt PV; n/a when its score matrix
would exceed 8 GiB), with the ratio ours/baseline. The table is printed last.

  --device  cuda, cpu, or auto (default: cuda when a CUDA device is visible); the CPU backend
            runs small shapes (B1 H4 S256..512)
  --shapes  default: the DESIGN.md anchor shapes; seed: plus the seed report's (B,32,S,128)
            table, causal and not; quick: the first three; sweep: the FA3 figure's grid, fp16,
            B*S = 16k tokens, H*D = 2048, S 512..16384, D 64, 128 and 256, causal and not
            (36 shapes, no baseline, warm-up 10 ms by default; on cpu a scaled-down grid,
            B*S = 512, H*D = 256, S 128..512); bench/plot_sweep.py plots it; varlen: serving
            prefill, one packed batch of 16 prompts of 1 to 4096 tokens (22,600 in all),
            GQA 32:8 D128 causal f16 / bf16 and not, D64, and 16 heads of D256 (no baseline;
            on cpu 4 prompts of 1 to 300 tokens); TFLOP/s counts each prompt's own keys
  --shape   your own shapes instead of --shapes': ';'-separated, each of words B<n> (batch,
            default 1), H<n> (query and KV heads) or Hq<n> Hkv<n>, S<n> or Sq<n> Sk<n>, D<n>,
            and optionally causal, a dtype (f16, the default, or bf16), softcap<n> (logit
            soft-capping at n, e.g. softcap50) and alibi (the paper's slopes a head); neither
            has a baseline; e.g.
            --shape "B1 H16 S1024 D64; B2 Hq32 Hkv8 S4096 D128 causal bf16"
  --json    also write the results (device, date, commit, peak) as JSON to FILE; each
            result names the tile configuration the dispatch picked ("config")
  --warmup  milliseconds of warm-up calls before timing (default 25 on cuda, 10 for sweep,
            0 on cpu; at least one call)
  --rep     milliseconds of timed calls (default 100 on cuda, 300 on cpu)
  --only    only the shapes of --shapes whose label has every one of these space-separated
            words (e.g. "D64 causal", "S1024", "bfloat16"; "non-causal": without causal), so
            that an A/B spends its time on the shapes a change is about
  --precision
            standard (default) or compensated: every shape in that mode (the CUDA dispatch
            picks the compensated configuration; see --show-config)
  --show-config
            print the tile configurations (src/core/tile_config.h) and the one the dispatch
            picks for each shape of --shapes on this device (no GPU: on an H200, an A100 and
            an L40S), then exit without timing
)";
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  const Flags flags("gpuattn bench", args,
                    {"device", "json", "shapes", "shape", "warmup", "rep", "precision", "only"},
                    {"show-config"});
  if (flags.wants_help()) {
    print_help();
    return 0;
  }
  const std::string device = flags.choice("device", "auto", {"auto", "cpu", "cuda"});
  const std::string shapes =
      flags.choice("shapes", "default", {"default", "seed", "quick", "sweep", "varlen"});
  const std::string json = flags.get("json", "");
  const Precision precision =
      flags.choice("precision", "standard", {"standard", "compensated"}) == "compensated"
          ? Precision::compensated
          : Precision::standard;
  if (flags.has("shape") && flags.has("shapes")) {
    throw UsageError("gpuattn bench: --shape and --shapes name the shapes both; give one");
  }
  const std::vector<Case> own =
      flags.has("shape") ? parse_shapes(flags.get("shape", "")) : std::vector<Case>{};
  if (flags.has("show-config")) {
    // It prints the table and the picks; the flags that time cases have nothing to act on.
    for (const char* timing : {"json", "warmup", "rep", "precision", "only", "device"}) {
      if (flags.has(timing)) {
        throw UsageError("gpuattn bench: --" + std::string(timing) +
                         " does not apply to --show-config (nothing is timed; the picks are "
                         "this GPU's, or without one an H200's, A100's and L40S's)");
      }
    }
    return show_config(shapes, own);
  }
  if (flags.has("json")) check_output_path("gpuattn bench", "json", json);
  const bool on_cuda = device == "cuda" || (device == "auto" && cuda_available());
  const bool sweep = shapes == "sweep";
  // Milliseconds, do_bench's defaults as the torch anchors use them (bench/torch_anchors.py).
  const int warmup_ms = flags.get_int("warmup", on_cuda ? (sweep ? 10 : 25) : 0, 0, 100000);
  const int rep_ms = flags.get_int("rep", on_cuda ? 100 : 300, 1, 1000000);
  std::vector<Case> cases = !own.empty() ? own : on_cuda ? cuda_shapes(shapes) : cpu_shapes(shapes);
  for (Case& c : cases) c.precision = precision;
  if (flags.has("only")) {
    const std::string only = flags.get("only", "");
    std::vector<Case> kept;
    for (const Case& c : cases) {
      if (matches_only(c, only)) kept.push_back(c);
    }
    if (kept.empty()) {
      throw UsageError("gpuattn bench: --only '" + only + "' matches none of the " +
                       std::to_string(cases.size()) + " shapes of " +
                       (own.empty() ? "--shapes " + shapes : "--shape") +
                       (on_cuda ? "" : " on cpu") + " (a shape's words: e.g. '" +
                       cases.front().label() + "')");
    }
    cases = std::move(kept);
  }
  if (on_cuda && !cuda_available()) {
    std::cerr << "gpuattn bench: --device cuda, but "
#if defined(GPUATTN_WITH_CUDA)
                 "no CUDA device is visible\n";
#else
                 "this build has no CUDA backend\n";
#endif
    return 1;
  }

  std::string device_name = host_cpu_name();
  double peak_f16 = kNaN, peak_bf16 = kNaN;
  std::size_t l2_bytes = 0;
  int sm_count = 0;
#if defined(GPUATTN_WITH_CUDA)
  if (on_cuda) {
    const cuda::DeviceInfo info = cuda::device_info();
    device_name = info.name;
    l2_bytes = info.l2_bytes;
    sm_count = info.sm_count;
    std::cout << "gpuattn bench on " << device_name << " (" << info.sm_count << " SMs, L2 "
              << info.l2_bytes / (1 << 20) << " MiB), commit " << git_commit() << "\n";
    try {
      peak_f16 = cuda::measure_gemm_tflops(DType::f16, kPeakGemmN, 5, 20);
      peak_bf16 = cuda::measure_gemm_tflops(DType::bf16, kPeakGemmN, 5, 20);
    } catch (const std::exception& e) {
      std::cout << "peak GEMM failed: " << e.what() << "\n";
    }
    std::cout << "measured peak (cuBLASLt " << kPeakGemmN << "^3 GEMM): f16 " << fmt(peak_f16, 1)
              << " TFLOP/s, bf16 " << fmt(peak_bf16, 1) << " TFLOP/s\n";
  }
#endif
  if (!on_cuda) {
    std::cout << "gpuattn bench on cpu (" << device_name << ", " << hardware_threads()
              << " threads), commit " << git_commit() << "\n";
  }

  if (sweep && !on_cuda) {
    std::cout << "--shapes sweep on cpu: a scaled-down grid (B*S = 512, H*D = 256, S 128..512), "
                 "not the FA3 shapes\n";
  }
  std::vector<Row> rows;
  int errors = 0;
  const std::uint64_t seed = fresh_seed() % 1000000007ull;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    Row r;
    r.c = cases[i];
    r.flops = case_flops(r.c);
#if defined(GPUATTN_WITH_CUDA)
    if (on_cuda) r.config = pick_config_here(r.c, cuda::device_info());
#endif
    try {
      if (on_cuda) {
#if defined(GPUATTN_WITH_CUDA)
        bench_cuda(r, seed + i, warmup_ms, rep_ms, !sweep);
#endif
      } else {
        bench_cpu(r, seed + i, warmup_ms, rep_ms);
      }
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    errors += r.error.empty() ? 0 : 1;
    std::cout << "[" << i + 1 << "/" << cases.size() << "] " << r.c.label() << ": "
              << (r.error.empty() ? fmt(r.ms * 1e3, 1) + " us, " +
                                        fmt_tflops(tflops(r.flops, r.ms)) + " TFLOP/s"
                                  : "error: " + r.error)
              << (!std::isnan(r.base_ms) ? "; baseline " + fmt(r.base_ms * 1e3, 1) + " us"
                  : r.base_note.empty()  ? std::string()  // the call failed before the baseline
                                         : "; baseline " + r.base_note)
              << "\n";
    std::cout.flush();
    rows.push_back(r);
  }

  auto peak_of = [&](DType t) {
    return t == DType::f16 ? peak_f16 : (t == DType::bf16 ? peak_bf16 : kNaN);
  };
  if (flags.has("json")) {
    std::vector<JsonObject> items;
    for (const auto& r : rows) {
      const Case& c = r.c;
      const double heads = static_cast<double>(c.batch) * c.hq;
      JsonObject j;
      j.add("label", c.label()).add("shape", c.shape()).add("dtype", to_string(c.dtype));
      j.add("batch", c.batch).add("hq", c.hq).add("hkv", c.hkv).add("seqlen_q", c.sq);
      j.add("seqlen_k", c.sk).add("head_dim", c.d).add("causal", c.causal);
      j.add("softcap", static_cast<double>(c.softcap)).add("alibi", c.alibi);
      j.add("flops", r.flops).add("buffer_sets", r.buffer_sets);
      j.add("ours_ms", r.ms).add("ours_us_per_head", r.ms * 1e3 / heads);
      j.add("ours_tflops", tflops(r.flops, r.ms));
      j.add("ours_pct_peak", 100 * tflops(r.flops, r.ms) / peak_of(c.dtype));
      j.add("baseline_ms", r.base_ms).add("baseline_us_per_head", r.base_ms * 1e3 / heads);
      j.add("baseline_tflops", tflops(r.flops, r.base_ms));
      j.add("baseline_pct_peak", 100 * tflops(r.flops, r.base_ms) / peak_of(c.dtype));
      j.add("ours_over_baseline", r.base_ms / r.ms).add("baseline_note", r.base_note);
      j.add("error", r.error).add("config", r.config);
      items.push_back(j);
    }
    JsonObject peak;
    peak.add("f16", peak_f16).add("bf16", peak_bf16);
    JsonObject top;
    top.add("tool", "gpuattn bench").add("device", on_cuda ? "cuda" : "cpu");
    top.add("device_name", device_name).add("sm_count", sm_count);
    top.add("l2_bytes", static_cast<std::int64_t>(l2_bytes));
    top.add("date", iso_date_utc()).add("commit", git_commit());
    top.add("shapes", own.empty() ? shapes : "custom: " + flags.get("shape", ""))
        .add("warmup_ms", warmup_ms)
        .add("rep_ms", rep_ms);
    top.add("precision", to_string(precision));
    top.add("timing", on_cuda ? "median of CUDA-event-timed calls, do_bench protocol: warm-up by "
                                "time, each call after a 256 MiB L2-flush memset, one set of "
                                "inputs"
                              : "median wall time");
    top.add("lse", false);
    const char* kernel_env = std::getenv("GPUATTN_KERNEL");
    top.add("gpuattn_kernel_env", kernel_env ? kernel_env : "");
    top.add_raw("peak_tflops", peak.str(2)).add("peak_method", "cuBLASLt 8192^3 GEMM, median");
    top.add_raw("results", json_array(items, 2));
    write_file(json, top.str());
  }

  std::vector<std::vector<std::string>> table;
  for (const auto& r : rows) {
    const double heads = static_cast<double>(r.c.batch) * r.c.hq;
    const double tf = tflops(r.flops, r.ms), btf = tflops(r.flops, r.base_ms);
    table.push_back({r.c.shape() + r.c.option_words(), to_string(r.c.dtype), r.c.causal ? "yes" : "no",
                     r.error.empty() ? fmt(r.ms * 1e3, 1) : "error", fmt(r.ms * 1e3 / heads, 3),
                     fmt_tflops(tf), fmt(100 * tf / peak_of(r.c.dtype), 1), fmt(r.base_ms * 1e3, 1),
                     fmt_tflops(btf), fmt(r.base_ms / r.ms, 2)});
  }
  std::cout << "\n";
  if (on_cuda) {
    std::cout << device_name << ", commit " << git_commit() << ", peak f16 " << fmt(peak_f16, 1)
              << " / bf16 " << fmt(peak_bf16, 1) << " TFLOP/s (cuBLASLt " << kPeakGemmN << "^3)\n";
  } else {
    std::cout << "cpu backend (" << device_name << "), commit " << git_commit() << "\n";
  }
  print_table({"shape", "dtype", "causal", "time_us", "us/head", "TFLOP/s", "%peak", "base_us",
               "base_TFLOP/s", "ours/base"},
              table);
  return errors ? 1 : 0;
}

}  // namespace gpuattn::tool
