# Call 1 (nvidia-h200-x2): the eighteenth session's untested cases: peer copies across both GPUs
# (EveryGpu), masks through peer copies, every strategy through NCCL, the Python distributed tests.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON 2>&1 | grep -E 'NCCL'
cmake --build build-gpu -j32 --target gpuattn_dist_tests _C 2>&1 | tail -1
timeout 240 build-gpu/tests/gpuattn_dist_tests --gtest_brief=1 > $OUT/dist_tests.log 2>&1; echo "dist tests rc=$?"; grep -E 'FAILED|PASSED|Failure|Skipped|error|tests ran' $OUT/dist_tests.log | head -20
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 build-gpu/tests/gpuattn_dist_tests --gtest_filter='SequenceParallelPeerCopyMasks.*:SequenceParallelPeerCopyDevices.*' --gtest_brief=1 2>&1 | tail -3
PYTHONPATH=build-gpu/python timeout 60 python3 -m pytest -q tests/python/test_distributed.py 2>&1 | tail -2
