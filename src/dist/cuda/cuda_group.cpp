// The CUDA side of a RankGroup: per-rank events, the compute side of a rank (CudaExec) and the
// peer-copy transport.
#include <cuda_runtime.h>

#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/fwd_sm80.h"
#include "dist/comm.h"
#include "dist/cuda/dist_kernels.h"
#include "dist/posted_ops.h"
#include "dist/rank_exec.h"

namespace gpuattn::dist {
namespace {

// Peer access is a property of the process and enabling it twice is an API error (which
// compute-sanitizer reports even when it is cleared), so each (from, to) pair is enabled once per
// process. A pair the user enabled before is still accepted.
void enable_peer_access_once(int from, int to) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> enabled;
  std::lock_guard<std::mutex> lock(mutex);
  if (!enabled.insert({from, to}).second) return;
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
  } else {
    if (e != cudaSuccess) enabled.erase({from, to});
    GPUATTN_CUDA_CHECK(e);
  }
}

// Makes `device` current for the scope.
class OnDevice {
 public:
  explicit OnDevice(int device) {
    GPUATTN_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) GPUATTN_CUDA_CHECK(cudaSetDevice(device));
  }
  ~OnDevice() { cudaSetDevice(previous_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int previous_ = 0;
};

class CudaExec final : public RankExec {
 public:
  CudaExec(int device, void* stream, void* comm_stream, void* compute_event, void* comm_event)
      : device_(device),
        stream_(static_cast<cudaStream_t>(stream)),
        comm_(static_cast<cudaStream_t>(comm_stream)),
        ev_compute_(static_cast<cudaEvent_t>(compute_event)),
        ev_comm_(static_cast<cudaEvent_t>(comm_event)) {}

  ~CudaExec() override {
    // The scratch may still be in a transfer: free it after them, on the compute stream.
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device_);
    cudaEventRecord(ev_comm_, comm_);
    cudaStreamWaitEvent(stream_, ev_comm_, 0);
    for (void* p : scratch_) cudaFreeAsync(p, stream_);
    cudaSetDevice(previous);
  }

  void* alloc(std::size_t bytes) override {
    OnDevice on(device_);
    void* p = nullptr;
    // The library's pool keeps what it reserved: a call's scratch (hundreds of MB at long
    // sequences) is mapped once, not on every call as from the default pool.
    GPUATTN_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, sm80::launch_pool(), stream_));
    scratch_.push_back(p);
    return p;
  }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    OnDevice on(device_);
    GPUATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    GPUATTN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    OnDevice on(device_);
    GPUATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    GPUATTN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void copy(const TensorView& src, const TensorView& dst) override {
    OnDevice on(device_);
    launch_copy_view(src, dst, stream_);
  }
  void attention(AttentionArgs args) override {
    args.stream = stream_;
    attention_forward(args);
  }
  void merge(const Accumulator& acc, int row0, const TensorView& part, const float* part_lse,
             bool first) override {
    OnDevice on(device_);
    launch_merge(acc, row0, part, part_lse, first, stream_);
  }
  void finish(const Accumulator& acc, const TensorView& out, const TensorView& lse) override {
    OnDevice on(device_);
    launch_finish(acc, out, lse, stream_);
  }
  void transfers_after_compute() override {
    OnDevice on(device_);
    GPUATTN_CUDA_CHECK(cudaEventRecord(ev_compute_, stream_));
    GPUATTN_CUDA_CHECK(cudaStreamWaitEvent(comm_, ev_compute_, 0));
  }
  void compute_after_transfers() override {
    OnDevice on(device_);
    GPUATTN_CUDA_CHECK(cudaEventRecord(ev_comm_, comm_));
    GPUATTN_CUDA_CHECK(cudaStreamWaitEvent(stream_, ev_comm_, 0));
  }

 private:
  int device_;
  cudaStream_t stream_, comm_;
  cudaEvent_t ev_compute_, ev_comm_;
  std::vector<void*> scratch_;
};

// Peer copies: the receiver's transfer stream pulls from the sender's buffer once the sender's
// transfer stream has reached the group; the sender's stream then waits for every pull of its
// buffers, so that what it does next cannot overwrite them early.
class PeerComm final : public PostingComm {
 public:
  explicit PeerComm(const std::vector<int>& devices) : devices_(devices) {
    const int n = static_cast<int>(devices.size());
    streams_.assign(n, nullptr);
    ready_.assign(n, nullptr);
    done_.assign(n, nullptr);
    try {
      for (int i = 0; i < n; ++i) setup(i);
    } catch (...) {
      release();
      throw;
    }
  }
  ~PeerComm() override { release(); }

