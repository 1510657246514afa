#include "cuda/host_copies.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/relaxed_capture.h"
#include "gpuattn/types.h"

namespace gpuattn {
namespace {

// Allocation and release of the staging go through RelaxedCapture: cudaHostAlloc and
// cudaFreeHost are calls a global-mode capture on another thread (torch.cuda.graph's default)
// would otherwise refuse, and be invalidated by.

// The calling thread's page-locked staging: blocks handed out front to back, each call's copies
// from where the previous (enclosing) call's end, given back in reverse order (HostCopies objects
// nest: a call's copies end before its caller's). A copy that does not fit the rest of a block
// takes the next one that fits, or a new block; blocks are kept for later calls. Where page-locked
// memory cannot be had (cudaHostAlloc fails: the limit reached, some virtualized hosts), a block
// of pageable memory serves instead: its copies are each a round trip, as they were before.
struct Staging {
  struct Block {
    char* host;
    std::size_t bytes;
    bool pinned;
  };
  std::vector<Block> blocks;
  std::size_t block = 0, offset = 0;

  ~Staging() {
    if (blocks.empty()) return;  // a thread that never copied: no CUDA call at its exit
    const RelaxedCapture relaxed;
    for (const Block& b : blocks) {
      if (b.pinned) {
        (void)cudaFreeHost(b.host);
      } else {
        std::free(b.host);
      }
    }
    (void)cudaGetLastError();  // a runtime already shut down at process exit: nothing to report
  }

  void* take(std::size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    for (; block < blocks.size(); ++block, offset = 0) {
      if (offset + bytes <= blocks[block].bytes) {
        void* at = blocks[block].host + offset;
        offset += bytes;
        return at;
      }
    }
    constexpr std::size_t kFirstBlock = std::size_t{64} << 10;  // 16K int32: most calls' arrays
    std::size_t size = blocks.empty() ? kFirstBlock : 2 * blocks.back().bytes;
    size = std::max(size, bytes);
    void* host = nullptr;
    bool pinned = false;
    {
      const RelaxedCapture relaxed;
      // Portable: a thread may call on several devices.
      pinned = cudaHostAlloc(&host, size, cudaHostAllocPortable) == cudaSuccess;
    }
    if (!pinned) {
      (void)cudaGetLastError();
      host = std::malloc(size);
      if (host == nullptr) throw std::bad_alloc();
    }
    blocks.push_back({static_cast<char*>(host), size, pinned});
    block = blocks.size() - 1;
    offset = bytes;
    return host;
  }
};

Staging& staging() {
  thread_local Staging s;
  return s;
}

}  // namespace

HostCopies::HostCopies(cudaStream_t stream, const char* fn)
    : stream_(stream), fn_(fn), block_(staging().block), offset_(staging().offset) {}

HostCopies::~HostCopies() {
  if (queued_ && !waited_) {
    (void)cudaStreamSynchronize(stream_);
    (void)cudaGetLastError();  // the error that ended the call is the one reported
  }
  Staging& s = staging();
  s.block = block_;
  s.offset = offset_;
}

const void* HostCopies::queue(const void* device, std::size_t width_bytes, std::size_t pitch_bytes,
                              std::size_t rows, const char* what) {
  if (!queued_) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaError_t e = cudaStreamIsCapturing(stream_, &status);
    // The legacy default stream while another stream of the device captures: implicitly part of
    // that capture, which a synchronization would break as well.
    const bool implicit = e == cudaErrorStreamCaptureImplicit;
    if (implicit) (void)cudaGetLastError();
    if (!implicit) GPUATTN_CUDA_CHECK(e);
    if (implicit || status != cudaStreamCaptureStatusNone) {
      throw Error(ErrorCode::invalid_argument,
                  std::string("gpuattn::") + fn_ + ": check_indices reads " + what +
                      " on a host copy after a stream synchronization, which a stream capturing "
                      "a CUDA graph cannot make: capture the call with check_indices = false "
                      "(its index values are then trusted)");
    }
  }
  void* host = staging().take(width_bytes * rows);
  if (rows == 1) {
    GPUATTN_CUDA_CHECK(
        cudaMemcpyAsync(host, device, width_bytes, cudaMemcpyDeviceToHost, stream_));
  } else {
    GPUATTN_CUDA_CHECK(cudaMemcpy2DAsync(host, width_bytes, device, pitch_bytes, width_bytes, rows,
                                         cudaMemcpyDeviceToHost, stream_));
  }
  queued_ = true;
  waited_ = false;
  return host;
}

void HostCopies::wait() {
  if (queued_) GPUATTN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  waited_ = true;
}

}  // namespace gpuattn
