// Sequence-parallel attention on CUDA ranks: a whole group on one GPU through peer copies (every
// strategy and layout, under compute-sanitizer in the GPU check), NCCL over every visible GPU,
// and one process per GPU bootstrapped through a file. Each test skips where its GPUs are absent.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/expect_error.h"
#include "cuda/cuda_test_util.h"
#include "dist/dist_test_util.h"
#include "gpuattn/distributed.h"

extern char** environ;

namespace gpuattn::testing {
namespace {

int gpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

#define NEED_GPUS(n)                                                                  \
  do {                                                                                \
    if (gpus() < (n))                                                                 \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s), " << gpus() << " visible"; \
  } while (0)

// Uploads p's shards (rank r to devices[r] of the group), runs the call on a stream per rank,
// downloads and compares with the whole-sequence reference. `only` (>= 0): this process holds
// that one rank (a group of processes).
Comparison run_cuda(const SpProblem& p, const RankGroup& g, int only = -1, std::int64_t every = 1,
                    std::optional<ShardLayout> call_layout = std::nullopt,
                    const MaskSpec& mask = {}, bool own_counters = false) {
  SpData d = make_data(p);
  std::vector<DeviceBuffer> counters;  // own_counters: each shard's, zeroed
  counters.reserve(only >= 0 ? 1 : g.local_ranks().size());
  const std::vector<int> ranks = only >= 0 ? std::vector<int>{only} : g.local_ranks();
  // Each rank's shards on its own device (the group says which).
  const std::vector<int> devs = g.devices();
  std::vector<DeviceBuffer> bufs;
  std::vector<cudaStream_t> streams(ranks.size());
  SequenceParallelArgs args;
  args.layout = call_layout.value_or(p.layout);
  args.strategy = p.strategy;
  bufs.reserve(ranks.size() * 5);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    const int dev = devs[i];
    TEST_CUDA_CHECK(cudaSetDevice(dev));
    TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    auto up = [&](const HostTensor& t) {
      bufs.emplace_back(t.bytes());
      bufs.back().upload(t.data());
      TensorView v = t.view(Device::cuda, bufs.back().get());
      v.device_index = dev;
      return v;
    };
    AttentionArgs a;
    a.q = up(d.sq[r]);
    a.k = up(d.sk[r]);
    a.v = up(d.sv[r]);
    a.out = up(d.sout[r]);  // poisoned
    a.lse = up(d.slse[r]);
    a.causal = p.causal;
    a.mask = mask;
    a.stream = streams[i];
    if (own_counters) {
      const std::int64_t n = std::max<std::int64_t>(1, attention_counters_needed(a));
      const std::vector<std::int32_t> zeros(static_cast<std::size_t>(n), 0);
      counters.emplace_back(zeros.size() * sizeof(std::int32_t));
      counters.back().upload(zeros.data());
      a.counters =
          TensorView::contiguous(counters.back().get(), DType::i32, Device::cuda, {n}, dev);
    }
    args.shards.push_back(a);
  }
  sequence_parallel_attention(g, args);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    TEST_CUDA_CHECK(cudaSetDevice(devs[i]));
    TEST_CUDA_CHECK(cudaStreamSynchronize(streams[i]));
    TEST_CUDA_CHECK(cudaStreamDestroy(streams[i]));
    if (own_counters) {  // untouched: the shard's own call never runs
      std::vector<std::int32_t> back(counters[i].bytes() / sizeof(std::int32_t), -1);
      counters[i].download(back.data());
      for (std::int32_t c : back) EXPECT_EQ(c, 0) << "rank " << ranks[i] << "'s counters";
    }
    bufs[i * 5 + 3].download(d.sout[ranks[i]].data());
    bufs[i * 5 + 4].download(d.slse[ranks[i]].data());
  }
  TEST_CUDA_CHECK(cudaSetDevice(0));
  if (only >= 0) {  // one rank's rows: compare them alone
    const auto rows = shard_rows(p.layout, p.world, only, p.seq());
    HostTensor out_unused(p.dtype, {p.batch, p.seq(), p.hq, p.head_dim});
    AttentionArgs ra = tensor_args(d.q, d.k, d.v, out_unused);
    ra.causal = p.causal;
    ra.mask = mask;
    std::vector<std::int64_t> packed;
    for (int b = 0; b < p.batch; ++b) {
      for (std::int64_t r : rows) packed.push_back(b * p.seq() + r);
    }
    const ReferenceResult ref = reference_attention(ra, packed);
    ReferenceResult local = ref;
    for (std::size_t k = 0; k < local.rows.size(); ++k)
      local.rows[k] = static_cast<std::int64_t>(k);
    std::vector<float> lse(d.slse[only].numel());
    for (std::size_t k = 0; k < lse.size(); ++k)
      lse[k] = d.slse[only].get(static_cast<std::int64_t>(k));
    return compare(local, d.sout[only], p.hq, p.head_dim, &lse, [&](std::int64_t row, int h) {
      return (row / p.rows * p.hq + h) * p.rows + row % p.rows;
    });
  }
  return compare_global(p, d, assemble(p, d.sout, d.slse), every, mask);
}

