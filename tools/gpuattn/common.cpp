#include "common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <limits>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/fwd_params.h"
#include "gpuattn_commit.h"  // GPUATTN_GIT_COMMIT, written at every build (commit_stamp.cmake)

namespace gpuattn::tool {

// ---- flags --------------------------------------------------------------------------------------

Flags::Flags(std::string command, const std::vector<std::string>& args,
             const std::vector<std::string>& value_flags, const std::vector<std::string>& switches)
    : command_(std::move(command)) {
  auto known = [](const std::vector<std::string>& list, const std::string& n) {
    return std::find(list.begin(), list.end(), n) != list.end();
  };
  // --help or -h where a flag stands, before anything else is checked (`--seed abc --help` shows
  // the help); not a value (`--text -h` prompts with "-h").
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      help_ = true;
      return;
    }
    if (a.rfind("--", 0) == 0 && a.find('=') == std::string::npos &&
        known(value_flags, a.substr(2)) && i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      ++i;  // its value
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      throw UsageError(command_ + ": unexpected argument '" + a + "'");
    }
    std::string name = a.substr(2), value;
    const auto eq = name.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (known(switches, name)) {
      if (has_value) throw UsageError(command_ + ": flag --" + name + " takes no value");
      switches_.insert(name);
    } else if (known(value_flags, name)) {
      if (!has_value) {
        if (i + 1 >= args.size())
          throw UsageError(command_ + ": flag --" + name + " needs a value");
        // The next flag is not taken for this one's value (`--json --quick` would write a file
        // named --quick and drop the switch); --name=VALUE passes a value that starts with --.
        if (args[i + 1].rfind("--", 0) == 0) {
          throw UsageError(command_ + ": flag --" + name + " needs a value, got the flag '" +
                           args[i + 1] + "' (--" + name + "=VALUE for a value starting with --)");
        }
        value = args[++i];
      }
      const auto seen = values_.find(name);
      if (seen != values_.end()) {  // the last would win silently
        throw UsageError(command_ + ": flag --" + name + " given twice ('" + seen->second +
                         "', then '" + value + "')");
      }
      values_[name] = value;
    } else {
      throw UsageError(command_ + ": unknown flag '" + a + "'");
    }
  }
}

bool Flags::has(const std::string& name) const {
  return switches_.count(name) != 0 || values_.count(name) != 0;
}

std::string Flags::get(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::string Flags::choice(const std::string& name, const std::string& fallback,
                          const std::vector<std::string>& choices) const {
  const std::string v = get(name, fallback);
  if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : "|") + c;
    throw UsageError(command_ + ": flag --" + name + " must be one of " + list + ", got '" + v +
                     "'");
  }
  return v;
}

int Flags::get_int(const std::string& name, int fallback, int min, int max) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  // Digits with an optional '-': strtol alone would also take leading spaces and a '+'.
  const std::string& s = it->second;
  const bool digits =
      !s.empty() &&
      (std::isdigit(static_cast<unsigned char>(s[0])) ||
       (s[0] == '-' && s.size() > 1 && std::isdigit(static_cast<unsigned char>(s[1]))));
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (!digits || *end != '\0' || errno == ERANGE || v < min || v > max) {
    throw UsageError(command_ + ": flag --" + name + " needs an integer in [" +
                     std::to_string(min) + ", " + std::to_string(max) + "], got '" + it->second +
                     "'");
  }
  return static_cast<int>(v);
}

std::uint64_t Flags::get_u64(const std::string& name, std::uint64_t fallback) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(it->second.c_str(), &end, 10);
  // Digits only: strtoull takes leading spaces and wraps a '-' around, and clamps past 2^64 - 1.
  if (it->second.empty() || !std::isdigit(static_cast<unsigned char>(it->second[0])) ||
      *end != '\0' || errno == ERANGE) {
    throw UsageError(command_ + ": flag --" + name + " needs an integer in [0, 2^64 - 1], got '" +
                     it->second + "'");
  }
  return v;
}

