// RankGroup: the factories, the accessors and the names; shard_rows.
#include <string>
#include <vector>

#include "dist/comm.h"
#include "dist/rank_exec.h"
#include "gpuattn/distributed.h"

namespace gpuattn {
namespace dist {
// CUDA builds: the per-rank events of a CUDA group (cuda/cuda_group.cpp).
void create_events(RankGroup::Impl& g);
void destroy_events(RankGroup::Impl& g) noexcept;
int visible_devices();
}  // namespace dist

namespace {

void check_world(int world_size, const char* fn) {
  if (world_size < 1) {
    throw Error(ErrorCode::invalid_argument, std::string(fn) + ": world_size " +
                                                 std::to_string(world_size) + " is not positive");
  }
}

}  // namespace

RankGroup::Impl::~Impl() {
  comm.reset();
  if (device == Device::cuda) dist::destroy_events(*this);
}

RankGroup RankGroup::local_cpu(int world_size, int threads_per_rank) {
  check_world(world_size, "RankGroup::local_cpu");
  if (threads_per_rank < 0) {
    throw Error(ErrorCode::invalid_argument, "RankGroup::local_cpu: threads_per_rank " +
                                                 std::to_string(threads_per_rank) + " is negative");
  }
  auto g = std::make_shared<Impl>();
  g->world_size = world_size;
  for (int r = 0; r < world_size; ++r) g->local_ranks.push_back(r);
  g->transport = Transport::host;
  g->device = Device::cpu;
  g->threads_per_rank = threads_per_rank;
  g->comm = dist::make_host_comm(world_size);
  return RankGroup(g);
}

RankGroup RankGroup::local_cuda(const std::vector<int>& devices, Transport transport) {
  const char* fn = "RankGroup::local_cuda";
  check_world(static_cast<int>(devices.size()), fn);
  if (transport != Transport::nccl && transport != Transport::peer_copy) {
    throw Error(ErrorCode::invalid_argument, std::string(fn) + ": transport " +
                                                 to_string(transport) +
                                                 " is not a CUDA transport (nccl or peer_copy)");
  }
  const int visible = dist::visible_devices();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] >= visible) {
      throw Error(ErrorCode::invalid_argument, std::string(fn) + ": devices[" + std::to_string(i) +
                                                   "] = " + std::to_string(devices[i]) +
                                                   " is not a visible CUDA device (" +
                                                   std::to_string(visible) + " visible)");
    }
    if (transport == Transport::nccl) {
      for (std::size_t j = 0; j < i; ++j) {
        if (devices[j] == devices[i]) {
          throw Error(ErrorCode::invalid_argument,
                      std::string(fn) + ": devices[" + std::to_string(j) + "] and devices[" +
                          std::to_string(i) + "] are both cuda:" + std::to_string(devices[i]) +
                          "; NCCL takes one rank per device (Transport::peer_copy allows repeats)");
        }
      }
    }
  }
  auto g = std::make_shared<Impl>();
  g->world_size = static_cast<int>(devices.size());
  for (int r = 0; r < g->world_size; ++r) g->local_ranks.push_back(r);
  g->devices = devices;
  g->transport = transport;
  g->device = Device::cuda;
  g->comm = transport == Transport::nccl ? dist::make_nccl_local_comm(devices)
                                         : dist::make_peer_comm(devices);
  dist::create_events(*g);
  return RankGroup(g);
}

RankGroup RankGroup::nccl_from_file(const std::string& bootstrap_path, int rank, int world_size,
                                    int device, double timeout_s) {
  const char* fn = "RankGroup::nccl_from_file";
  check_world(world_size, fn);
  if (rank < 0 || rank >= world_size) {
    throw Error(ErrorCode::invalid_argument, std::string(fn) + ": rank " + std::to_string(rank) +
                                                 " is not in [0, " + std::to_string(world_size) +
                                                 ")");
  }
  if (bootstrap_path.empty()) {
    throw Error(ErrorCode::invalid_argument, std::string(fn) + ": bootstrap_path is empty");
  }
  if (!(timeout_s > 0)) {
    throw Error(ErrorCode::invalid_argument,
                std::string(fn) + ": timeout_s " + std::to_string(timeout_s) + " is not positive");
  }
  const int visible = dist::visible_devices();
  if (device < 0 || device >= visible) {
    throw Error(ErrorCode::invalid_argument,
                std::string(fn) + ": device " + std::to_string(device) +
                    " is not a visible CUDA device (" + std::to_string(visible) + " visible)");
  }
  auto g = std::make_shared<Impl>();
  g->world_size = world_size;
  g->local_ranks = {rank};
  g->devices = {device};
  g->transport = Transport::nccl;
  g->device = Device::cuda;
  g->comm = dist::make_nccl_file_comm(bootstrap_path, rank, world_size, device, timeout_s);
  dist::create_events(*g);
  return RankGroup(g);
}