  void group_end() override {
    const int n = static_cast<int>(devices_.size());
    for (int i = 0; i < n; ++i) {
      OnDevice on(devices_[i]);
      GPUATTN_CUDA_CHECK(cudaEventRecord(ready_[i], streams_[i]));
    }
    std::vector<std::vector<int>> pulled_from(n);  // receiver -> senders
    // Even when the pairing fails half-way, the copies already queued are waited for below.
    std::exception_ptr failed;
    try {
      ops_.pair(n, "peer transport",
                [&](int dst, void* to, int src, const void* from, std::size_t bytes) {
                  OnDevice on(devices_[dst]);
                  if (src != dst) {
                    GPUATTN_CUDA_CHECK(cudaStreamWaitEvent(streams_[dst], ready_[src], 0));
                  }
                  GPUATTN_CUDA_CHECK(cudaMemcpyPeerAsync(to, devices_[dst], from, devices_[src],
                                                         bytes, streams_[dst]));
                  pulled_from[dst].push_back(src);
                });
    } catch (...) {
      failed = std::current_exception();
    }
    for (int dst = 0; dst < n; ++dst) {
      OnDevice on(devices_[dst]);
      GPUATTN_CUDA_CHECK(cudaEventRecord(done_[dst], streams_[dst]));
    }
    for (int dst = 0; dst < n; ++dst) {
      for (int src : pulled_from[dst]) {
        if (src == dst) continue;
        OnDevice on(devices_[src]);
        GPUATTN_CUDA_CHECK(cudaStreamWaitEvent(streams_[src], done_[dst], 0));
      }
    }
    ops_.clear();
    if (failed) std::rethrow_exception(failed);
  }
  void* stream(int local) override { return streams_[local]; }

 private:
  // Local rank i's stream and events, and its direct access to the other devices (copies, and
  // the library's pools the scratch comes from).
  void setup(int i) {
    const int n = static_cast<int>(devices_.size());
    OnDevice on(devices_[i]);
    GPUATTN_CUDA_CHECK(cudaStreamCreateWithFlags(&streams_[i], cudaStreamNonBlocking));
    GPUATTN_CUDA_CHECK(cudaEventCreateWithFlags(&ready_[i], cudaEventDisableTiming));
    GPUATTN_CUDA_CHECK(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming));
    for (int j = 0; j < n; ++j) {
      if (devices_[j] == devices_[i]) continue;
      int can = 0;
      GPUATTN_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, devices_[i], devices_[j]));
      if (!can) continue;  // cudaMemcpyPeerAsync stages through the host
      enable_peer_access_once(devices_[i], devices_[j]);
      cudaMemPool_t pool;
      {
        OnDevice owner(devices_[j]);
        pool = sm80::launch_pool();
      }
      cudaMemAccessDesc access{};
      access.location.type = cudaMemLocationTypeDevice;
      access.location.id = devices_[i];
      access.flags = cudaMemAccessFlagsProtReadWrite;
      GPUATTN_CUDA_CHECK(cudaMemPoolSetAccess(pool, &access, 1));
    }
  }
  void release() noexcept {
    int previous = 0;
    cudaGetDevice(&previous);
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      cudaSetDevice(devices_[i]);
      if (streams_[i] != nullptr) {
        cudaStreamSynchronize(streams_[i]);
        cudaStreamDestroy(streams_[i]);
      }
      if (ready_[i] != nullptr) cudaEventDestroy(ready_[i]);
      if (done_[i] != nullptr) cudaEventDestroy(done_[i]);
    }
    cudaSetDevice(previous);
  }

  std::vector<int> devices_;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> ready_, done_;
};

}  // namespace

void create_events(RankGroup::Impl& g) {
  for (int d : g.devices) {
    OnDevice on(d);
    for (int k = 0; k < 2; ++k) {
      cudaEvent_t e;
      GPUATTN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      g.events.push_back(e);
    }
  }
}

void destroy_events(RankGroup::Impl& g) noexcept {
  for (void* e : g.events) cudaEventDestroy(static_cast<cudaEvent_t>(e));
  g.events.clear();
}

int visible_devices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::unique_ptr<RankExec> make_cuda_exec(int device, void* stream, void* comm_stream,
                                         void* compute_event, void* comm_event) {
  return std::make_unique<CudaExec>(device, stream, comm_stream, compute_event, comm_event);
}

std::unique_ptr<Comm> make_peer_comm(const std::vector<int>& devices) {
  return std::make_unique<PeerComm>(devices);
}

}  // namespace gpuattn::dist