// ---- cases --------------------------------------------------------------------------------------

std::int64_t Case::total_q() const {
  if (!varlen()) return static_cast<std::int64_t>(batch) * sq;
  std::int64_t t = 0;
  for (int l : lens_q) t += l;
  return t;
}

std::int64_t Case::total_k() const {
  if (!varlen()) return static_cast<std::int64_t>(batch) * sk;
  std::int64_t t = 0;
  for (int l : lens_k) t += l;
  return t;
}

static std::string list(const std::vector<int>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

std::string Case::shape() const {
  std::string s;
  if (varlen()) {
    s = "varlen q" + list(lens_q);
    if (lens_k != lens_q) s += " k" + list(lens_k);
  } else {
    s = "B" + std::to_string(batch);
  }
  s += " Hq" + std::to_string(hq);
  if (hkv != hq) s += " Hkv" + std::to_string(hkv);
  if (!varlen()) {
    s += sq == sk ? " S" + std::to_string(sq)
                  : " Sq" + std::to_string(sq) + " Sk" + std::to_string(sk);
  }
  return s + " D" + std::to_string(d);
}

std::string Case::label() const {
  std::string s = shape() + " " + to_string(dtype) + (causal ? " causal" : "");
  if (precision != Precision::standard) s += std::string(" ") + to_string(precision);
  if (q_scale != 1.f) s += " q*" + fmt(q_scale, 0);
  return s + option_words();
}

std::string Case::option_words() const {
  return (softcap != 0.f ? " softcap" + std::to_string(static_cast<long long>(softcap)) : "") +
         (alibi ? " alibi" : "");
}

std::vector<float> alibi_slopes_of(int hq) {
  std::vector<float> s(static_cast<std::size_t>(hq));
  for (int h = 0; h < hq; ++h) s[h] = std::exp2(-8.f * static_cast<float>(h + 1) / hq);
  return s;
}

Case dense_case(int b, int hq, int hkv, int sq, int sk, int d, DType t, bool causal) {
  Case c;
  c.batch = b;
  c.hq = hq;
  c.hkv = hkv;
  c.sq = sq;
  c.sk = sk;
  c.d = d;
  c.dtype = t;
  c.causal = causal;
  return c;
}

std::vector<std::string> split_shapes(const std::string& command, const std::string& spec) {
  std::vector<std::string> out;
  std::istringstream in(spec);
  for (std::string one; std::getline(in, one, ';');) {
    const std::size_t first = one.find_first_not_of(" \t");
    if (first != std::string::npos) {
      out.push_back(one.substr(first, one.find_last_not_of(" \t") + 1 - first));
    }
  }
  if (out.empty()) throw UsageError(command + ": --shape '" + spec + "' names no shape");
  return out;
}

Case parse_shape_words(const std::string& command, const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return UsageError(command + ": --shape '" + text + "': " + why);
  };
  long long b = 1, hq = 0, hkv = 0, sq = 0, sk = 0, d = 0, softcap = 0;
  bool causal = false, alibi = false;
  DType dtype = DType::f16;
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    if (w == "causal") {
      causal = true;
      continue;
    }
    if (w == "alibi") {
      alibi = true;
      continue;
    }
    if (w == "f16" || w == "float16" || w == "bf16" || w == "bfloat16") {
      dtype = w[0] == 'b' ? DType::bf16 : DType::f16;
      continue;
    }
    // A key and a whole number: B, H (both head counts), Hq, Hkv, S (both lengths), Sq, Sk, D,
    // softcap.
    const std::size_t digits = std::min(w.find_first_of("0123456789"), w.size());
    const std::string key = w.substr(0, digits), num = w.substr(digits);
    long long* slots[2] = {nullptr, nullptr};
    if (key == "B") slots[0] = &b;
    if (key == "H") slots[0] = &hq, slots[1] = &hkv;
    if (key == "Hq") slots[0] = &hq;
    if (key == "Hkv") slots[0] = &hkv;
    if (key == "S") slots[0] = &sq, slots[1] = &sk;
    if (key == "Sq") slots[0] = &sq;
    if (key == "Sk") slots[0] = &sk;
    if (key == "D") slots[0] = &d;
    if (key == "softcap") slots[0] = &softcap;
    if (slots[0] == nullptr) {
      throw bad("unknown word '" + w +
                "' (B<n>, H<n>, Hq<n>, Hkv<n>, S<n>, Sq<n>, Sk<n>, D<n>, softcap<n>, alibi, causal, "
                "f16, bf16)");
    }
    char* end = nullptr;
    const long long n = num.empty() ? 0 : std::strtoll(num.c_str(), &end, 10);
    const long long most = key[0] == 'B' || key[0] == 'H' ? 65535 : 1LL << 30;
    if (num.empty() || *end != '\0' || n < 1 || n > most) {
      throw bad("'" + w + "' is not " + key + " and a whole number from 1 to " +
                std::to_string(most));
    }
    for (long long* slot : slots) {
      if (slot != nullptr) *slot = n;
    }
  }
  if (hq == 0 || sq == 0 || d == 0) {
    throw bad("needs heads (H<n> or Hq<n>), a length (S<n> or Sq<n>) and a head dim (D<n>)");
  }
  // Refused before any input is allocated (a D of 10^8 took a GB of host memory first).
  if (d != 64 && d != 128 && d != 256) {
    throw bad("head dim D" + std::to_string(d) + " is not one the library runs (64, 128 or 256)");
  }
  if (hkv == 0) hkv = hq;
  if (sk == 0) sk = sq;
  if (hq % hkv != 0) {
    throw bad("Hkv " + std::to_string(hkv) + " does not divide Hq " + std::to_string(hq));
  }
  Case c = dense_case(static_cast<int>(b), static_cast<int>(hq), static_cast<int>(hkv),
                      static_cast<int>(sq), static_cast<int>(sk), static_cast<int>(d), dtype, causal);
  c.softcap = static_cast<float>(softcap);
  c.alibi = alibi;
  return c;
}