int RankGroup::world_size() const {
  return impl_->world_size;
}
const std::vector<int>& RankGroup::local_ranks() const {
  return impl_->local_ranks;
}
const std::vector<int>& RankGroup::devices() const {
  return impl_->devices;
}
Transport RankGroup::transport() const {
  return impl_->transport;
}
Device RankGroup::device() const {
  return impl_->device;
}

std::vector<std::int64_t> shard_rows(ShardLayout layout, int world_size, int rank,
                                     std::int64_t seq_len) {
  const char* fn = "shard_rows";
  check_world(world_size, fn);
  if (rank < 0 || rank >= world_size) {
    throw Error(ErrorCode::invalid_argument, std::string(fn) + ": rank " + std::to_string(rank) +
                                                 " is not in [0, " + std::to_string(world_size) +
                                                 ")");
  }
  const std::int64_t parts = layout == ShardLayout::zigzag ? 2 * std::int64_t{world_size}
                                                           : world_size;  // 64-bit: 2^30 ranks
  if (seq_len < 0) {
    throw Error(ErrorCode::invalid_argument,
                std::string(fn) + ": seq_len " + std::to_string(seq_len) + " is negative");
  }
  if (seq_len % parts != 0) {
    throw Error(ErrorCode::invalid_argument,
                std::string(fn) + ": seq_len " + std::to_string(seq_len) +
                    " is not a multiple of " + std::to_string(parts) + " (a " + to_string(layout) +
                    " split over " + std::to_string(world_size) + " ranks)");
  }
  std::vector<std::int64_t> rows;
  const std::int64_t chunk = seq_len / parts;
  auto add = [&](std::int64_t c) {
    for (std::int64_t i = 0; i < chunk; ++i) rows.push_back(c * chunk + i);
  };
  add(rank);
  if (layout == ShardLayout::zigzag) add(2 * std::int64_t{world_size} - 1 - rank);
  return rows;
}

const char* to_string(ShardLayout l) {
  switch (l) {
    case ShardLayout::contiguous: return "contiguous";
    case ShardLayout::zigzag: return "zigzag";
  }
  return "unknown";
}
const char* to_string(SeqParallelStrategy s) {
  switch (s) {
    case SeqParallelStrategy::ring: return "ring";
    case SeqParallelStrategy::all_gather: return "all_gather";
    case SeqParallelStrategy::head_parallel: return "head_parallel";
    case SeqParallelStrategy::automatic: return "automatic";
  }
  return "unknown";
}
const char* to_string(Transport t) {
  switch (t) {
    case Transport::nccl: return "nccl";
    case Transport::peer_copy: return "peer_copy";
    case Transport::host: return "host";
  }
  return "unknown";
}

#if !defined(GPUATTN_WITH_CUDA)
namespace dist {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw Error(
      ErrorCode::not_supported,
      std::string(what) + ": this build has no CUDA backend (CPU groups: RankGroup::local_cpu)");
}
}  // namespace
void create_events(RankGroup::Impl&) {
  no_cuda("RankGroup");
}
void destroy_events(RankGroup::Impl&) noexcept {}
int visible_devices() {
  return 0;
}
std::unique_ptr<Comm> make_peer_comm(const std::vector<int>&) {
  no_cuda("Transport::peer_copy");
}
std::unique_ptr<Comm> make_nccl_local_comm(const std::vector<int>&) {
  no_cuda("Transport::nccl");
}
std::unique_ptr<Comm> make_nccl_file_comm(const std::string&, int, int, int, double) {
  no_cuda("RankGroup::nccl_from_file");
}
std::unique_ptr<RankExec> make_cuda_exec(int, void*, void*, void*, void*) {
  no_cuda("sequence_parallel_attention");
}
}  // namespace dist
#endif

}  // namespace gpuattn
