#!/usr/bin/env bash
# Session 54, call 5 (nvidia-h200-x2): the sequence-parallel layer on two GPUs, the first time
# since NCCL is opened with dlopen (990eab7, s29): s29 and later ran on one GPU, where the 15
# two-GPU cases (NCCL over both, peer copies across them, the two-process bootstrap file) skip.
# gpuattn_dist_tests, memcheck of the peer-copy cases (s19 fixed a double peer enable, never rerun
# under it), the Python distributed tests, and gpuattn dist on both GPUs against one.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s54/call5.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
nvidia-smi topo -m 2>&1 | head -4
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j32 --target gpuattn_dist_tests gpuattn _C >> $OUT/build.log 2>&1
ts "build rc $?"; grep -E "NCCL" $OUT/build.log | head -3
timeout 150 build-gpu/tests/gpuattn_dist_tests --gtest_brief=1 > $OUT/dist-tests.log 2>&1
ts "dist tests rc $?"; grep -E 'FAILED|PASSED|SKIPPED|tests ran' $OUT/dist-tests.log | head -20
grep -c "Skipped" $OUT/dist-tests.log
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 1 build-gpu/tests/gpuattn_dist_tests \
  --gtest_filter='SequenceParallelPeerCopyMasks.*:SequenceParallelPeerCopyDevices.*' --gtest_brief=1 > $OUT/memcheck.log 2>&1
ts "memcheck rc $?"; grep -E 'ERROR SUMMARY|PASSED|FAILED|Program hit' $OUT/memcheck.log | sort | uniq -c | head
PYTHONPATH=build-gpu/python timeout 60 python3 -m pytest -q tests/python/test_distributed.py > $OUT/pytest.log 2>&1
ts "pytest rc $?"; tail -3 $OUT/pytest.log
timeout 60 build-gpu/tools/gpuattn dist --seq 32768,131072 > $OUT/dist-bench.txt 2>&1
ts "gpuattn dist rc $?"; tail -16 $OUT/dist-bench.txt
