# Call 3 (nvidia-h200-x4): head_parallel; the tests over 4 GPUs (a ring whose next and previous
# ranks differ), memcheck of the peer-copy suite, and the benchmark on 4 GPUs against one.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export GPUATTN_COMMIT=$(cat .commit)
nvidia-smi -L; nvidia-smi topo -m 2>&1 | head -6
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON 2>&1 | grep -E 'NCCL'
( time cmake --build build-gpu -j64 --target gpuattn_dist_tests gpuattn_cli ) 2>&1 | tail -4
timeout 300 build-gpu/tests/gpuattn_dist_tests > $OUT/dist_tests.log 2>&1; echo "dist tests rc=$?"
grep -E 'FAILED|PASSED|Failure' $OUT/dist_tests.log | head -20
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 1 build-gpu/tests/gpuattn_dist_tests --gtest_filter='*PeerCopy*' --gtest_brief=1 2>&1 | tail -3
cd bench
timeout 420 python3 dist_attention.py --gpuattn ../build-gpu/tools/gpuattn --seq 32768,131072,262144 --rep 3 --out $OUT/dist4_bf16_causal 2>&1 | tail -24
