// Every kernel a program runs, with its device start and end times, from CUPTI's activity API,
// kernels inside CUDA graphs and under programmatic dependent launch included: the in-graph
// timeline that ncu (kernels one at a time, serialized) cannot give and that nsys would, where the
// GPU machine has none. A CUDA injection library: the driver loads it at cuInit and calls
// InitializeInjection, so it runs under any program, unchanged:
//   CUDA_INJECTION64_PATH=build/tools/libgpuattn_kernel_trace.so GPUATTN_TRACE=trace.csv
//     build/tools/gpuattn generate --random 124m ...   (one command line)
//   python3 tools/trace_summary.py trace.csv
// The CSV (one row a kernel, in start order) is written when the program exits; its columns are
// the header's. Records CUPTI dropped (its buffers full) or could not time (start 0, end before
// start) are counted and reported, never hidden.
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
#include <unordered_map>
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

// Never destroyed: CUPTI may still deliver a buffer during the CUDA teardown after the trace is
// written (then it is only freed).
struct State {
  std::mutex mutex;
  std::vector<Kernel> kernels;
  std::uint64_t dropped = 0;    // records CUPTI could not keep (its buffers full)
  std::uint64_t bad_times = 0;  // records without a valid start and end (start 0, end < start)
  std::string path;
  bool ok = false, done = false;
};
State& state() {
  static State* s = new State;
  return *s;
}

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kAlign = 8;

void report(const char* what, CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  std::fprintf(stderr, "gpuattn kernel trace: %s failed: %s\n", what, s != nullptr ? s : "?");
}

// CUPTI shares one name pointer among a kernel's records: demangled once per thread and pointer.
const std::string& demangle(const char* mangled) {
  thread_local std::unordered_map<const char*, std::string> cache;
  auto it = cache.find(mangled);
  if (it != cache.end()) return it->second;
  std::string out = "?";
  if (mangled != nullptr) {
    int status = 0;
    char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    out = status == 0 && d != nullptr ? d : mangled;
    std::free(d);
  }
  return cache.emplace(mangled, std::move(out)).first->second;
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
  std::uint64_t bad = 0;
  CUpti_Activity* rec = nullptr;
  for (;;) {
    const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (r != CUPTI_SUCCESS) {
      report("cuptiActivityGetNextRecord", r);
      break;
    }
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
      continue;
    }
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    if (k->start == 0 || k->end < k->start) {  // CUPTI could not time it (cupti_activity.h)
      ++bad;
      continue;
    }
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
  State& st = state();
  const std::lock_guard<std::mutex> lock(st.mutex);
  st.dropped += dropped;
  st.bad_times += bad;
  if (st.done) return;  // after the trace was written (CUDA's teardown): nowhere to go
  for (auto& k : got) st.kernels.push_back(std::move(k));
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
  State& st = state();
  if (!st.ok) return;
  CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS) report("cuptiActivityFlushAll", r);
  r = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) report("cuptiActivityDisable", r);
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
  const std::lock_guard<std::mutex> lock(st.mutex);
  st.done = true;
  st.dropped += dropped;
  std::sort(st.kernels.begin(), st.kernels.end(),
            [](const Kernel& a, const Kernel& b) { return a.start < b.start; });
  // Written beside and renamed: a reader never sees half a trace.
  const std::string tmp = st.path + ".partial";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "gpuattn kernel trace: cannot write %s: %s\n", tmp.c_str(),
                 std::strerror(errno));
    return;
  }
  std::fprintf(f,
               "start_ns,end_ns,device,stream,graph,graph_node,correlation,grid,block,cluster,"
               "regs,smem_static,smem_dynamic,name\n");
  for (const Kernel& k : st.kernels) {
    std::fprintf(f, "%llu,%llu,%u,%u,%u,%llu,%u,%dx%dx%d,%dx%dx%d,%dx%dx%d,%d,%d,%d,%s\n",
                 static_cast<unsigned long long>(k.start), static_cast<unsigned long long>(k.end),
                 k.device, k.stream, k.graph, static_cast<unsigned long long>(k.graph_node),
                 k.correlation, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
                 k.cluster[0], k.cluster[1], k.cluster[2], k.regs, k.smem_static, k.smem_dynamic,
                 csv_quote(k.name).c_str());
  }
  const bool flushed = std::fflush(f) == 0 && !std::ferror(f);
  const bool written = std::fclose(f) == 0 && flushed;
  if (!written || std::rename(tmp.c_str(), st.path.c_str()) != 0) {
    std::fprintf(stderr, "gpuattn kernel trace: writing %s failed\n", st.path.c_str());
    std::remove(tmp.c_str());
    return;
  }
  std::fprintf(stderr, "gpuattn kernel trace: %zu kernels to %s", st.kernels.size(),
               st.path.c_str());
  if (st.dropped > 0) {
    std::fprintf(stderr, "; %llu records DROPPED (CUPTI's buffers were full)",
                 static_cast<unsigned long long>(st.dropped));
  }
  if (st.bad_times > 0) {
    std::fprintf(stderr, "; %llu records without valid times left out",
                 static_cast<unsigned long long>(st.bad_times));
  }
  std::fprintf(stderr, "\n");
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library. Returns 1 when the
// trace is on; without GPUATTN_TRACE it says so and the program runs untraced.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  const char* path = std::getenv("GPUATTN_TRACE");
  if (path == nullptr || *path == '\0') {
    std::fprintf(
        stderr, "gpuattn kernel trace: GPUATTN_TRACE (the CSV to write) is not set; not tracing\n");
    return 0;
  }
  State& st = state();
  st.path = path;
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
  st.ok = true;
  std::atexit(write_trace);
  return 1;
}
