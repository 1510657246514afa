// `gpuattn dist`: sequence-parallel attention over several ranks (GPUs, or CPU ranks), timed
// against one rank computing the whole sequence, and checked against that rank's output.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.h"
#include "gpuattn/distributed.h"
#if defined(GPUATTN_WITH_CUDA)
#include "device.h"
#endif

namespace gpuattn::tool {
namespace {

const char* kHelp = R"(usage: gpuattn dist [flags]

Sequence-parallel attention (gpuattn::sequence_parallel_attention) over several ranks, timed
against one rank computing the whole sequence (attention_forward), and checked against that
rank's output. Each rank holds S / ranks rows of q, k and v.

  --device cpu|cuda|auto    auto: cuda when a CUDA device is visible
  --ranks N                 cuda: GPUs 0..N-1 (default: every visible GPU); cpu: default 2
  --transport nccl|peer_copy   cuda ranks' transport (default nccl)
  --seq LIST                whole-sequence lengths, comma separated, multiples of 2 x ranks
                            with the zigzag layout, else of ranks (default cuda
                            16384,32768,65536,131072; cpu 512; rounded up to such multiples)
  --batch B                 default 1
  --heads H                 query heads (default cuda 32, cpu 4)
  --kv-heads H              default: --heads
  --dim D                   64, 128 or 256 (default 128)
  --dtype f16|bf16          default bf16
  --full                    non-causal (default: causal)
  --strategies LIST         ring,all_gather,head_parallel (default all three, head_parallel
                            only where --heads and --kv-heads are multiples of the ranks, which
                            it needs)
  --layouts LIST            zigzag,contiguous (default both)
  --rep N                   timed calls per point, after one warm-up (default 5; median)
  --json FILE               the table as JSON, with device, date and commit
)";

// The comma-separated items of flag --name's value: at least one, none empty.
std::vector<std::string> split(const std::string& name, const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  if (!s.empty() && s.back() == ',') out.emplace_back();  // getline drops a trailing empty item
  for (const std::string& one : out) {
    if (one.empty()) {
      throw UsageError("gpuattn dist: --" + name + " '" + s + "' has an empty item");
    }
  }
  if (out.empty()) throw UsageError("gpuattn dist: --" + name + " is empty");
  return out;
}

// Host or device memory of one rank.
class Mem {
 public:
  Mem(bool cuda, int device, std::size_t bytes) : cuda_(cuda), device_(device) {
#if defined(GPUATTN_WITH_CUDA)
    if (cuda) {
      cuda::set_device(device);
      dev_ = std::make_unique<cuda::Buffer>(bytes);
      return;
    }
#endif
    host_.assign(bytes / 8 + 2, 0);
  }
  void* get() {
#if defined(GPUATTN_WITH_CUDA)
    if (cuda_) return dev_->get();
#endif
    return host_.data();
  }
  void upload(const void* src, std::size_t bytes) {
#if defined(GPUATTN_WITH_CUDA)
    if (cuda_) {
      cuda::set_device(device_);
      cuda::upload(get(), src, bytes);
      return;
    }
#endif
    std::memcpy(get(), src, bytes);
  }
  void download(void* dst, std::size_t bytes) {
#if defined(GPUATTN_WITH_CUDA)
    if (cuda_) {
      cuda::set_device(device_);
      cuda::download(dst, get(), bytes);
      return;
    }
#endif
    std::memcpy(dst, get(), bytes);
  }