Case varlen_case(std::vector<int> lens_q, std::vector<int> lens_k, int hq, int hkv, int d, DType t,
                 bool causal) {
  Case c = dense_case(static_cast<int>(lens_q.size()), hq, hkv,
                      *std::max_element(lens_q.begin(), lens_q.end()),
                      *std::max_element(lens_k.begin(), lens_k.end()), d, t, causal);
  c.lens_q = std::move(lens_q);
  c.lens_k = std::move(lens_k);
  return c;
}

HostProblem::HostProblem(const Case& cs, std::uint64_t seed) : c(cs) {
  try {
    allocate();
  } catch (const std::bad_alloc&) {
    // q, out, k, v: the elements of the four tensors, and lse.
    const double elements = static_cast<double>(c.total_q()) * c.hq * c.d * 2 +
                            static_cast<double>(c.total_k()) * c.hkv * c.d * 2;
    const double gib = (elements * static_cast<double>(element_size(c.dtype)) +
                        4.0 * static_cast<double>(c.total_q()) * c.hq) /
                       (1 << 30);
    char msg[160];
    std::snprintf(msg, sizeof msg, "the host copies of q, k, v, out and lse (%.1f GiB) ", gib);
    throw std::runtime_error(c.shape() + ": " + msg + "could not be allocated");
  }
  fill_random(q, seed * 3 + 1, c.q_scale);
  fill_random(k, seed * 3 + 2, 1.f);
  fill_random(v, seed * 3 + 3, 1.f);
  // NaN bytes (0xff) in every dtype, written in parallel: the big cases have 1e8+ elements.
  parallel_for(static_cast<std::int64_t>(out.bytes()), hardware_threads(),
               [&](std::int64_t b, std::int64_t e) {
                 std::memset(static_cast<char*>(out.data()) + b, 0xff,
                             static_cast<std::size_t>(e - b));
               });
}

