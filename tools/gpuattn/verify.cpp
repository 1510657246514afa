// `gpuattn verify`: attention_forward on fresh random inputs (outputs poisoned with NaN first) vs
// the fp64 reference, one table row per case; exit status 1 when any case fails.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <set>

#include "common.h"
#if defined(GPUATTN_WITH_CUDA)
#include "device.h"
#endif

namespace gpuattn::tool {
namespace {

constexpr double kLseTolerance = 1e-3;
constexpr std::int64_t kAllRowsUpTo = 1024;  // more query rows than this: sample
constexpr std::int64_t kSampledRows = 64;    // plus the first and last row of every sequence

double tolerance(DType t) {
  switch (t) {
    case DType::bf16: return 1e-2;
    case DType::f16: return 5e-3;
    default: return 1e-5;
  }
}

const char* const kOurs = "gpuattn";
const char* const kBaseline = "baseline";

struct Outcome {
  Case c;
  std::string impl;
  std::int64_t rows_checked = 0;
  testing::Comparison cmp;
  bool lse_checked = false;
  std::int64_t bad_out = 0;  // non-finite elements anywhere in out (all rows, not just checked)
  std::int64_t bad_lse = 0;  // NaN anywhere in lse
  std::string error;
  double seconds = 0;
  bool pass = false;
};

std::vector<Case> with_causal(const Case& c) {
  Case a = c, b = c;
  a.causal = false;
  b.causal = true;
  return {a, b};
}

void append(std::vector<Case>& to, const std::vector<Case>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

Case with(Case c, Precision p, float q_scale = 1.f) {
  c.precision = p;
  c.q_scale = q_scale;
  return c;
}

// Small sizes (S <= 256): the whole list runs in seconds on the CPU backend.
std::vector<Case> cpu_cases(bool quick) {
  const DType h = DType::f16, bf = DType::bf16, f32 = DType::f32;
  const auto std_ = Precision::standard, comp = Precision::compensated;
  std::vector<Case> v;
  for (int s : quick ? std::vector<int>{17, 256} : std::vector<int>{1, 17, 100, 256}) {
    append(v, with_causal(dense_case(2, 4, 4, s, s, 64, h, false)));
  }
  append(v, with_causal(dense_case(2, 4, 4, 128, 128, 128, f32, false)));
  append(v, with_causal(dense_case(1, 4, 4, 256, 256, 128, bf, false)));
  v.push_back(dense_case(2, 4, 4, 100, 256, 128, h, true));
  v.push_back(dense_case(2, 4, 4, 256, 100, 128, h, true));    // rows that see no key
  v.push_back(dense_case(2, 8, 2, 200, 200, 64, h, true));     // GQA 4:1
  v.push_back(dense_case(1, 8, 1, 128, 128, 128, bf, false));  // MQA
  append(v, with_causal(varlen_case({1, 17, 100, 256}, {1, 17, 100, 256}, 4, 4, 64, h, false)));
  v.push_back(varlen_case({1, 17, 100, 256}, {40, 17, 256, 100}, 8, 2, 128, bf, true));
  v.push_back(with(dense_case(1, 4, 4, 256, 256, 128, h, true), comp));
  v.push_back(with(dense_case(1, 4, 4, 200, 200, 64, f32, false), comp));
  v.push_back(with(dense_case(1, 4, 4, 256, 256, 64, h, true), std_, 30.f));
  v.push_back(with(dense_case(1, 4, 4, 256, 256, 128, bf, false), std_, 30.f));
  if (quick) v.resize(std::min<std::size_t>(v.size(), 12));
  return v;
}

// The seed report's table plus the awkward cases of issue 2, on the CUDA backend.
std::vector<Case> cuda_cases(bool quick) {
  const DType h = DType::f16, bf = DType::bf16;
  const auto std_ = Precision::standard, comp = Precision::compensated;
  std::vector<Case> v;
  const int seed[][3] = {{1, 1024, 32},  {2, 2048, 32},  {4, 4096, 32}, {1, 8192, 32},
                         {2, 16384, 32}, {1, 32768, 32}, {1, 65536, 32}};
  for (const auto& s : seed) {
    if (quick && s[1] > 8192) continue;
    append(v, with_causal(dense_case(s[0], s[2], s[2], s[1], s[1], 128, h, false)));
  }
  for (int s : {1, 17, 1000, 4097})
    append(v, with_causal(dense_case(2, 8, 8, s, s, 128, h, false)));
  v.push_back(dense_case(2, 8, 8, 1000, 4097, 128, h, true));
  v.push_back(dense_case(2, 8, 8, 4097, 1000, 128, h, true));  // rows that see no key
  v.push_back(dense_case(2, 8, 8, 1, 4097, 128, h, true));
  v.push_back(dense_case(2, 8, 8, 17, 1000, 64, h, false));
  // Decode (decode_16x64): one query row of GQA 32:8, split keys; 4 causal rows a sequence.
  v.push_back(dense_case(8, 32, 8, 1, 4096, 128, bf, false));
  v.push_back(dense_case(2, 32, 8, 4, 4096, 128, bf, true));
  append(v, with_causal(dense_case(2, 32, 8, 2048, 2048, 128, h, false)));  // GQA 32:8
  append(v, with_causal(dense_case(2, 32, 1, 1024, 1024, 128, h, false)));  // MQA
  v.push_back(dense_case(2, 32, 8, 1000, 1000, 64, bf, true));
  const std::vector<int> lens = {1, 17, 513, 2048};
  append(v, with_causal(varlen_case(lens, lens, 16, 16, 128, h, false)));
  v.push_back(varlen_case(lens, lens, 32, 8, 64, bf, true));
  v.push_back(varlen_case(lens, {2048, 17, 1000, 4097}, 16, 16, 128, h, true));
  append(v, with_causal(dense_case(2, 16, 16, 2048, 2048, 64, h, false)));  // D64
  append(v, with_causal(dense_case(2, 16, 16, 2048, 2048, 128, bf, false)));
  v.push_back(dense_case(2, 16, 16, 1000, 1000, 64, bf, true));
  v.push_back(with(dense_case(2, 16, 16, 4096, 4096, 128, h, true), comp));
  v.push_back(with(dense_case(2, 16, 16, 2048, 2048, 128, bf, false), comp));
  v.push_back(with(varlen_case(lens, lens, 16, 4, 64, h, true), comp));
  append(v, with_causal(with(dense_case(2, 16, 16, 2048, 2048, 128, h, false), std_, 30.f)));
  v.push_back(with(dense_case(2, 16, 16, 2048, 2048, 64, bf, true), std_, 30.f));
  v.push_back(with(dense_case(1, 16, 16, 1000, 1000, 128, bf, true), comp, 30.f));
  // Head dim 256: awkward lengths, Sq != Sk, GQA, varlen, compensated (the O split of the sm_80
  // kernel).
  append(v, with_causal(dense_case(2, 16, 16, 2048, 2048, 256, h, false)));
  append(v, with_causal(dense_case(2, 8, 8, 1000, 1000, 256, bf, false)));
  v.push_back(dense_case(2, 8, 8, 4097, 1000, 256, h, true));    // rows that see no key
  v.push_back(dense_case(2, 32, 8, 2048, 2048, 256, bf, true));  // GQA 32:8
  v.push_back(varlen_case(lens, lens, 16, 4, 256, h, true));
  v.push_back(with(dense_case(1, 16, 16, 2048, 2048, 256, h, true), comp));
  return v;
}

// The benchmark's 3-kernel baseline must be right too, or its ratio means nothing.
std::vector<Case> baseline_cases(bool quick) {
  const DType h = DType::f16, bf = DType::bf16;
  std::vector<Case> v = {dense_case(1, 16, 16, 1024, 1024, 64, h, false),
                         dense_case(2, 8, 8, 17, 17, 128, h, true),
                         dense_case(2, 8, 8, 1000, 4097, 128, h, true),
                         dense_case(2, 8, 8, 4097, 1000, 128, h, true),
                         dense_case(2, 32, 8, 2048, 2048, 128, bf, true),
                         dense_case(4, 16, 16, 4096, 4096, 128, h, true),
                         dense_case(3, 8, 8, 1, 1000, 64, bf, true)};  // decode, MHA
  if (quick) v.resize(3);
  // Decode rows: one query row a sequence (single-column GEMMs), GQA.
  v.push_back(dense_case(32, 32, 8, 1, 4096, 128, h, false));
  return v;
}

std::vector<std::int64_t> pick_rows(const Case& c, std::uint64_t seed) {
  const std::int64_t total = c.total_q();
  std::vector<std::int64_t> rows;
  if (total <= kAllRowsUpTo) {
    for (std::int64_t i = 0; i < total; ++i) rows.push_back(i);
    return rows;
  }
  std::set<std::int64_t> s = {0, total - 1};
  if (c.varlen()) {
    std::int64_t start = 0;
    for (int l : c.lens_q) {
      if (l > 0) {
        s.insert(start);
        s.insert(start + l - 1);
      }
      start += l;
    }
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> dist(0, total - 1);
  const std::size_t want = s.size() + static_cast<std::size_t>(kSampledRows) - 2;
  while (s.size() < want) s.insert(dist(rng));
  return {s.begin(), s.end()};
}

// reference_attention over `rows`, split across threads (it is single-threaded per call).
ReferenceResult parallel_reference(const AttentionArgs& args, const std::vector<std::int64_t>& rows,
                                   int hq, int d) {
  const int parts = static_cast<int>(
      std::min<std::int64_t>(hardware_threads(), static_cast<std::int64_t>(rows.size())));
  std::vector<ReferenceResult> res(static_cast<std::size_t>(parts));
  parallel_for(parts, parts, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::size_t b = rows.size() * static_cast<std::size_t>(p) / parts;
      const std::size_t e = rows.size() * static_cast<std::size_t>(p + 1) / parts;
      res[static_cast<std::size_t>(p)] =
          reference_attention(args, std::vector<std::int64_t>(rows.begin() + b, rows.begin() + e));
    }
  });
  ReferenceResult all;
  all.out.reserve(rows.size() * static_cast<std::size_t>(hq * d));
  for (auto& r : res) {
    all.rows.insert(all.rows.end(), r.rows.begin(), r.rows.end());
    all.out.insert(all.out.end(), r.out.begin(), r.out.end());
    all.lse.insert(all.lse.end(), r.lse.begin(), r.lse.end());
  }
  return all;
}

#if defined(GPUATTN_WITH_CUDA)
void run_on_cuda(HostProblem& hp, const std::string& impl, bool want_lse) {
  const Case& c = hp.c;
  cuda::Buffer q(hp.q.bytes()), k(hp.k.bytes()), v(hp.v.bytes()), out(hp.out.bytes());
  cuda::Buffer lse(want_lse ? hp.lse.size() * sizeof(float) : 0);
  cuda::Buffer cu_q(c.varlen() ? hp.cu_q.bytes() : 0), cu_k(c.varlen() ? hp.cu_k.bytes() : 0);
  cuda::upload(q.get(), hp.q.data(), hp.q.bytes());
  cuda::upload(k.get(), hp.k.data(), hp.k.bytes());
  cuda::upload(v.get(), hp.v.data(), hp.v.bytes());
  if (c.varlen()) {
    cuda::upload(cu_q.get(), hp.cu_q.data(), hp.cu_q.bytes());
    cuda::upload(cu_k.get(), hp.cu_k.data(), hp.cu_k.bytes());
  }
  cuda::poison(out.get(), out.bytes());
  cuda::poison(lse.get(), lse.bytes());
  const AttentionArgs a = make_args(c, Device::cuda, q.get(), k.get(), v.get(), out.get(),
                                    static_cast<float*>(lse.get()), cu_q.get(), cu_k.get());
  if (impl == kOurs) {
    attention_forward(a);
  } else {
    cuda::Buffer ws(cuda::baseline_workspace_bytes(a));
    cuda::baseline_forward(a, ws);
    cuda::synchronize();  // before ws is freed
  }
  if (impl == kOurs) cuda::synchronize();
  cuda::download(hp.out.data(), out.get(), hp.out.bytes());
  if (want_lse) cuda::download(hp.lse.data(), lse.get(), lse.bytes());
}
#endif

Outcome run_case(const Case& c, bool on_cuda, const std::string& impl, std::uint64_t seed) {
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o;
  o.c = c;
  o.impl = impl;
  o.lse_checked = impl == kOurs;
  try {
    HostProblem hp(c, seed);
    if (on_cuda) {
#if defined(GPUATTN_WITH_CUDA)
      run_on_cuda(hp, impl, o.lse_checked);
#endif
    } else {
      attention_forward(hp.host_args());
    }
    const std::vector<std::int64_t> rows = pick_rows(c, seed);
    o.rows_checked = static_cast<std::int64_t>(rows.size());
    if (!rows.empty()) {
      const ReferenceResult ref = parallel_reference(hp.host_args(), rows, c.hq, c.d);
      const std::int64_t tq = c.total_q();
      auto lse_index = [&](std::int64_t row, int h) -> std::int64_t {
        if (c.varlen()) return h * tq + row;                 // [Hq, total_q]
        return (row / c.sq * c.hq + h) * c.sq + row % c.sq;  // [B, Hq, Sq]
      };
      o.cmp =
          testing::compare(ref, hp.out, c.hq, c.d, o.lse_checked ? &hp.lse : nullptr, lse_index);
    }
    // Every element of out and lse, so that an unwritten (still poisoned) one anywhere fails.
    std::atomic<std::int64_t> bad{0};
    parallel_for(hp.out.numel(), hardware_threads(), [&](std::int64_t b, std::int64_t e) {
      std::int64_t n = 0;
      for (std::int64_t i = b; i < e; ++i) n += std::isfinite(hp.out.get(i)) ? 0 : 1;
      bad += n;
    });
    o.bad_out = bad.load();
    if (o.lse_checked) {
      for (float x : hp.lse) o.bad_lse += std::isnan(x) ? 1 : 0;
    }
    o.pass = o.cmp.rel_err <= tolerance(c.dtype) && o.cmp.nonfinite == 0 && o.bad_out == 0 &&
             o.bad_lse == 0 && (!o.lse_checked || o.cmp.lse_rel <= kLseTolerance);
  } catch (const std::exception& e) {
    o.error = e.what();
    o.pass = false;
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

JsonObject to_json(const Outcome& o) {
  const Case& c = o.c;
  JsonObject j;
  j.add("impl", o.impl).add("label", c.label()).add("shape", c.shape());
  j.add("batch", c.batch).add("hq", c.hq).add("hkv", c.hkv);
  j.add("seqlen_q", c.sq).add("seqlen_k", c.sk).add("head_dim", c.d);
  j.add("dtype", to_string(c.dtype)).add("causal", c.causal).add("varlen", c.varlen());
  if (c.varlen()) {
    std::string lq, lk;
    for (int l : c.lens_q) lq += (lq.empty() ? "" : ", ") + std::to_string(l);
    for (int l : c.lens_k) lk += (lk.empty() ? "" : ", ") + std::to_string(l);
    j.add_raw("lens_q", "[" + lq + "]").add_raw("lens_k", "[" + lk + "]");
  }
  j.add("precision", to_string(c.precision)).add("q_scale", static_cast<double>(c.q_scale));
  j.add("rows_checked", o.rows_checked).add("max_abs_err", o.cmp.max_abs);
  j.add("rel_err", o.cmp.rel_err).add("cosine", o.cmp.cosine);
  j.add("lse_rel_err", o.lse_checked ? o.cmp.lse_rel : std::nan(""));
  j.add("nonfinite_out", o.bad_out).add("nan_lse", o.bad_lse);
  j.add("tolerance", tolerance(c.dtype)).add("seconds", o.seconds);
  j.add("pass", o.pass).add("error", o.error);
  return j;
}

void print_help() {
  std::cout <<
      R"(usage: gpuattn verify [--device cpu|cuda|auto] [--quick] [--json FILE] [--seed N]

Runs attention_forward on fresh random inputs (outputs poisoned with NaN first) and compares
with the fp64 reference (all query rows up to 1024, else 64 sampled rows including the first
and last of every sequence). Prints one row per case and exits 1 if any case fails.
Tolerance on ||out - ref|| / ||ref||: bf16 1e-2, f16 5e-3, f32 1e-5; LSE 1e-3 relative; no NaN.

  --device  cuda: the seed report's table (S up to 65536) and the awkward cases, plus the
            3-kernel baseline on a few; cpu: small sizes (S <= 256); auto (default): cuda
            when a CUDA device is visible, else cpu
  --quick   fewer and smaller cases
  --json    also write the results as JSON to FILE
  --seed    base seed of the random inputs (default: fresh every run)
)";
}

}  // namespace

int run_verify(const std::vector<std::string>& args) {
  const Flags flags("gpuattn verify", args, {"device", "json", "seed"}, {"quick"});
  if (flags.wants_help()) {
    print_help();
    return 0;
  }
  const std::string device = flags.choice("device", "auto", {"auto", "cpu", "cuda"});
  const bool quick = flags.has("quick");
  const std::string json = flags.get("json", "");
  if (flags.has("json")) check_output_path("gpuattn verify", "json", json);
  const std::uint64_t seed = flags.get_u64("seed", fresh_seed() % 1000000007ull);

  const bool on_cuda = device == "cuda" || (device == "auto" && cuda_available());
  if (on_cuda && !cuda_available()) {
    std::cerr << "gpuattn verify: --device cuda, but "
#if defined(GPUATTN_WITH_CUDA)
                 "no CUDA device is visible\n";
#else
                 "this build has no CUDA backend\n";
#endif
    return 1;
  }
  std::string device_name = host_cpu_name();
#if defined(GPUATTN_WITH_CUDA)
  if (on_cuda) device_name = cuda::device_info().name;
#endif

  std::vector<std::pair<Case, std::string>> todo;
  for (const Case& c : on_cuda ? cuda_cases(quick) : cpu_cases(quick)) todo.emplace_back(c, kOurs);
  if (on_cuda) {
    for (const Case& c : baseline_cases(quick)) todo.emplace_back(c, kBaseline);
  }
  std::cout << "gpuattn verify on " << (on_cuda ? "cuda" : "cpu") << " (" << device_name << "), "
            << todo.size() << " cases, seed " << seed << "\n";

  std::vector<Outcome> results;
  int failed = 0;
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const Outcome o = run_case(todo[i].first, on_cuda, todo[i].second, seed + 7919 * i);
    failed += o.pass ? 0 : 1;
    char head[32];
    std::snprintf(head, sizeof(head), "[%3zu/%zu] ", i + 1, todo.size());
    std::cout << head << (o.pass ? "PASS " : "FAIL ") << o.impl << " " << o.c.label() << "  rel "
              << sci(o.cmp.rel_err, 2) << "  (" << fmt(o.seconds, 1) << " s)"
              << (o.error.empty() ? "" : "  error: " + o.error) << "\n";
    std::cout.flush();
    results.push_back(o);
  }