void expect_close(const Comparison& c, DType t, const std::string& what) {
  EXPECT_EQ(c.nonfinite, 0) << what;
  EXPECT_LT(c.rel_err, t == DType::f16 ? 2e-3 : 1.2e-2) << what;
  EXPECT_LT(c.lse_rel, 1e-4) << what;
}

using Case = std::tuple<ShardLayout, SeqParallelStrategy, bool>;

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  return std::string(to_string(std::get<0>(i.param))) + "_" + to_string(std::get<1>(i.param)) +
         (std::get<2>(i.param) ? "_causal" : "_full");
}

// Shards that carry their own counters (AttentionArgs::counters, sized by
// attention_counters_needed for the shard's call): the internal calls, of other shapes (a zigzag
// half of 64 rows over 512 keys is a split-KV decode call needing 4 counters where the shard's
// 128-row call needs 1), take the library's own, and the shard's stay zero. (They were passed on:
// rank 0's first zigzag run wrote its rows, then the second was refused for too few counters.)
TEST(SequenceParallelPeerCopyCounters, ShardCountersAreNotPassedToOtherShapes) {
  NEED_GPUS(1);
  for (const auto strategy : {SeqParallelStrategy::all_gather, SeqParallelStrategy::ring,
                              SeqParallelStrategy::head_parallel}) {
    for (const auto layout : {ShardLayout::zigzag, ShardLayout::contiguous}) {
      SpProblem p;
      p.world = 4;
      p.rows = 128;
      p.hq = p.hkv = strategy == SeqParallelStrategy::head_parallel ? 4 : 1;
      p.head_dim = 128;
      p.dtype = DType::f16;
      p.causal = true;
      p.layout = layout;
      p.strategy = strategy;
      const std::string what = std::string(to_string(strategy)) + " " + to_string(layout);
      expect_close(run_cuda(p, RankGroup::local_cuda({0, 0, 0, 0}, Transport::peer_copy), -1, 1,
                            std::nullopt, {}, true),
                   p.dtype, what);
    }
  }
}

// Three ranks on GPU 0 through peer copies: the ring's three steps, its streams and events, and
// the merge, on one device.
class SequenceParallelPeerCopy : public ::testing::TestWithParam<Case> {};

TEST_P(SequenceParallelPeerCopy, ThreeRanksOnOneGpu) {
  NEED_GPUS(1);
  SpProblem p;
  std::tie(p.layout, p.strategy, p.causal) = GetParam();
  p.world = 3;
  p.batch = 2;
  p.rows = 200;  // chunks of 100 rows: not a multiple of the 128-row tiles
  p.hq = 6;
  p.hkv = 3;  // GQA, and heads that split over the 3 ranks
  p.head_dim = 128;
  p.dtype = DType::f16;
  p.seed = 7;
  expect_close(run_cuda(p, RankGroup::local_cuda({0, 0, 0}, Transport::peer_copy)), p.dtype, "");
}

INSTANTIATE_TEST_SUITE_P(
    All, SequenceParallelPeerCopy,
    ::testing::Combine(::testing::Values(ShardLayout::contiguous, ShardLayout::zigzag),
                       ::testing::Values(SeqParallelStrategy::ring, SeqParallelStrategy::all_gather,
                                         SeqParallelStrategy::head_parallel),
                       ::testing::Bool()),
    case_name);

TEST(SequenceParallelPeerCopyHeadDims, Bf16AtHeadDims64And256) {
  NEED_GPUS(1);
  for (int d : {64, 256}) {
    SpProblem p;
    p.world = 2;
    p.rows = 146;
    p.hq = 4;
    p.hkv = 4;
    p.head_dim = d;
    p.dtype = DType::bf16;
    p.causal = true;
    p.layout = ShardLayout::zigzag;
    p.seed = 11 + d;
    expect_close(run_cuda(p, RankGroup::local_cuda({0, 0}, Transport::peer_copy)), p.dtype,
                 "D" + std::to_string(d));
  }
}