 private:
  bool cuda_;
  int device_;
  std::vector<std::uint64_t> host_;
#if defined(GPUATTN_WITH_CUDA)
  std::unique_ptr<cuda::Buffer> dev_;
#endif
};

void sync_all(bool cuda, int ranks) {
#if defined(GPUATTN_WITH_CUDA)
  if (!cuda) return;
  for (int d = 0; d < ranks; ++d) {
    cuda::set_device(d);
    cuda::synchronize();
  }
  cuda::set_device(0);
#else
  (void)cuda;
  (void)ranks;
#endif
}

// Wall-clock milliseconds of fn() (then every device synchronized): median of `rep` after one.
double time_ms(const std::function<void()>& fn, bool cuda, int devices, int rep) {
  fn();
  sync_all(cuda, devices);
  std::vector<double> ms;
  for (int i = 0; i < rep; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    sync_all(cuda, devices);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(ms);
}

}  // namespace

int run_dist(const std::vector<std::string>& args) {
  const Flags f("gpuattn dist", args,
                {"device", "ranks", "transport", "seq", "batch", "heads", "kv-heads", "dim",
                 "dtype", "strategies", "layouts", "rep", "json"},
                {"full"});
  if (f.wants_help()) {
    std::cout << kHelp;
    return 0;
  }
  const std::string device = f.choice("device", "auto", {"auto", "cpu", "cuda"});
  const bool on_cuda = device == "cuda" || (device == "auto" && cuda_available());
  int visible = 0;
#if defined(GPUATTN_WITH_CUDA)
  if (on_cuda) visible = cuda::device_count();
#endif
  if (on_cuda && visible == 0) {  // not a usage error: exit 1, as verify and bench
    throw std::runtime_error("gpuattn dist: --device cuda, but no CUDA device is visible");
  }
  if (f.has("json")) check_output_path("gpuattn dist", "json", f.get("json", ""));
  const int ranks = f.get_int("ranks", on_cuda ? visible : 2, 1, on_cuda ? visible : 64);
  if (!on_cuda && f.has("transport")) {
    throw UsageError(
        "gpuattn dist: --transport does not apply on the CPU (its ranks exchange "
        "through host memory)");
  }
  const std::string transport_s = f.choice("transport", "nccl", {"nccl", "peer_copy"});
  const Transport transport = transport_s == "nccl" ? Transport::nccl : Transport::peer_copy;
  std::vector<ShardLayout> layouts;
  for (const auto& s : split("layouts", f.get("layouts", "zigzag,contiguous"))) {
    if (s == "zigzag") {
      layouts.push_back(ShardLayout::zigzag);
    } else if (s == "contiguous") {
      layouts.push_back(ShardLayout::contiguous);
    } else {
      throw UsageError("gpuattn dist: --layouts '" + s + "' is not zigzag or contiguous");
    }
  }
  // A zigzag split cuts the sequence in 2 x ranks chunks, a contiguous one in ranks.
  const bool zigzag =
      std::find(layouts.begin(), layouts.end(), ShardLayout::zigzag) != layouts.end();
  const long long unit = zigzag ? 2LL * ranks : ranks;
  const std::string unit_why = zigzag ? " (2 x ranks, for the zigzag layout)" : " (ranks)";
  std::vector<std::int64_t> seqs;
  constexpr long long kMostSeq = 1LL << 24;  // 16M tokens: the sizes below stay in int64
  if (!f.has("seq")) {                       // the defaults, rounded up to a multiple of the unit
    for (const long long v : on_cuda ? std::vector<long long>{16384, 32768, 65536, 131072}
                                     : std::vector<long long>{512}) {
      seqs.push_back((v + unit - 1) / unit * unit);
    }
  }
  for (const auto& s : f.has("seq") ? split("seq", f.get("seq", "")) : std::vector<std::string>{}) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (*end != 0 || errno == ERANGE || !std::isdigit(static_cast<unsigned char>(s[0])) || v <= 0 ||
        v > kMostSeq || v % unit != 0) {
      throw UsageError("gpuattn dist: --seq '" + s + "' is not a positive multiple of " +
                       std::to_string(unit) + unit_why + " up to " + std::to_string(kMostSeq));
    }
    seqs.push_back(v);
  }
  const int batch = f.get_int("batch", 1, 1, 1024);
  const int heads = f.get_int("heads", on_cuda ? 32 : 4, 1, 1024);
  const int kv_heads = f.get_int("kv-heads", heads, 1, heads);
  if (heads % kv_heads != 0) {
    throw UsageError("gpuattn dist: --heads " + std::to_string(heads) +
                     " is not a multiple of --kv-heads " + std::to_string(kv_heads));
  }
  const int dim = std::stoi(f.choice("dim", "128", {"64", "128", "256"}));  // the kernels' dims
  const DType dtype =
      f.choice("dtype", "bf16", {"f16", "bf16"}) == "f16" ? DType::f16 : DType::bf16;
  const bool causal = !f.has("full");
  // head_parallel splits the heads over the ranks: by default it runs only where they divide.
  const bool heads_divide = heads % ranks == 0 && kv_heads % ranks == 0;
  if (!f.has("strategies") && !heads_divide) {
    std::cout << "gpuattn dist: head_parallel left out (--heads " << heads << " and --kv-heads "
              << kv_heads << " are not both multiples of " << ranks << " ranks)\n";
  }
  std::vector<SeqParallelStrategy> strategies;
  for (const auto& s :
       split("strategies", f.get("strategies", heads_divide ? "ring,all_gather,head_parallel"
                                                            : "ring,all_gather"))) {
    if (s == "ring") {
      strategies.push_back(SeqParallelStrategy::ring);
    } else if (s == "all_gather") {
      strategies.push_back(SeqParallelStrategy::all_gather);
    } else if (s == "head_parallel") {
      if (!heads_divide) {
        throw UsageError("gpuattn dist: --strategies head_parallel needs --heads (" +
                         std::to_string(heads) + ") and --kv-heads (" + std::to_string(kv_heads) +
                         ") multiples of --ranks (" + std::to_string(ranks) + ")");
      }
      strategies.push_back(SeqParallelStrategy::head_parallel);
    } else {
      throw UsageError("gpuattn dist: --strategies '" + s +
                       "' is not ring, all_gather or head_parallel");
    }
  }
  const int rep = f.get_int("rep", 5, 1, 1000);
  const Device dev = on_cuda ? Device::cuda : Device::cpu;