void HostProblem::allocate() {
  if (c.varlen()) {
    q = HostTensor(c.dtype, {c.total_q(), c.hq, c.d});
    k = HostTensor(c.dtype, {c.total_k(), c.hkv, c.d});
    out = HostTensor(c.dtype, {c.total_q(), c.hq, c.d});
    cu_q = testing::make_cu_seqlens(c.lens_q);
    cu_k = testing::make_cu_seqlens(c.lens_k);
  } else {
    q = HostTensor(c.dtype, {c.batch, c.sq, c.hq, c.d});
    k = HostTensor(c.dtype, {c.batch, c.sk, c.hkv, c.d});
    out = HostTensor(c.dtype, {c.batch, c.sq, c.hq, c.d});
  }
  v = HostTensor(c.dtype, k.shape);
  if (c.alibi) alibi = alibi_slopes_of(c.hq);
  lse.assign(static_cast<std::size_t>(c.total_q() * c.hq), std::numeric_limits<float>::quiet_NaN());
}

AttentionArgs HostProblem::host_args() {
  AttentionArgs a =
      make_args(c, Device::cpu, q.data(), k.data(), v.data(), out.data(), lse.data(),
                c.varlen() ? cu_q.data() : nullptr, c.varlen() ? cu_k.data() : nullptr);
  if (c.alibi) {
    a.alibi_slopes = TensorView::contiguous(alibi.data(), DType::f32, Device::cpu, {c.hq});
  }
  return a;
}

AttentionArgs make_args(const Case& c, Device dev, void* q, void* k, void* v, void* out, float* lse,
                        void* cu_q, void* cu_k) {
  AttentionArgs a;
  const std::int64_t hq = c.hq, hkv = c.hkv, d = c.d;
  if (c.varlen()) {
    a.q = TensorView::contiguous(q, c.dtype, dev, {c.total_q(), hq, d});
    a.k = TensorView::contiguous(k, c.dtype, dev, {c.total_k(), hkv, d});
    a.v = TensorView::contiguous(v, c.dtype, dev, {c.total_k(), hkv, d});
    a.out = TensorView::contiguous(out, c.dtype, dev, {c.total_q(), hq, d});
    if (lse) a.lse = TensorView::contiguous(lse, DType::f32, dev, {hq, c.total_q()});
    const std::int64_t n = c.batch + 1;
    a.cu_seqlens_q = TensorView::contiguous(cu_q, DType::i32, dev, {n});
    a.cu_seqlens_k = TensorView::contiguous(cu_k, DType::i32, dev, {n});
    a.max_seqlen_q = c.sq;
    a.max_seqlen_k = c.sk;
  } else {
    const std::int64_t b = c.batch;
    a.q = TensorView::contiguous(q, c.dtype, dev, {b, c.sq, hq, d});
    a.k = TensorView::contiguous(k, c.dtype, dev, {b, c.sk, hkv, d});
    a.v = TensorView::contiguous(v, c.dtype, dev, {b, c.sk, hkv, d});
    a.out = TensorView::contiguous(out, c.dtype, dev, {b, c.sq, hq, d});
    if (lse) a.lse = TensorView::contiguous(lse, DType::f32, dev, {b, hq, c.sq});
  }
  a.causal = c.causal;
  a.precision = c.precision;
  a.softcap = c.softcap;
  a.backend = dev == Device::cpu ? Backend::cpu : Backend::cuda;
  return a;
}

double case_flops(const Case& c) {
  FwdParams p;  // only the fields attention_flops reads
  p.batch = c.batch;
  p.hq = c.hq;
  p.hkv = c.hkv;
  p.head_dim = c.d;
  p.seqlen_q = c.sq;
  p.seqlen_k = c.sk;
  p.causal = c.causal;
  if (!c.varlen()) return attention_flops(p);
  const HostTensor cu_q = testing::make_cu_seqlens(c.lens_q);
  const HostTensor cu_k = testing::make_cu_seqlens(c.lens_k);
  return attention_flops(p, static_cast<const std::int32_t*>(cu_q.data()),
                         static_cast<const std::int32_t*>(cu_k.data()));
}

