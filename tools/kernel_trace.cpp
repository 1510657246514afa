// Every kernel a program runs, with its device start and end times, from CUPTI's activity API,
// kernels inside CUDA graphs and under programmatic dependent launch included: the in-graph timeline
// that ncu (kernels one at a time, serialized) cannot give and that nsys would, where the GPU
// machine has none. A CUDA injection library: the driver loads it at cuInit and calls
// InitializeInjection, so it runs under any program, unchanged:
//   CUDA_INJECTION64_PATH=build/tools/libgpuattn_kernel_trace.so GPUATTN_TRACE=trace.csv
//     build/tools/gpuattn generate --random 124m ...   (one command line)
//   python3 tools/trace_summary.py trace.csv
// The CSV (one row a kernel, in start order) is written when the program exits; its columns are
// the header's. Records CUPTI dropped (its buffers full) are counted and reported, never hidden.
#include <cupti.h>

#include <cxxabi.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Kernel {
  std::uint64_t start, end;
  std::uint32_t device, stream, graph, correlation;
  std::uint64_t graph_node;
  int grid[3], block[3], cluster[3];
  int regs, smem_static, smem_dynamic;
  std::string name;
};

std::mutex g_mutex;
std::vector<Kernel> g_kernels;
std::uint64_t g_dropped = 0;
std::string g_path;
bool g_ok = false;

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kAlign = 8;

void report(const char* what, CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  std::fprintf(stderr, "gpuattn kernel trace: %s failed: %s\n", what, s != nullptr ? s : "?");
}

std::string demangle(const char* mangled) {
  if (mangled == nullptr) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : mangled;
  std::free(d);
  return out;
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  void* p = std::aligned_alloc(kAlign, kBufferBytes);
  *buffer = static_cast<std::uint8_t*>(p);
  *size = p != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, std::uint32_t stream_id, std::uint8_t* buffer,
                               std::size_t /*size*/, std::size_t valid) {
  std::vector<Kernel> got;
  CUpti_Activity* rec = nullptr;
  for (;;) {
    const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (r != CUPTI_SUCCESS) {
      report("cuptiActivityGetNextRecord", r);
      break;
    }
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
      continue;
    }
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    got.push_back(Kernel{k->start,
                         k->end,
                         k->deviceId,
                         k->streamId,
                         k->graphId,
                         k->correlationId,
                         k->graphNodeId,
                         {k->gridX, k->gridY, k->gridZ},
                         {k->blockX, k->blockY, k->blockZ},
                         {static_cast<int>(k->clusterX), static_cast<int>(k->clusterY),
                          static_cast<int>(k->clusterZ)},
                         k->registersPerThread,
                         k->staticSharedMemory,
                         k->dynamicSharedMemory,
                         demangle(k->name)});
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
  std::free(buffer);
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_dropped += dropped;
  for (auto& k : got) g_kernels.push_back(std::move(k));
}

// Names hold commas and angle brackets: quoted, with quotes doubled (RFC 4180).
std::string csv_quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void write_trace() {
  if (!g_ok) return;
  const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS) report("cuptiActivityFlushAll", r);
  const std::lock_guard<std::mutex> lock(g_mutex);
  std::sort(g_kernels.begin(), g_kernels.end(),
            [](const Kernel& a, const Kernel& b) { return a.start < b.start; });
  // Written beside and renamed: a reader never sees half a trace.
  const std::string tmp = g_path + ".partial";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "gpuattn kernel trace: cannot write %s: %s\n", tmp.c_str(),
                 std::strerror(errno));
    return;
  }
  std::fprintf(f,
               "start_ns,end_ns,device,stream,graph,graph_node,correlation,grid,block,cluster,"
               "regs,smem_static,smem_dynamic,name\n");
  for (const Kernel& k : g_kernels) {
    std::fprintf(f, "%llu,%llu,%u,%u,%u,%llu,%u,%dx%dx%d,%dx%dx%d,%dx%dx%d,%d,%d,%d,%s\n",
                 static_cast<unsigned long long>(k.start), static_cast<unsigned long long>(k.end),
                 k.device, k.stream, k.graph, static_cast<unsigned long long>(k.graph_node),
                 k.correlation, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
                 k.block[2], k.cluster[0], k.cluster[1], k.cluster[2], k.regs, k.smem_static,
                 k.smem_dynamic, csv_quote(k.name).c_str());
  }
  const bool written = std::fflush(f) == 0 && !std::ferror(f);
  std::fclose(f);
  if (!written || std::rename(tmp.c_str(), g_path.c_str()) != 0) {
    std::fprintf(stderr, "gpuattn kernel trace: writing %s failed\n", g_path.c_str());
    return;
  }
  std::fprintf(stderr, "gpuattn kernel trace: %zu kernels to %s", g_kernels.size(),
               g_path.c_str());
  if (g_dropped > 0) {
    std::fprintf(stderr, " (%llu records DROPPED: CUPTI's buffers were full)",
                 static_cast<unsigned long long>(g_dropped));
  }
  std::fprintf(stderr, "\n");
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library. Returns 1 when the
// trace is on; without GPUATTN_TRACE it says so and the program runs untraced.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  const char* path = std::getenv("GPUATTN_TRACE");
  if (path == nullptr || *path == '\0') {
    std::fprintf(stderr,
                 "gpuattn kernel trace: GPUATTN_TRACE (the CSV to write) is not set; not tracing\n");
    return 0;
  }
  g_path = path;
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    report("cuptiActivityRegisterCallbacks", r);
    return 0;
  }
  // CONCURRENT_KERNEL keeps kernels concurrent (KERNEL would serialize them) and records those
  // of CUDA graphs.
  r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    report("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
    return 0;
  }
  g_ok = true;
  std::atexit(write_trace);
  return 1;
}