  if (flags.has("json")) {
    JsonObject top;
    std::vector<JsonObject> rows;
    for (const auto& o : results) rows.push_back(to_json(o));
    top.add("tool", "gpuattn verify").add("device", on_cuda ? "cuda" : "cpu");
    top.add("device_name", device_name).add("date", iso_date_utc()).add("commit", git_commit());
    top.add_raw("seed", std::to_string(seed))  // unsigned: a seed past 2^63 replays too
        .add("quick", quick);
    top.add("cases", static_cast<int>(results.size())).add("failed", failed);
    top.add_raw("results", json_array(rows, 2));
    write_file(json, top.str());
  }

  std::vector<std::vector<std::string>> rows;
  for (const auto& o : results) {
    const Case& c = o.c;
    rows.push_back({o.impl, c.shape(), to_string(c.dtype), c.causal ? "yes" : "no",
                    c.varlen() ? "yes" : "no", to_string(c.precision),
                    c.q_scale == 1.f ? "1" : fmt(c.q_scale, 0), std::to_string(o.rows_checked),
                    sci(o.cmp.max_abs, 2), sci(o.cmp.rel_err, 2), fmt(o.cmp.cosine, 6),
                    o.lse_checked ? sci(o.cmp.lse_rel, 2) : "-",
                    o.pass ? "PASS" : (o.error.empty() ? "FAIL" : "ERROR")});
  }
  std::cout << "\n";
  print_table({"impl", "shape", "dtype", "causal", "varlen", "precision", "q*", "rows", "max_abs",
               "rel_err", "cosine", "lse_rel", "result"},
              rows, 2);
  std::cout << (failed ? "FAILED: " : "all passed: ") << results.size() - failed << "/"
            << results.size() << " cases (" << (on_cuda ? "cuda" : "cpu") << ", " << device_name
            << ")\n";
  return failed ? 1 : 0;
}

}  // namespace gpuattn::tool