// A sliding window with global tokens over global positions (head_parallel, and causal
// all_gather), three ranks on GPU 0.
TEST(SequenceParallelPeerCopyMasks, WindowAndGlobalTokens) {
  NEED_GPUS(1);
  for (auto strategy : {SeqParallelStrategy::head_parallel, SeqParallelStrategy::all_gather}) {
    SpProblem p;
    p.world = 3;
    p.rows = 2 * 130;
    p.hq = 6;
    p.hkv = 3;
    p.head_dim = 128;
    p.dtype = DType::bf16;
    p.causal = true;
    p.layout = ShardLayout::zigzag;
    p.strategy = strategy;
    MaskSpec m;
    m.window_left = 200;
    m.window_right = 0;
    m.global_tokens = 16;
    expect_close(
        run_cuda(p, RankGroup::local_cuda({0, 0, 0}, Transport::peer_copy), -1, 1, std::nullopt, m),
        p.dtype, to_string(strategy));
  }
}

// Peer copies between distinct devices (direct access, the pools' access): every visible GPU.
TEST(SequenceParallelPeerCopyDevices, EveryGpu) {
  NEED_GPUS(2);
  std::vector<int> devices;
  for (int i = 0; i < gpus(); ++i) devices.push_back(i);
  for (auto strategy : {SeqParallelStrategy::ring, SeqParallelStrategy::head_parallel}) {
    SpProblem p;
    p.world = static_cast<int>(devices.size());
    p.rows = 300;
    p.hq = 2 * p.world;
    p.hkv = p.world;
    p.dtype = DType::f16;
    p.causal = true;
    p.layout = ShardLayout::zigzag;
    p.strategy = strategy;
    expect_close(run_cuda(p, RankGroup::local_cuda(devices, Transport::peer_copy), -1, 7), p.dtype,
                 to_string(strategy));
  }
}

// NCCL over every visible GPU (at least two), one rank each, in this process.
class SequenceParallelNccl : public ::testing::TestWithParam<Case> {};

TEST_P(SequenceParallelNccl, OneRankPerGpu) {
  NEED_GPUS(2);
  std::vector<int> devices;
  for (int i = 0; i < gpus(); ++i) devices.push_back(i);
  SpProblem p;
  std::tie(p.layout, p.strategy, p.causal) = GetParam();
  p.world = static_cast<int>(devices.size());
  p.batch = 1;
  p.rows = 1000;
  p.hq = 2 * p.world;
  p.hkv = p.world;  // GQA, and heads that split over any number of GPUs (head_parallel)
  p.head_dim = 128;
  p.dtype = DType::bf16;
  p.seed = 21;
  // The reference on every 13th row and the chunk boundaries: the whole of it at 4 GPUs (S = 4000,
  // 16 heads) took 2 minutes a case on one host thread.
  expect_close(run_cuda(p, RankGroup::local_cuda(devices, Transport::nccl), -1, 13), p.dtype, "");
}

INSTANTIATE_TEST_SUITE_P(
    All, SequenceParallelNccl,
    ::testing::Combine(::testing::Values(ShardLayout::contiguous, ShardLayout::zigzag),
                       ::testing::Values(SeqParallelStrategy::ring, SeqParallelStrategy::all_gather,
                                         SeqParallelStrategy::head_parallel),
                       ::testing::Bool()),
    case_name);

TEST(SequenceParallelNcclOneRank, IsThePlainCall) {
  NEED_GPUS(1);
  SpProblem p;
  p.world = 1;
  p.rows = 300;
  p.dtype = DType::f16;
  p.causal = true;
  expect_close(run_cuda(p, RankGroup::local_cuda({0}, Transport::nccl)), p.dtype, "");
}

// A group of one bootstrapped through a file: the file path's NCCL calls (ncclGetUniqueId,
// ncclCommInitRank) on a machine with one GPU, where the two-process test below skips.
TEST(SequenceParallelNcclOneRank, ThroughABootstrapFile) {
  NEED_GPUS(1);
  const std::string path = "/tmp/gpuattn-dist-bootstrap-one-" + std::to_string(getpid());
  std::remove(path.c_str());
  const RankGroup g = RankGroup::nccl_from_file(path, 0, 1, 0, 10.0);
  std::remove(path.c_str());
  EXPECT_EQ(g.local_ranks(), std::vector<int>{0});
  SpProblem p;
  p.world = 1;
  p.rows = 300;
  p.dtype = DType::f16;
  p.causal = true;
  expect_close(run_cuda(p, g), p.dtype, "");
}