// ---- threads and random data
// ---------------------------------------------------------------------

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void parallel_for(std::int64_t n, int threads,
                  const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n <= 0) return;
  const std::int64_t t = std::max<std::int64_t>(1, std::min<std::int64_t>(threads, n));
  if (t == 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(t));
  for (std::int64_t i = 0; i < t; ++i) {
    pool.emplace_back([&, i] {
      try {
        fn(n * i / t, n * (i + 1) / t);
      } catch (...) {
        errors[static_cast<std::size_t>(i)] = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

static std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void fill_random(HostTensor& t, std::uint64_t seed, float scale) {
  // Chunks of 4096 values, each from its own counter-seeded generator (Box-Muller pairs in
  // float), converted to the storage type in a tight loop: ~1e9 values must take seconds.
  constexpr std::int64_t kChunk = 4096;
  const std::int64_t n = t.numel();
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_for(chunks, hardware_threads(), [&](std::int64_t c0, std::int64_t c1) {
    std::vector<float> buf(kChunk);
    for (std::int64_t c = c0; c < c1; ++c) {
      std::uint64_t s = seed * 0x2545f4914f6cdd1dull + static_cast<std::uint64_t>(c);
      const std::int64_t begin = c * kChunk, count = std::min(n, begin + kChunk) - begin;
      for (std::int64_t i = 0; i < count; i += 2) {
        const std::uint64_t bits = splitmix64(s);
        const float u1 = (static_cast<float>(bits >> 40) + 1.f) * 0x1.0p-24f;  // (0, 1]
        const float u2 = static_cast<float>((bits >> 16) & 0xffffffu) * 0x1.0p-24f;
        const float r = std::sqrt(-2.f * std::log(u1)) * scale;
        const float a = 6.2831853f * u2;
        buf[static_cast<std::size_t>(i)] = r * std::cos(a);
        buf[static_cast<std::size_t>(i) + 1] = r * std::sin(a);
      }
      void* dst =
          static_cast<char*>(t.data()) + begin * static_cast<std::int64_t>(element_size(t.dtype));
      switch (t.dtype) {
        case DType::f16:
          for (std::int64_t i = 0; i < count; ++i)
            static_cast<std::uint16_t*>(dst)[i] = float_to_f16(buf[static_cast<std::size_t>(i)]);
          break;
        case DType::bf16:
          for (std::int64_t i = 0; i < count; ++i)
            static_cast<std::uint16_t*>(dst)[i] = float_to_bf16(buf[static_cast<std::size_t>(i)]);
          break;
        default:
          for (std::int64_t i = 0; i < count; ++i)
            t.set(begin + i, buf[static_cast<std::size_t>(i)]);
      }
    }
  });
}

std::uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 20) ^ static_cast<std::uint64_t>(std::time(nullptr));
}

// ---- formatting ---------------------------------------------------------------------------------

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

std::string fmt(double x, int precision) {
  if (std::isnan(x)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", precision, x);
  return buf;
}

std::string sci(double x, int precision) {
  if (std::isnan(x)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*e", precision, x);
  return buf;
}

std::string iso_date_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string git_commit() {
  const char* env = std::getenv("GPUATTN_COMMIT");
  if (env && *env) return env;
  const std::string built = GPUATTN_GIT_COMMIT;
  return built.empty() ? "unknown" : built;
}

std::string host_cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "cpu";
}

void print_table(const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, std::size_t left_columns) {
  std::vector<std::size_t> w(header.size(), 0);
  auto widen = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  };
  widen(header);
  for (const auto& r : rows) widen(r);
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) {
      const std::string pad(w[i] - r[i].size(), ' ');
      const std::string sep = i == 0 ? "" : "  ";
      s += i < left_columns ? sep + r[i] + pad : sep + pad + r[i];
    }
    std::cout << s << "\n";
  };
  line(header);
  std::size_t total = 0;
  for (std::size_t x : w) total += x + 2;
  std::cout << std::string(total > 2 ? total - 2 : 0, '-') << "\n";
  for (const auto& r : rows) line(r);
  std::cout.flush();
}

