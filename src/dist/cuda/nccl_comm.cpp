// The NCCL transport: one communicator per local rank, every group of operations inside
// ncclGroupStart / ncclGroupEnd, each rank's operations on its own transfer stream.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "dist/comm.h"

#if defined(GPUATTN_WITH_NCCL)
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#endif

namespace gpuattn::dist {

#if defined(GPUATTN_WITH_NCCL)
namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    throw Error(ErrorCode::cuda_error, std::string("NCCL: ") + what +
                                           " failed: " + ncclGetErrorString(r) + " (" +
                                           ncclGetLastError(nullptr) + ")");
  }
}

class NcclComm final : public Comm {
 public:
  // comms[i] belongs to devices[i]; the comm takes them over.
  NcclComm(std::vector<ncclComm_t> comms, std::vector<int> devices)
      : comms_(std::move(comms)), devices_(std::move(devices)) {
    streams_.assign(comms_.size(), nullptr);
    try {
      for (std::size_t i = 0; i < comms_.size(); ++i) {
        GPUATTN_CUDA_CHECK(cudaSetDevice(devices_[i]));
        GPUATTN_CUDA_CHECK(cudaStreamCreateWithFlags(&streams_[i], cudaStreamNonBlocking));
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ~NcclComm() override { release(); }

  void group_start() override { nccl_check(ncclGroupStart(), "ncclGroupStart"); }
  void send(int local, const void* buf, std::size_t bytes, int peer) override {
    nccl_check(ncclSend(buf, bytes, ncclUint8, peer, comms_[local], streams_[local]), "ncclSend");
  }
  void recv(int local, void* buf, std::size_t bytes, int peer) override {
    nccl_check(ncclRecv(buf, bytes, ncclUint8, peer, comms_[local], streams_[local]), "ncclRecv");
  }
  void all_gather(int local, const void* send, void* recv, std::size_t bytes) override {
    nccl_check(ncclAllGather(send, recv, bytes, ncclUint8, comms_[local], streams_[local]),
               "ncclAllGather");
  }
  void group_end() override { nccl_check(ncclGroupEnd(), "ncclGroupEnd"); }
  void* stream(int local) override { return streams_[local]; }

 private:
  void release() noexcept {
    for (std::size_t i = 0; i < comms_.size(); ++i) {
      cudaSetDevice(devices_[i]);
      if (streams_[i] != nullptr) cudaStreamSynchronize(streams_[i]);
      ncclCommDestroy(comms_[i]);
      if (streams_[i] != nullptr) cudaStreamDestroy(streams_[i]);
    }
  }

  std::vector<ncclComm_t> comms_;
  std::vector<int> devices_;
  std::vector<cudaStream_t> streams_;
};

// Restores the current device on every exit.
class KeepDevice {
 public:
  KeepDevice() { GPUATTN_CUDA_CHECK(cudaGetDevice(&device_)); }
  ~KeepDevice() { cudaSetDevice(device_); }
  KeepDevice(const KeepDevice&) = delete;
  KeepDevice& operator=(const KeepDevice&) = delete;

 private:
  int device_ = 0;
};

}  // namespace

std::unique_ptr<Comm> make_nccl_local_comm(const std::vector<int>& devices) {
  KeepDevice keep;
  std::vector<ncclComm_t> comms(devices.size());
  nccl_check(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()),
             "ncclCommInitAll");
  return std::make_unique<NcclComm>(std::move(comms), devices);
}

std::unique_ptr<Comm> make_nccl_file_comm(const std::string& path, int rank, int world_size,
                                          int device, double timeout_s) {
  const std::string who = "RankGroup::nccl_from_file (rank " + std::to_string(rank) + ")";
  ncclUniqueId id;
  if (rank == 0) {
    nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(id.internal, sizeof(id.internal));
      if (!f) {
        throw Error(ErrorCode::invalid_argument, who + ": cannot write '" + tmp + "'");
      }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      throw Error(ErrorCode::invalid_argument,
                  who + ": cannot rename '" + tmp + "' to bootstrap_path '" + path + "'");
    }
  } else {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      std::ifstream f(path, std::ios::binary);
      if (f) {
        f.read(id.internal, sizeof(id.internal));
        if (f.gcount() != static_cast<std::streamsize>(sizeof(id.internal))) {
          throw Error(ErrorCode::invalid_argument, who + ": bootstrap_path '" + path + "' holds " +
                                                       std::to_string(f.gcount()) +
                                                       " bytes, not an NCCL unique id (" +
                                                       std::to_string(sizeof(id.internal)) + ")");
        }
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw Error(ErrorCode::invalid_argument,
                    who + ": bootstrap_path '" + path + "' did not appear within " +
                        std::to_string(timeout_s) + " s (rank 0 writes it)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  KeepDevice keep;
  GPUATTN_CUDA_CHECK(cudaSetDevice(device));
  ncclComm_t comm;
  nccl_check(ncclCommInitRank(&comm, world_size, id, rank), "ncclCommInitRank");
  return std::make_unique<NcclComm>(std::vector<ncclComm_t>{comm}, std::vector<int>{device});
}

#else  // no NCCL in this build

std::unique_ptr<Comm> make_nccl_local_comm(const std::vector<int>&) {
  throw Error(ErrorCode::not_supported,
              "Transport::nccl: this build has no NCCL (Transport::peer_copy works without it)");
}
std::unique_ptr<Comm> make_nccl_file_comm(const std::string&, int, int, int, double) {
  throw Error(ErrorCode::not_supported, "RankGroup::nccl_from_file: this build has no NCCL");
}

#endif

}  // namespace gpuattn::dist
