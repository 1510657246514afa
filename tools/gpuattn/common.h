// Shared pieces of the `gpuattn` command line tool: flags, problem cases with random host data,
// threads, tables and JSON. Host-only (no CUDA headers).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/test_util.h"  // HostTensor (tests/common, shared with the test suites)
#include "gpuattn/attention.h"

namespace gpuattn::tool {

using testing::HostTensor;

// A bad command line: main prints the message and exits with status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Flags of one subcommand: "--name value", "--name=value", or a switch "--name".
class Flags {
 public:
  Flags(std::string command, const std::vector<std::string>& args,
        const std::vector<std::string>& value_flags, const std::vector<std::string>& switches);
  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& fallback) const;
  // One of `choices`, else a UsageError naming the flag.
  std::string choice(const std::string& name, const std::string& fallback,
                     const std::vector<std::string>& choices) const;
  int get_int(const std::string& name, int fallback, int min, int max) const;
  std::uint64_t get_u64(const std::string& name, std::uint64_t fallback) const;
  // --help or -h stood where a flag does: nothing else was parsed; the command prints its help.
  bool wants_help() const { return help_; }

 private:
  bool help_ = false;
  std::string command_;
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_;
};

// One attention problem. Dense unless lens_q is set (then batch = lens_q.size(), sq/sk are the
// max lengths and the tensors are packed).
struct Case {
  int batch = 1, hq = 1, hkv = 1, sq = 1, sk = 1, d = 64;
  DType dtype = DType::f16;
  bool causal = false;
  std::vector<int> lens_q, lens_k;
  Precision precision = Precision::standard;
  float q_scale = 1.f;  // q multiplied by this (large logits)
  float softcap = 0.f;  // AttentionArgs::softcap (0: none)
  bool alibi = false;   // AttentionArgs::alibi_slopes: the paper's slopes, 2^(-8 (h + 1) / Hq)

  bool varlen() const { return !lens_q.empty(); }
  std::int64_t total_q() const;
  std::int64_t total_k() const;
  std::string shape() const;  // "B2 Hq32 Hkv8 Sq1000 Sk4097 D128" or "varlen{1,17} Hq.. D.."
  std::string label() const;  // shape + dtype + causal + precision + q scale + options
  // --shape's option words: " softcap<n>" and " alibi", each only when set.
  std::string option_words() const;
};

Case dense_case(int b, int hq, int hkv, int sq, int sk, int d, DType t, bool causal);
Case varlen_case(std::vector<int> lens_q, std::vector<int> lens_k, int hq, int hkv, int d, DType t,
                 bool causal);

// A dense shape in words, as `gpuattn bench --shape` and `gpuattn model --shape` take it: B<n>
// (batch, default 1), H<n> (query and KV heads) or Hq<n> [Hkv<n>] (Hkv dividing Hq; default Hq),
// S<n> (query and key lengths) or Sq<n> [Sk<n>] (Sk default Sq), D<n> (head dim), and optionally
// "causal" and a dtype (f16 / float16, the default, or bf16 / bfloat16). An unknown word, a
// number out of [1, 2^30] (B and H: 65535), a missing H, S or D, or an Hkv that does not divide Hq
// is a UsageError naming `command`'s flag, the text and what is wrong.
Case parse_shape_words(const std::string& command, const std::string& text);

// The shapes of a --shape value, ';'-separated (`gpuattn bench` and `gpuattn model`): each
// piece trimmed of spaces and tabs, blank pieces skipped. None left is a UsageError naming
// `command` and the value.
std::vector<std::string> split_shapes(const std::string& command, const std::string& spec);

// Host tensors of one case: random q/k/v (fresh for `seed`), out/lse poisoned with NaN.
struct HostProblem {
  Case c;
  HostTensor q, k, v, out, cu_q, cu_k;
  std::vector<float> lse;    // dense [B, Hq, Sq]; varlen [Hq, total_q]
  std::vector<float> alibi;  // c.alibi: [Hq] slopes (alibi_slopes_of)

  // Random q, k, v, out poisoned; a std::runtime_error naming the shape and the bytes where the
  // host memory cannot be had.
  HostProblem(const Case& c, std::uint64_t seed);
  // Arguments over host memory.
  AttentionArgs host_args();

 private:
  void allocate();  // the tensors of c, unfilled
};

// The ALiBi slopes of the paper for `hq` heads: 2^(-8 (h + 1) / hq).
std::vector<float> alibi_slopes_of(int hq);

// Arguments of `c` over the given buffers (host or device), with lse and cu_seqlens as given.
AttentionArgs make_args(const Case& c, Device dev, void* q, void* k, void* v, void* out, float* lse,
                        void* cu_q, void* cu_k);

// Attention FLOPs of `c` (visible elements only).
double case_flops(const Case& c);

int hardware_threads();
// Runs fn(begin, end) over [0, n) split into contiguous chunks on `threads` threads.
void parallel_for(std::int64_t n, int threads,
                  const std::function<void(std::int64_t, std::int64_t)>& fn);
// Normal(0, scale) values, deterministic for a seed whatever the thread count.
void fill_random(HostTensor& t, std::uint64_t seed, float scale);
std::uint64_t fresh_seed();

double median(std::vector<double> v);
std::string fmt(double x, int precision);  // fixed; "n/a" for NaN
std::string sci(double x, int precision);  // scientific; "n/a" for NaN
std::string iso_date_utc();
std::string git_commit();  // $GPUATTN_COMMIT, else the commit at configure time, else "unknown"
std::string host_cpu_name();

// Prints rows under a header, columns padded to their widest cell; the first `left_columns`
// left-aligned, the others right-aligned.
void print_table(const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, std::size_t left_columns = 1);

// A flat JSON object built field by field; values are encoded when added.
class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value);
  JsonObject& add(const std::string& key, const char* value);
  JsonObject& add(const std::string& key, double value);  // NaN/inf -> null
  JsonObject& add(const std::string& key, std::int64_t value);
  JsonObject& add(const std::string& key, int value);
  JsonObject& add(const std::string& key, bool value);
  JsonObject& add_raw(const std::string& key, const std::string& json);
  std::string str(int indent = 0) const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};
std::string json_array(const std::vector<JsonObject>& items, int indent);
// `text` and a newline into `path`, or `bytes` of `data`: through a new file beside it
// (PATH.XXXXXX, mkstemp), renamed over `path`
// once complete, so that a failed write leaves no half-written file (std::runtime_error).
void write_file(const std::string& path, const std::string& text);
void write_file_bytes(const std::string& path, const void* data, std::size_t bytes);
// Before any work: the output file of --`flag` can be written where it goes (a file created and
// removed beside it; std::runtime_error naming the path and the reason) and is not a directory;
// an empty path is a UsageError.
void check_output_path(const std::string& command, const std::string& flag,
                       const std::string& path);

// Subcommands.
int run_verify(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
int run_generate(const std::vector<std::string>& args);
int run_dist(const std::vector<std::string>& args);
int run_model(const std::vector<std::string>& args);

// True when a command's arguments hold --help or -h anywhere (gpuattn model, whose flags are its
// own; the others ask Flags::wants_help, which skips flags' values).
inline bool asks_for_help(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

}  // namespace gpuattn::tool
