// `gpuattn model`: the forward kernels' performance model (gpuattn/perf_model.h): predictions for
// shapes, a check against measured `gpuattn bench` JSON, and the fit of its per-kernel costs.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common.h"
#include "engine/json.h"
#include "gpuattn/perf_model.h"

namespace gpuattn::tool {
namespace {

const char* kHelp = R"(usage: gpuattn model [--shape SHAPE]... [--configs] [--check FILE]...
                     [--fit FILE]... [--max-error X]

The forward kernels' performance model (include/gpuattn/perf_model.h), for an H200: the
configuration the dispatch picks, its work items, a longest-first schedule of them over the SMs,
and per-kernel costs of a key tile and of an item fitted on measured times.

  --shape SHAPE   predict a shape: words B<n> H<n> or Hq<n> [Hkv<n>], S<n> or Sq<n> [Sk<n>], D<n>,
                  [causal] (as gpuattn bench --shape takes them; e.g. "B1 Hq16 S1024 D64");
                  several allowed, as flags or ';'-separated in one
  --configs       with --shape: the prediction for every sm_90a standard-precision
                  configuration that runs the shape's head dim, and for the dispatch's pick
                  where it is another kernel (the split-KV decode kernel), the pick and the
                  model's fastest marked (a what-if for the tile configuration table)
  --check FILE    predict every result of a `gpuattn bench --json` FILE (with the configuration
                  that ran) and compare with its measured time; several allowed
  --fit FILE      fit each (configuration, head dim)'s efficiency and per-item time on the
                  results of FILEs (least largest relative error), print them
  --max-error X   with --check: exit 1 when any |predicted / measured - 1| exceeds X
                  (default 0.25)
)";

// The member `key` of object `o`, or a UsageError naming the file and key.
const engine::Json& member(const engine::Json& o, const char* key, const std::string& path) {
  const engine::Json* v = o.find(key);
  if (v == nullptr) throw UsageError("gpuattn model: '" + path + "' has no \"" + key + "\"");
  return *v;
}

struct Measured {
  std::string label;
  PerfShape shape;
  double ms = 0;
};

PerfShape parse_shape(const std::string& text) {
  const Case c = parse_shape_words("gpuattn model", text);
  PerfShape s;
  s.batch = c.batch;
  s.hq = c.hq;
  s.hkv = c.hkv;
  s.seqlen_q = c.sq;
  s.seqlen_k = c.sk;
  s.head_dim = c.d;
  s.causal = c.causal;
  s.dtype_bytes = 2;
  return s;
}

// Member `key` of result `i` as a whole number in [lo, hi], or a number: a UsageError naming the
// file, the result and the key for anything else (null, a string, 2^40 for an int).
long long int_member(const engine::Json& r, const char* key, const std::string& path, std::size_t i,
                     long long lo, long long hi) {
  const engine::Json& v = member(r, key, path);
  long long n = 0;
  try {
    n = v.as_int();
  } catch (const Error& e) {
    throw UsageError("gpuattn model: '" + path + "' results[" + std::to_string(i) + "]." + key +
                     ": " + e.what());
  }
  if (n < lo || n > hi) {
    throw UsageError("gpuattn model: '" + path + "' results[" + std::to_string(i) + "]." + key +
                     " is " + std::to_string(n) + ", must be in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  }
  return n;
}

double number_member(const engine::Json& r, const char* key, const std::string& path,
                     std::size_t i) {
  try {
    return member(r, key, path).as_number();
  } catch (const Error& e) {
    throw UsageError("gpuattn model: '" + path + "' results[" + std::to_string(i) + "]." + key +
                     ": " + e.what());
  }
}

std::vector<Measured> read_results(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw UsageError("gpuattn model: cannot read '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  const engine::Json doc = engine::parse_json(ss.str(), path);
  std::vector<Measured> out;
  const auto& results = member(doc, "results", path).as_array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const engine::Json& r = results[i];
    if (r.find("error") != nullptr && !member(r, "error", path).as_string().empty()) continue;
    Measured m;
    m.label = member(r, "label", path).as_string();
    m.shape.batch = static_cast<int>(int_member(r, "batch", path, i, 1, 65535));
    m.shape.hq = static_cast<int>(int_member(r, "hq", path, i, 1, 65535));
    m.shape.hkv = static_cast<int>(int_member(r, "hkv", path, i, 1, 65535));
    m.shape.seqlen_q = static_cast<int>(int_member(r, "seqlen_q", path, i, 1, 1LL << 30));
    m.shape.seqlen_k = static_cast<int>(int_member(r, "seqlen_k", path, i, 1, 1LL << 30));
    m.shape.head_dim = static_cast<int>(int_member(r, "head_dim", path, i, 1, 1024));
    m.shape.causal = member(r, "causal", path).as_bool();
    const std::string dt = member(r, "dtype", path).as_string();
    m.shape.dtype_bytes = dt == "float32" ? 4 : 2;
    std::string config = member(r, "config", path).as_string();
    config = config.substr(0, config.find(' '));  // "sm90_ws_128x128 (late P V wait)"
    m.shape.config = config;
    m.ms = number_member(r, "ours_ms", path, i);
    if (!(m.ms > 0) || !std::isfinite(m.ms)) {
      throw UsageError("gpuattn model: '" + path + "' results[" + std::to_string(i) +
                       "].ours_ms is " + std::to_string(m.ms) + ", must be a positive time");
    }
    out.push_back(m);
  }
  return out;
}

double rel_error(const Measured& m, const std::vector<KernelCost>& costs) {
  const Prediction p = predict_forward(m.shape, DeviceSpec::h200(), costs);
  return p.total_us / (m.ms * 1e3) - 1.0;
}

}  // namespace

int run_model(const std::vector<std::string>& args) {
  if (asks_for_help(args)) {
    std::cout << kHelp;
    return 0;
  }
  // Repeated flags: collect them by hand (Flags keeps one value a name).
  std::vector<std::string> shapes, checks, fits;
  double max_error = 0.25;
  bool all_configs = false, max_error_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    // --name VALUE or --name=VALUE, as the other commands take them; a value is never a flag.
    std::string a = args[i], inline_value;
    const std::size_t eq = a.rfind("--", 0) == 0 ? a.find('=') : std::string::npos;
    const bool has_inline = eq != std::string::npos;
    if (has_inline) {
      inline_value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto value = [&]() -> std::string {
      if (has_inline) return inline_value;
      if (i + 1 >= args.size()) throw UsageError("gpuattn model: " + a + " needs a value");
      if (args[i + 1].rfind("--", 0) == 0) {
        throw UsageError("gpuattn model: " + a + " needs a value, got the flag '" + args[i + 1] +
                         "' (" + a + "=VALUE for a value starting with --)");
      }
      return args[++i];
    };
    if (has_inline && a == "--configs") {
      throw UsageError("gpuattn model: flag --configs takes no value");
    }
    if (a == "--shape") {  // ';'-separated shapes too, as gpuattn bench --shape takes them
      for (std::string& one : split_shapes("gpuattn model", value())) {
        shapes.push_back(std::move(one));
      }
    } else if (a == "--check") {
      checks.push_back(value());
    } else if (a == "--fit") {
      fits.push_back(value());
    } else if (a == "--configs") {
      all_configs = true;
    } else if (a == "--max-error") {
      const std::string v = value();
      char* end = nullptr;
      max_error_given = true;
      max_error = std::strtod(v.c_str(), &end);
      // A number as written (strtod takes leading spaces, and inf).
      const bool starts =
          !v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '.');
      if (!starts || *end != 0 || !(max_error > 0) || !std::isfinite(max_error)) {
        throw UsageError("gpuattn model: --max-error '" + v + "' is not a positive number");
      }
    } else {
      throw UsageError("gpuattn model: unknown flag '" + a + "'");
    }
  }
  if (shapes.empty() && checks.empty() && fits.empty()) {
    throw UsageError("gpuattn model: give --shape, --check or --fit");
  }
  if (all_configs && shapes.empty()) {
    throw UsageError(
        "gpuattn model: --configs lists the configurations of --shape's shapes: give "
        "--shape");
  }
  if (max_error_given && checks.empty()) {
    throw UsageError("gpuattn model: --max-error applies to --check: give --check");
  }
  const DeviceSpec dev = DeviceSpec::h200();
  int status = 0;
  if (!shapes.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const std::string& text : shapes) {
      const PerfShape s = parse_shape(text);
      const Prediction p = predict_forward(s, dev);
      rows.push_back({text, p.config, std::to_string(p.items), fmt(p.waves, 2),
                      fmt(p.compute_us, 2), fmt(p.memory_us, 2), fmt(p.total_us, 2),
                      fmt(p.total_us / (static_cast<double>(s.batch) * s.hq), 3)});
    }
    std::cout << "predicted on " << dev.name << " (" << dev.num_sms << " SMs)\n";
    print_table(
        {"shape", "config", "items", "waves", "compute us", "memory us", "total us", "us/head"},
        rows, 2);
  }
  if (all_configs) {
    // The sm_90a standard-precision configurations and the head dims they run (tile_config.h).
    static const std::pair<const char*, std::vector<int>> kRuns[] = {
        {"sm90_ws_128x128", {64, 128}}, {"sm90_ws_192x128", {64}},
        {"sm90_ws_128x64_d256", {256}}, {"sm90_ws_128x80_d256", {256}},
        {"sm90_ws_128x128_s3", {128}},  {"sm90_ws_128x128_s4", {64}},
        {"sm90_ws_64x128_2cta", {64}}};
    std::vector<std::vector<std::string>> rows;
    for (const std::string& text : shapes) {
      const PerfShape s = parse_shape(text);
      const Prediction picked = predict_forward(s, dev);
      const std::string pick = picked.config;
      std::vector<std::pair<double, std::string>> preds;
      for (const auto& [name, dims] : kRuns) {
        if (std::find(dims.begin(), dims.end(), s.head_dim) == dims.end()) continue;
        // sm90_ws_128x128_s4 runs causal calls only (run_fwd refuses any other).
        if (!s.causal && std::string(name) == "sm90_ws_128x128_s4") continue;
        PerfShape w = s;
        w.config = name;
        preds.emplace_back(predict_forward(w, dev).total_us, name);
      }
      // The dispatch's pick outside the list (the split-KV decode kernel of a short Sq, say)
      // gets its own row, so that "dispatch" and "fastest" compare every candidate.
      if (std::none_of(preds.begin(), preds.end(),
                       [&](const auto& x) { return x.second == pick; })) {
        preds.emplace_back(picked.total_us, pick);
      }
      const double best = std::min_element(preds.begin(), preds.end())->first;
      for (const auto& [us, name] : preds) {
        std::string mark = name == pick ? "dispatch" : "";
        if (us == best) mark += mark.empty() ? "fastest" : ", fastest";
        rows.push_back({text, name, fmt(us, 2), fmt(us / best, 3), mark});
      }
    }
    print_table({"shape", "config", "predicted us", "vs fastest", ""}, rows, 2);
  }
  if (!fits.empty()) {
    std::vector<Measured> data;
    for (const auto& f : fits) {
      const auto m = read_results(f);
      data.insert(data.end(), m.begin(), m.end());
    }
    std::map<std::pair<std::string, int>, std::vector<Measured>> groups;
    for (const Measured& m : data) groups[{m.shape.config, m.shape.head_dim}].push_back(m);
    std::vector<std::vector<std::string>> rows;
    for (const auto& [key, ms] : groups) {
      KernelCost best{key.first, key.second, 0, 0};
      double best_err = 1e30;
      for (int e = 40; e <= 100; ++e) {
        for (int t = 0; t <= 80; ++t) {
          const std::vector<KernelCost> c = {{key.first, key.second, e / 100.0, t * 0.05}};
          double worst = 0;
          for (const Measured& m : ms) worst = std::max(worst, std::fabs(rel_error(m, c)));
          if (worst < best_err) {
            best_err = worst;
            best = c[0];
          }
        }
      }
      rows.push_back({key.first, std::to_string(key.second), std::to_string(ms.size()),
                      fmt(best.efficiency, 2), fmt(best.item_us, 2), fmt(best_err, 3)});
    }
    print_table({"config", "D", "points", "efficiency", "item us", "largest error"}, rows, 1);
  }
  for (const std::string& f : checks) {
    const std::vector<Measured> data = read_results(f);
    std::vector<std::vector<std::string>> rows;
    std::vector<double> errs;
    for (const Measured& m : data) {
      Prediction p;
      try {
        p = predict_forward(m.shape, dev);
      } catch (const std::exception& e) {  // a CPU run's config 'cpu', say: name the file
        throw std::runtime_error(f + ": result '" + m.label + "': " + e.what());
      }
      const double err = p.total_us / (m.ms * 1e3) - 1.0;
      errs.push_back(std::fabs(err));
      rows.push_back(
          {m.label, m.shape.config, fmt(m.ms * 1e3, 2), fmt(p.total_us, 2), fmt(100 * err, 1)});
    }
    if (errs.empty()) {  // nothing to compare: not a pass
      std::cerr << "gpuattn model: " << f
                << ": no result to check (every row has an error, or there are none)\n";
      status = 1;
      continue;
    }
    std::cout << f << ":\n";
    print_table({"shape", "config (measured run)", "measured us", "predicted us", "error %"}, rows,
                2);
    const double worst = *std::max_element(errs.begin(), errs.end());
    std::cout << "largest |error| " << fmt(100 * worst, 1) << "%, median "
              << fmt(100 * median(errs), 1) << "% over " << errs.size() << " shapes\n";
    if (worst > max_error) {
      std::cerr << "gpuattn model: " << f << ": an error of " << fmt(100 * worst, 1)
                << "% exceeds --max-error " << max_error << "\n";
      status = 1;
    }
  }
  return status;
}

}  // namespace gpuattn::tool