  std::vector<int> devices;
  for (int r = 0; r < ranks; ++r) devices.push_back(r);
  const RankGroup group =
      on_cuda ? RankGroup::local_cuda(devices, transport) : RankGroup::local_cpu(ranks);
  std::string device_name = "cpu";
#if defined(GPUATTN_WITH_CUDA)
  if (on_cuda) {
    cuda::set_device(0);
    device_name = cuda::device_info().name;
  }
#endif
  std::cout << "gpuattn dist: " << ranks << " rank(s) on " << (on_cuda ? device_name : "cpu")
            << (on_cuda ? std::string(" (transport ") + to_string(transport) + ")" : "") << ", "
            << to_string(dtype) << ", B" << batch << " Hq" << heads << " Hkv" << kv_heads << " D"
            << dim << (causal ? " causal" : " non-causal") << ", commit " << git_commit() << "\n";

  const std::size_t es = element_size(dtype);
  std::vector<std::vector<std::string>> rows;
  std::vector<JsonObject> json_rows;
  // A random block of a prime length, repeated: fast to make at 10^9 elements, and no two
  // ranks' shards alike.
  HostTensor block(dtype, {16777213});
  fill_random(block, 12345, 1.f);
  for (const std::int64_t S : seqs) {
    const std::int64_t rowq = static_cast<std::int64_t>(heads) * dim,
                       rowk = static_cast<std::int64_t>(kv_heads) * dim;
    auto make_global = [&](std::int64_t row, std::int64_t salt) {
      std::vector<unsigned char> t(static_cast<std::size_t>(batch * S * row) * es);
      const std::int64_t n = batch * S * row;
      parallel_for(n, hardware_threads(), [&](std::int64_t a, std::int64_t b) {
        for (std::int64_t i = a; i < b; ++i) {
          std::memcpy(&t[static_cast<std::size_t>(i) * es],
                      static_cast<const char*>(block.data()) +
                          ((i * 7 + salt) % block.numel()) * static_cast<std::int64_t>(es),
                      es);
        }
      });
      return t;
    };
    const auto gq = make_global(rowq, 1), gk = make_global(rowk, 5), gv = make_global(rowk, 11);
    const double flops =
        4.0 * batch * heads * dim * (causal ? static_cast<double>(S) * (S + 1) / 2 : double(S) * S);

    // One rank, the whole sequence, on rank 0's device.
    Mem q1(on_cuda, 0, gq.size()), k1(on_cuda, 0, gk.size()), v1(on_cuda, 0, gv.size()),
        o1(on_cuda, 0, gq.size());
    q1.upload(gq.data(), gq.size());
    k1.upload(gk.data(), gk.size());
    v1.upload(gv.data(), gv.size());
    AttentionArgs one;
    one.q = TensorView::contiguous(q1.get(), dtype, dev, {batch, S, heads, dim});
    one.k = TensorView::contiguous(k1.get(), dtype, dev, {batch, S, kv_heads, dim});
    one.v = TensorView::contiguous(v1.get(), dtype, dev, {batch, S, kv_heads, dim});
    one.out = TensorView::contiguous(o1.get(), dtype, dev, {batch, S, heads, dim});
    one.causal = causal;
#if defined(GPUATTN_WITH_CUDA)
    if (on_cuda) cuda::set_device(0);
#endif
    const double ms1 = time_ms([&] { attention_forward(one); }, on_cuda, 1, rep);
    std::vector<unsigned char> ref(gq.size());
    o1.download(ref.data(), ref.size());
    rows.push_back({std::to_string(S), "1 rank", "-", fmt(ms1, 3),
                    fmt(flops / (ms1 * 1e-3) / 1e12, 1), "1.00", "-", "-"});
    json_rows.push_back(JsonObject()
                            .add("seq", S)
                            .add("ranks", 1)
                            .add("strategy", "single")
                            .add("ms", ms1)
                            .add("tflops", flops / (ms1 * 1e-3) / 1e12));

    for (const ShardLayout layout : layouts) {
      // Each rank's shards of q, k, v in this layout.
      const std::int64_t Sl = S / ranks;
      std::vector<std::unique_ptr<Mem>> mem;
      std::vector<std::vector<std::int64_t>> shard_of(ranks);
      SequenceParallelArgs sp;
      sp.layout = layout;
      for (int r = 0; r < ranks; ++r) {
        shard_of[r] = shard_rows(layout, ranks, r, S);
        auto shard = [&](const std::vector<unsigned char>& g, std::int64_t row) {
          std::vector<unsigned char> s(static_cast<std::size_t>(batch * Sl * row) * es);
          const std::size_t rb = static_cast<std::size_t>(row) * es;
          for (int b = 0; b < batch; ++b) {
            for (std::int64_t i = 0; i < Sl; ++i) {
              std::memcpy(&s[(b * Sl + i) * rb], &g[(b * S + shard_of[r][i]) * rb], rb);
            }
          }
          mem.push_back(std::make_unique<Mem>(on_cuda, r, s.size()));
          mem.back()->upload(s.data(), s.size());
          return mem.back()->get();
        };
        AttentionArgs a;
        a.q = TensorView::contiguous(shard(gq, rowq), dtype, dev, {batch, Sl, heads, dim}, r);
        a.k = TensorView::contiguous(shard(gk, rowk), dtype, dev, {batch, Sl, kv_heads, dim}, r);
        a.v = TensorView::contiguous(shard(gv, rowk), dtype, dev, {batch, Sl, kv_heads, dim}, r);
        mem.push_back(
            std::make_unique<Mem>(on_cuda, r, static_cast<std::size_t>(batch * Sl * rowq) * es));
        a.out = TensorView::contiguous(mem.back()->get(), dtype, dev, {batch, Sl, heads, dim}, r);
        a.causal = causal;
        sp.shards.push_back(a);
      }
      for (const SeqParallelStrategy strategy : strategies) {
        sp.strategy = strategy;
        const double ms = time_ms([&] { sequence_parallel_attention(group, sp); }, on_cuda,
                                  on_cuda ? ranks : 0, rep);
        // Against the one-rank output, element by element (same inputs, fp32 accumulation).
        double num = 0, den = 0, max_abs = 0;
        std::vector<unsigned char> o(static_cast<std::size_t>(batch * Sl * rowq) * es);
        for (int r = 0; r < ranks; ++r) {
          Mem& out = *mem[static_cast<std::size_t>(r) * 4 + 3];
          out.download(o.data(), o.size());
          HostTensor got(dtype, {batch * Sl * rowq}), want(dtype, {batch * Sl * rowq});
          std::memcpy(got.data(), o.data(), o.size());
          for (int b = 0; b < batch; ++b) {
            for (std::int64_t i = 0; i < Sl; ++i) {
              std::memcpy(static_cast<char*>(want.data()) + (b * Sl + i) * rowq * es,
                          &ref[(b * S + shard_of[r][i]) * rowq * es], rowq * es);
            }
          }
          for (std::int64_t i = 0; i < got.numel(); ++i) {
            const double x = got.get(i), y = want.get(i);
            num += (x - y) * (x - y);
            den += y * y;
            max_abs = std::max(max_abs, std::isfinite(x) ? std::fabs(x - y) : INFINITY);
          }
        }
        const double rel = std::sqrt(num / std::max(den, 1e-300));
        const double tflops = flops / (ms * 1e-3) / 1e12;
        rows.push_back({std::to_string(S), std::to_string(ranks) + " ranks " + to_string(strategy),
                        to_string(layout), fmt(ms, 3), fmt(tflops, 1), fmt(ms1 / ms, 2),
                        fmt(ms1 / ms / ranks, 2), sci(rel, 1)});
        json_rows.push_back(JsonObject()
                                .add("seq", S)
                                .add("ranks", ranks)
                                .add("strategy", to_string(strategy))
                                .add("layout", to_string(layout))
                                .add("ms", ms)
                                .add("tflops", tflops)
                                .add("speedup", ms1 / ms)
                                .add("efficiency", ms1 / ms / ranks)
                                .add("rel_diff_vs_one_rank", rel)
                                .add("max_abs_diff_vs_one_rank", max_abs));
        if (!(rel < 2e-2)) {
          print_table({"S", "run", "layout", "ms", "TFLOP/s", "speedup", "per rank", "rel diff"},
                      rows, 3);
          std::cerr << "gpuattn dist: the " << ranks << "-rank output differs from the one-rank "
                    << "output by " << rel << " (relative L2)\n";
          return 1;
        }
      }
    }
  }
  print_table({"S", "run", "layout", "ms", "TFLOP/s", "speedup", "per rank", "rel diff"}, rows, 3);
  if (f.has("json")) {
    JsonObject top;
    top.add("device", on_cuda ? device_name : host_cpu_name())
        .add("ranks", ranks)
        .add("transport", on_cuda ? to_string(transport) : "host")
        .add("date", iso_date_utc())
        .add("commit", git_commit())
        .add("dtype", to_string(dtype))
        .add("batch", batch)
        .add("heads", heads)
        .add("kv_heads", kv_heads)
        .add("dim", dim)
        .add("causal", causal)
        .add("timing", "wall clock of the call and a synchronization of every device; median")
        .add_raw("rows", json_array(json_rows, 2));
    write_file(f.get("json", ""), top.str(0) + "\n");
  }
  return 0;
}

}  // namespace gpuattn::tool
