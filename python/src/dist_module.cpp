// Python binding of the distributed layer (gpuattn/distributed.h): `_C.RankGroup` and
// `_C.sequence_parallel_attention` over lists of DLPack arrays, one per local rank.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuattn/distributed.h"
#include "py_args.h"

namespace nb = nanobind;

// module.cpp's conversions.
gpuattn::TensorView array_view(const nb::ndarray<nb::ro>& a, const char* name);
gpuattn::TensorView array_view(const nb::ndarray<>& a, const char* name);
gpuattn::Precision precision_of(const std::string& s);
void require_cuda_device(const std::string& what);  // RuntimeError when no CUDA device is usable

namespace {

using Input = nb::ndarray<nb::ro>;
using Output = nb::ndarray<>;

[[noreturn]] void invalid(const std::string& msg) {
  throw gpuattn::Error(gpuattn::ErrorCode::invalid_argument, msg);
}

using gpuattn_py::int32_arg;  // py_args.h: every number named as passed

// A group runs one call at a time (its communicators, events and buffers are shared): calls from
// several Python threads take turns, the lock taken after the GIL is released. Keyed by the
// shared group (copies of a RankGroup share it), one small entry a group for the process's life.
std::mutex& group_lock(const gpuattn::RankGroup& g) {
  static std::mutex map_lock;
  static std::unordered_map<const gpuattn::RankGroup::Impl*, std::mutex> locks;
  const std::lock_guard<std::mutex> hold(map_lock);
  return locks[&g.impl()];
}

gpuattn::ShardLayout layout_of(const std::string& s) {
  if (s == "contiguous") return gpuattn::ShardLayout::contiguous;
  if (s == "zigzag") return gpuattn::ShardLayout::zigzag;
  invalid("layout '" + s + "' is not one of 'contiguous', 'zigzag'");
}

gpuattn::SeqParallelStrategy strategy_of(const std::string& s) {
  if (s == "ring") return gpuattn::SeqParallelStrategy::ring;
  if (s == "all_gather") return gpuattn::SeqParallelStrategy::all_gather;
  if (s == "head_parallel") return gpuattn::SeqParallelStrategy::head_parallel;
  if (s == "auto") return gpuattn::SeqParallelStrategy::automatic;
  invalid("strategy '" + s + "' is not one of 'auto', 'ring', 'all_gather', 'head_parallel'");
}

gpuattn::Transport transport_of(const std::string& s) {
  if (s == "nccl") return gpuattn::Transport::nccl;
  if (s == "peer_copy") return gpuattn::Transport::peer_copy;
  invalid("transport '" + s + "' is not one of 'nccl', 'peer_copy'");
}

// The i-th array of a list argument, converted and named ("q[1]").
template <typename Array>
gpuattn::TensorView item(const std::vector<Array>& list, std::size_t i, const char* name) {
  const std::string n = std::string(name) + "[" + std::to_string(i) + "]";
  if (!list[i].is_valid()) invalid(n + " is None");
  return array_view(list[i], n.c_str());
}

void sequence_parallel_attention(const gpuattn::RankGroup& group, const std::vector<Input>& q,
                                 const std::vector<Input>& k, const std::vector<Input>& v,
                                 const std::vector<Output>& out,
                                 const std::optional<std::vector<Output>>& lse,
                                 nb::handle causal_arg, nb::handle softmax_scale,
                                 const std::string& layout, const std::string& strategy,
                                 nb::handle streams_arg, const std::string& precision,
                                 nb::handle window_size, nb::handle global_tokens,
                                 nb::handle global_stride) {
  const bool causal = gpuattn_py::bool_arg(causal_arg, "sequence_parallel_attention: causal");
  const std::vector<std::int32_t> window = gpuattn_py::ids_arg(
      window_size, "sequence_parallel_attention: window_size", INT32_MIN, INT32_MAX);
  if (window.size() != 2) {
    throw nb::value_error(("sequence_parallel_attention: window_size is " +
                           gpuattn_py::repr_of(window_size) + ", must be (left, right)")
                              .c_str());
  }
  const int window_left = window[0], window_right = window[1];
  const int tokens = int32_arg(global_tokens, "sequence_parallel_attention: global_tokens");
  const int stride = int32_arg(global_stride, "sequence_parallel_attention: global_stride");
  std::optional<float> scale;
  if (!softmax_scale.is_none()) {
    scale = gpuattn_py::float32_arg(softmax_scale, "sequence_parallel_attention: softmax_scale");
  }
  std::optional<std::vector<std::uintptr_t>> streams;
  if (!streams_arg.is_none()) {
    streams.emplace();
    std::size_t i = 0;
    for (nb::handle h : streams_arg) {
      streams->push_back(static_cast<std::uintptr_t>(gpuattn_py::u64_arg(
          h, "sequence_parallel_attention: streams[" + std::to_string(i++) + "]")));
    }
  }
  const std::size_t n = q.size();
  auto same_length = [&](std::size_t m, const char* name) {
    if (m != n) {
      invalid(std::string(name) + " has " + std::to_string(m) + " arrays but q has " +
              std::to_string(n) + " (one per local rank)");
    }
  };
  same_length(k.size(), "k");
  same_length(v.size(), "v");
  same_length(out.size(), "out");
  if (lse) same_length(lse->size(), "lse");
  if (streams) same_length(streams->size(), "streams");
  gpuattn::SequenceParallelArgs args;
  args.layout = layout_of(layout);
  args.strategy = strategy_of(strategy);
  for (std::size_t i = 0; i < n; ++i) {
    gpuattn::AttentionArgs a;
    a.q = item(q, i, "q");
    a.k = item(k, i, "k");
    a.v = item(v, i, "v");
    a.out = item(out, i, "out");
    if (lse) a.lse = item(*lse, i, "lse");
    a.causal = causal;
    if (scale) a.softmax_scale = *scale;
    a.precision = precision_of(precision);
    a.mask.window_left = window_left;
    a.mask.window_right = window_right;
    a.mask.global_tokens = tokens;
    a.mask.global_stride = stride;
    if (streams) a.stream = reinterpret_cast<void*>((*streams)[i]);
    args.shards.push_back(a);
  }
  nb::gil_scoped_release release;
  const std::lock_guard<std::mutex> hold(group_lock(group));
  gpuattn::sequence_parallel_attention(group, args);
}

}  // namespace

