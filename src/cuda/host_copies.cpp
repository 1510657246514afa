#include "cuda/host_copies.h"

#include <algorithm>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "gpuattn/types.h"

namespace gpuattn {
namespace {

// The calling thread's page-locked staging: blocks handed out front to back, each call's copies
// from where the previous (enclosing) call's end, given back in reverse order (HostCopies objects
// nest: a call's copies end before its caller's). A copy that does not fit the rest of a block
// takes the next one that fits, or a new block; blocks are kept for later calls.
struct Staging {
  struct Block {
    char* host;
    std::size_t bytes;
  };
  std::vector<Block> blocks;
  std::size_t block = 0, offset = 0;

  ~Staging() {
    for (const Block& b : blocks) (void)cudaFreeHost(b.host);
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
    // Portable: a thread may call on several devices.
    GPUATTN_CUDA_CHECK(cudaHostAlloc(&host, size, cudaHostAllocPortable));
    blocks.push_back({static_cast<char*>(host), size});
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
    GPUATTN_CUDA_CHECK(cudaStreamIsCapturing(stream_, &status));
    if (status != cudaStreamCaptureStatusNone) {
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
