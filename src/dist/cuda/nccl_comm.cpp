// The NCCL transport: one communicator per local rank, every group of operations inside
// ncclGroupStart / ncclGroupEnd, each rank's operations on its own transfer stream.
#include <cuda_runtime.h>

#include <string>
#include <type_traits>
#include <vector>

#include "cuda/cuda_check.h"
#include "dist/comm.h"

#if defined(GPUATTN_WITH_NCCL)
#include <dlfcn.h>
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

// NCCL is opened at the first communicator, not linked. Linked, it was loaded with the library: a
// Python process that imported gpu_attention before torch held the toolkit's libnccl.so.2 first,
// and torch's libtorch_cuda.so, built against a newer NCCL, then bound to that one by soname and
// failed to import (torch 2.15 from PyPI against CUDA 13.0's NCCL 2.28: undefined symbol
// ncclCommResume). Opened by soname first, an NCCL the process already holds (torch's) is the one
// used, as the dynamic linker would have chosen it; then the one the build found.
struct NcclApi {
  decltype(&ncclGetErrorString) get_error_string = nullptr;
  decltype(&ncclGetLastError) get_last_error = nullptr;  // NCCL >= 2.13; null before
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
};

NcclApi load_nccl() {
  const char* names[] = {"libnccl.so.2", GPUATTN_NCCL_LIBRARY_PATH};
  void* lib = nullptr;
  std::string errors;
  for (const char* name : names) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* why = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (why != nullptr ? why : name);
  }
  if (lib == nullptr) {
    throw Error(ErrorCode::not_supported, "Transport::nccl: NCCL could not be loaded (" + errors +
                                              "); Transport::peer_copy works without it");
  }
  NcclApi api;
  const auto find = [lib](auto& fn, const char* name, bool required) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (fn == nullptr && required) {
      throw Error(ErrorCode::not_supported,
                  std::string("Transport::nccl: the loaded NCCL has no ") + name +
                      " (NCCL 2.7 or newer is needed)");
    }
  };
  find(api.get_error_string, "ncclGetErrorString", true);
  find(api.get_last_error, "ncclGetLastError", false);
  find(api.group_start, "ncclGroupStart", true);
  find(api.group_end, "ncclGroupEnd", true);
  find(api.send, "ncclSend", true);
  find(api.recv, "ncclRecv", true);
  find(api.all_gather, "ncclAllGather", true);
  find(api.comm_init_all, "ncclCommInitAll", true);
  find(api.comm_init_rank, "ncclCommInitRank", true);
  find(api.get_unique_id, "ncclGetUniqueId", true);
  find(api.comm_destroy, "ncclCommDestroy", true);
  return api;  // the library stays open for the process
}

// Loaded once, at the first use; a failed load throws and the next use tries again.
const NcclApi& nccl() {
  static const NcclApi api = load_nccl();
  return api;
}

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    const NcclApi& api = nccl();
    const char* last = api.get_last_error != nullptr ? api.get_last_error(nullptr) : "";
    throw Error(ErrorCode::cuda_error, std::string("NCCL: ") + what +
                                           " failed: " + api.get_error_string(r) + " (" +
                                           last + ")");
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

  void group_start() override { nccl_check(nccl().group_start(), "ncclGroupStart"); }
  void send(int local, const void* buf, std::size_t bytes, int peer) override {
    nccl_check(nccl().send(buf, bytes, ncclUint8, peer, comms_[local], streams_[local]),
               "ncclSend");
  }
  void recv(int local, void* buf, std::size_t bytes, int peer) override {
    nccl_check(nccl().recv(buf, bytes, ncclUint8, peer, comms_[local], streams_[local]),
               "ncclRecv");
  }
  void all_gather(int local, const void* send, void* recv, std::size_t bytes) override {
    nccl_check(nccl().all_gather(send, recv, bytes, ncclUint8, comms_[local], streams_[local]),
               "ncclAllGather");
  }
  void group_end() override { nccl_check(nccl().group_end(), "ncclGroupEnd"); }
  void* stream(int local) override { return streams_[local]; }

 private:
  void release() noexcept {
    for (std::size_t i = 0; i < comms_.size(); ++i) {
      cudaSetDevice(devices_[i]);
      if (streams_[i] != nullptr) cudaStreamSynchronize(streams_[i]);
      nccl().comm_destroy(comms_[i]);
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
  nccl_check(
      nccl().comm_init_all(comms.data(), static_cast<int>(devices.size()), devices.data()),
      "ncclCommInitAll");
  return std::make_unique<NcclComm>(std::move(comms), devices);
}

std::unique_ptr<Comm> make_nccl_file_comm(const std::string& path, int rank, int world_size,
                                          int device, double timeout_s) {
  const std::string who = "RankGroup::nccl_from_file (rank " + std::to_string(rank) + ")";
  ncclUniqueId id;
  if (rank == 0) {
    nccl_check(nccl().get_unique_id(&id), "ncclGetUniqueId");
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
  nccl_check(nccl().comm_init_rank(&comm, world_size, id, rank), "ncclCommInitRank");
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