// ---- JSON ---------------------------------------------------------------------------------------

static std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += ch;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u);
      o += buf;
    } else {
      o += ch;
    }
  }
  return o + "\"";
}

JsonObject& JsonObject::add(const std::string& key, const std::string& value) {
  fields_.emplace_back(key, json_string(value));
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, const char* value) {
  return add(key, std::string(value));
}
JsonObject& JsonObject::add(const std::string& key, double value) {
  if (!std::isfinite(value)) {
    fields_.emplace_back(key, "null");
  } else {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.6g", value);
    fields_.emplace_back(key, buf);
  }
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, std::int64_t value) {
  fields_.emplace_back(key, std::to_string(value));
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, int value) {
  return add(key, static_cast<std::int64_t>(value));
}
JsonObject& JsonObject::add(const std::string& key, bool value) {
  fields_.emplace_back(key, value ? "true" : "false");
  return *this;
}
JsonObject& JsonObject::add_raw(const std::string& key, const std::string& json) {
  fields_.emplace_back(key, json);
  return *this;
}

std::string JsonObject::str(int indent) const {
  const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
  std::string s = "{";
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    s += (i ? ",\n" : "\n") + pad + json_string(fields_[i].first) + ": " + fields_[i].second;
  }
  return s + "\n" + std::string(static_cast<std::size_t>(indent), ' ') + "}";
}

std::string json_array(const std::vector<JsonObject>& items, int indent) {
  const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
  std::string s = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    s += (i ? ",\n" : "\n") + pad + items[i].str(indent + 2);
  }
  return s + "\n" + std::string(static_cast<std::size_t>(indent), ' ') + "]";
}

namespace {

// A new file of a unique name beside `path` (PATH.XXXXXX, mkstemp), open for writing: its name
// and descriptor. Nobody else's file is taken or removed (a fixed PATH.tmp was).
std::pair<std::string, int> temp_beside(const std::string& path) {
  std::string name = path + ".XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw std::runtime_error("cannot write " + path +
                             " (cannot create a file beside it: " + std::strerror(errno) + ")");
  }
  return {name, fd};
}

}  // namespace

void check_output_path(const std::string& command, const std::string& flag,
                       const std::string& path) {
  if (path.empty()) throw UsageError(command + ": flag --" + flag + " needs a path, got ''");
  const auto [tmp, fd] = temp_beside(path);
  ::close(fd);
  std::remove(tmp.c_str());
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw std::runtime_error(command + ": --" + flag + " " + path + " is a directory");
  }
}

void write_file_bytes(const std::string& path, const void* data, std::size_t bytes) {
  // Into a new file beside it, renamed over `path` once complete: a failed write (a full disk, a
  // file size limit) leaves no half-written `path`, and an old one stays whole.
  const auto [tmp, fd] = temp_beside(path);
  const char* p = static_cast<const char*>(data);
  std::size_t left = bytes;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "no progress";
      ::close(fd);
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write " + path + " (" + std::to_string(bytes) +
                               " bytes: " + why + "; nothing written)");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // mkstemp's 0600, widened as a new file's mode would be (0666 less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  if (::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write " + path + " (" + why + "; nothing written)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write " + path + " (rename from " + tmp + ": " + why + ")");
  }
}

void write_file(const std::string& path, const std::string& text) {
  const std::string all = text + "\n";
  write_file_bytes(path, all.data(), all.size());
}

}  // namespace gpuattn::tool
