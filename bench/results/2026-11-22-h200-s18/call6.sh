# Call 6 (nvidia-h200-x2): after the review's fixes, the distributed suite (peer copies across both
# GPUs, the cross-process check of a rank that fails its own validation), memcheck of the
# peer-copy cases, and the Python tests.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON 2>&1 | grep -E 'NCCL'
cmake --build build-gpu -j32 --target gpuattn_dist_tests _C 2>&1 | tail -1
timeout 200 build-gpu/tests/gpuattn_dist_tests --gtest_brief=1 > $OUT/dist_tests.log 2>&1; echo "dist tests rc=$?"; grep -E 'FAILED|PASSED|Failure|Skipped|error' $OUT/dist_tests.log | head -12
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 build-gpu/tests/gpuattn_dist_tests --gtest_filter='*PeerCopy*' --gtest_brief=1 2>&1 | tail -3
PYTHONPATH=build-gpu/python timeout 60 python3 -m pytest -q tests/python/test_distributed.py 2>&1 | tail -2