void bind_dist(nb::module_& m) {
  nb::class_<gpuattn::RankGroup>(m, "RankGroup",
                                 "A set of ranks that run sequence-parallel calls together "
                                 "(gpuattn::RankGroup).")
      .def_static(
          "local_cuda",
          [](nb::handle devices, const std::string& transport) {
            const std::vector<std::int32_t> d =
                gpuattn_py::ids_arg(devices, "RankGroup.local_cuda: devices", INT32_MIN, INT32_MAX);
            const gpuattn::Transport t = transport_of(transport);
            require_cuda_device("RankGroup.local_cuda");
            return gpuattn::RankGroup::local_cuda(std::vector<int>(d.begin(), d.end()), t);
          },
          nb::arg("devices"), nb::arg("transport") = "nccl",
          "Every rank in this process, one per CUDA ordinal of `devices`; transport 'nccl' (the "
          "devices must differ) or 'peer_copy' (CUDA peer copies; devices may repeat).")
      .def_static(
          "local_cpu",
          [](nb::handle world_size, nb::handle threads_per_rank) {
            return gpuattn::RankGroup::local_cpu(
                int32_arg(world_size, "RankGroup.local_cpu: world_size"),
                int32_arg(threads_per_rank, "RankGroup.local_cpu: threads_per_rank"));
          },
          nb::arg("world_size"), nb::arg("threads_per_rank") = 0,
          "`world_size` ranks in this process on the CPU backend (host arrays).")
      .def_static(
          "nccl_from_file",
          [](const std::string& path, nb::handle rank, nb::handle world_size, nb::handle device,
             double timeout_s) {
            const char* fn = "RankGroup.nccl_from_file: ";
            const int r = int32_arg(rank, std::string(fn) + "rank");
            const int n = int32_arg(world_size, std::string(fn) + "world_size");
            const int d = int32_arg(device, std::string(fn) + "device");
            require_cuda_device("RankGroup.nccl_from_file");
            return gpuattn::RankGroup::nccl_from_file(path, r, n, d, timeout_s);
          },
          nb::arg("bootstrap_path"), nb::arg("rank"), nb::arg("world_size"), nb::arg("device"),
          nb::arg("timeout_s") = 120.0,
          "One rank of a group of one process per GPU: rank 0 writes NCCL's unique id to "
          "`bootstrap_path`, the others wait for it (remove the file between runs).")
      .def_prop_ro("world_size", &gpuattn::RankGroup::world_size)
      .def_prop_ro("local_ranks", &gpuattn::RankGroup::local_ranks)
      .def_prop_ro("devices", &gpuattn::RankGroup::devices)
      .def_prop_ro(
          "transport",
          [](const gpuattn::RankGroup& g) { return std::string(to_string(g.transport())); })
      .def_prop_ro("device",
                   [](const gpuattn::RankGroup& g) { return std::string(to_string(g.device())); });

  m.def("sequence_parallel_attention", &sequence_parallel_attention, nb::arg("group"), nb::arg("q"),
        nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse").none() = nb::none(),
        nb::arg("causal") = false, nb::arg("softmax_scale").none() = nb::none(),
        nb::arg("layout") = "contiguous", nb::arg("strategy") = "auto",
        nb::arg("streams").none() = nb::none(), nb::arg("precision") = "standard",
        nb::arg("window_size") = nb::make_tuple(-1, -1), nb::arg("global_tokens") = 0,
        nb::arg("global_stride") = 0,
        "gpuattn::sequence_parallel_attention: q, k, v, out (and lse) are lists with one array "
        "per local rank (group.local_ranks order), each that rank's rows of the sequence: q/out "
        "[B, S_local, Hq, D], k/v [B, S_local, Hkv, D], lse float32 [B, Hq, S_local]. layout "
        "'contiguous' or 'zigzag' (see shard_rows); strategy 'auto' (head_parallel when Hq and "
        "Hkv are multiples of the ranks, else ring; all_gather for a causal call with a window "
        "or global tokens), 'ring', 'all_gather' or 'head_parallel'; "
        "streams: a cudaStream_t per rank as integers (default streams when "
        "None). window_size (left, right; -1 unbounded), global_tokens and global_stride are over "
        "global positions (head_parallel: any; all_gather: causal calls; ring: none). Raises "
        "ValueError / NotImplementedError naming the bad shard and value.");
  m.def(
      "shard_rows",
      [](const std::string& layout, nb::handle world_size, nb::handle rank, nb::handle seq_len) {
        return gpuattn::shard_rows(
            layout_of(layout), int32_arg(world_size, "shard_rows: world_size"),
            int32_arg(rank, "shard_rows: rank"),
            gpuattn_py::int_arg(seq_len, "shard_rows: seq_len", INT64_MIN, INT64_MAX));
      },
      nb::arg("layout"), nb::arg("world_size"), nb::arg("rank"), nb::arg("seq_len"),
      "The global rows rank `rank` of `world_size` holds under `layout`, in its local order.");
}
