# Call 4 (nvidia-h200-x2; x4 was no longer lent): the distributed suite again, NCCL over two GPUs
# on sampled rows, head_parallel included.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON 2>&1 | grep -E 'NCCL'
cmake --build build-gpu -j64 --target gpuattn_dist_tests 2>&1 | tail -1
timeout 400 build-gpu/tests/gpuattn_dist_tests > $OUT/dist_tests.log 2>&1; echo "dist tests rc=$?"
grep -E 'FAILED|PASSED|SKIPPED|Failure' $OUT/dist_tests.log | head -20
grep -E 'OK \] All/SequenceParallelNccl' $OUT/dist_tests.log
