// The transfers between the ranks of a RankGroup: point-to-point sends and receives and an
// all-gather, posted in groups (NCCL's group semantics: the operations between group_start and
// group_end proceed together, so a ring exchange cannot deadlock).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "gpuattn/distributed.h"

namespace gpuattn::dist {

class Comm {
 public:
  virtual ~Comm() = default;
  // Each operation names the local rank (index into the group's local ranks) that posts it; peers
  // are global ranks. Buffers live on that rank's device (host memory for the host transport).
  virtual void group_start() = 0;
  virtual void send(int local, const void* buf, std::size_t bytes, int peer) = 0;
  virtual void recv(int local, void* buf, std::size_t bytes, int peer) = 0;
  // recv holds world_size * bytes: rank r's `send` lands at r * bytes.
  virtual void all_gather(int local, const void* send, void* recv, std::size_t bytes) = 0;
  virtual void group_end() = 0;
  // The CUDA stream (cudaStream_t) local rank `local`'s transfers run on; nullptr on the host.
  virtual void* stream(int local) = 0;
};

// Host memory, every rank in this process: the operations run, in order, at group_end.
std::unique_ptr<Comm> make_host_comm(int world_size);
// CUDA peer copies between the devices of one process (devices may repeat).
std::unique_ptr<Comm> make_peer_comm(const std::vector<int>& devices);
// NCCL: every rank in this process (ncclCommInitAll over `devices`) ...
std::unique_ptr<Comm> make_nccl_local_comm(const std::vector<int>& devices);
// ... or one rank of a group of processes, bootstrapped through a file.
std::unique_ptr<Comm> make_nccl_file_comm(const std::string& path, int rank, int world_size,
                                          int device, double timeout_s);

}  // namespace gpuattn::dist

namespace gpuattn {

struct RankGroup::Impl {
  int world_size = 0;
  std::vector<int> local_ranks;  // global rank of each local rank
  std::vector<int> devices;      // CUDA ordinal of each local rank (CUDA groups)
  Transport transport = Transport::host;
  Device device = Device::cpu;
  int threads_per_rank = 0;
  std::unique_ptr<dist::Comm> comm;
  std::vector<void*> events;  // CUDA groups: two cudaEvent_t per local rank (compute, comm)
  ~Impl();
};

}  // namespace gpuattn