// One process per GPU: this test starts two copies of this binary, each running the child test
// below as one rank of a group bootstrapped through a file.
TEST(SequenceParallelProcesses, TwoProcessesThroughABootstrapFile) {
  NEED_GPUS(2);
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = 0;
  const std::string path = "/tmp/gpuattn-dist-bootstrap-" + std::to_string(getpid());
  std::remove(path.c_str());
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    env_s.push_back("GPUATTN_DIST_CHILD_RANK=" + std::to_string(r));
    env_s.push_back("GPUATTN_DIST_CHILD_FILE=" + path);
    std::vector<char*> envp;
    for (auto& s : env_s) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string filter = "--gtest_filter=SequenceParallelProcesses.Child";
    char* argv[] = {exe, filter.data(), nullptr};
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, exe, nullptr, nullptr, argv, envp.data()), 0);
    pids.push_back(pid);
  }
  // Each rank's process within 180 s (a hang fails the test rather than the suite), and each ran
  // the child test to its end (its marker file).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  for (std::size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    pid_t got = 0;
    while ((got = waitpid(pids[r], &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (got == 0) {
      for (pid_t pid : pids) kill(pid, SIGKILL);
      for (pid_t pid : pids) waitpid(pid, &status, 0);
      FAIL() << "rank " << r << "'s process did not finish within 180 s";
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << " failed";
    const std::string done = path + ".done" + std::to_string(r);
    EXPECT_EQ(access(done.c_str(), F_OK), 0) << "rank " << r << " did not run the child test";
    std::remove(done.c_str());
  }
  std::remove(path.c_str());
}

TEST(SequenceParallelProcesses, Child) {
  const char* rank_s = std::getenv("GPUATTN_DIST_CHILD_RANK");
  const char* file = std::getenv("GPUATTN_DIST_CHILD_FILE");
  if (rank_s == nullptr || file == nullptr) GTEST_SKIP() << "runs as a rank of the test above";
  const int rank = std::atoi(rank_s);
  const RankGroup g = RankGroup::nccl_from_file(file, rank, 2, rank, 60.0);
  EXPECT_EQ(g.local_ranks(), std::vector<int>{rank});
  for (auto strategy : {SeqParallelStrategy::ring, SeqParallelStrategy::all_gather,
                        SeqParallelStrategy::head_parallel}) {
    SpProblem p;
    p.world = 2;
    p.rows = 512;
    p.hq = 4;
    p.hkv = 4;
    p.head_dim = 64;
    p.dtype = DType::f16;
    p.causal = true;
    p.layout = ShardLayout::zigzag;
    p.strategy = strategy;
    expect_close(run_cuda(p, g, rank), p.dtype, to_string(strategy));
  }
  // A rank that passes another shape is named on every rank (the shape all-gather), not a hang.
  SpProblem p;
  p.world = 2;
  p.rows = rank == 0 ? 64 : 32;
  p.dtype = DType::f16;
  expect_invalid_argument([&] { run_cuda(p, g, rank); }, "passed rows");
  // A rank whose own validation fails (an odd zigzag split) throws its error; the other rank,
  // whose shards are fine, names it instead of waiting for it.
  SpProblem z = p;  // rank 1's shards: 33 rows, cut contiguously, called as zigzag
  z.layout = rank == 0 ? ShardLayout::zigzag : ShardLayout::contiguous;
  z.rows = rank == 0 ? 64 : 33;
  expect_invalid_argument([&] { run_cuda(z, g, rank, 1, ShardLayout::zigzag); },
                          rank == 0 ? "rank 1's shards failed its own validation" : "(odd)");
  if (!::testing::Test::HasFailure()) {
    std::ofstream(std::string(file) + ".done" + std::to_string(rank)) << "ok\n";
  }
}

TEST(SequenceParallelCudaErrors, NamesTheBadValue) {
  NEED_GPUS(1);
  expect_invalid_argument(
      [] {
        RankGroup::local_cuda({0, 0}, Transport::nccl);
      },
      "devices[0] and devices[1] are both cuda:0");
  expect_invalid_argument([] { RankGroup::local_cuda({gpus()}, Transport::peer_copy); },
                          "is not a visible CUDA device");
  // Host tensors handed to a CUDA group.
  SpProblem p;
  SpData d = make_data(p);
  SequenceParallelArgs args;
  for (int r = 0; r < 2; ++r) {
    args.shards.push_back(tensor_args(d.sq[r], d.sk[r], d.sv[r], d.sout[r], &d.slse[r]));
  }
  expect_invalid_argument(
      [&] {
        sequence_parallel_attention(RankGroup::local_cuda({0, 0}, Transport::peer_copy), args);
      },
      "shards[0]: tensors are on cpu but the group's ranks are cuda ranks");
}

}  // namespace
}  // namespace gpuattn::testing
