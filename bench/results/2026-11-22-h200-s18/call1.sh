# Call 1 (nvidia-h200-x2): build, the distributed tests (peer copy on one GPU, NCCL over two,
# two processes), memcheck/racecheck of the peer-copy suite, and the benchmark against torch SDPA.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export GPUATTN_COMMIT=$(cat .commit)
nvidia-smi -L; nvidia-smi topo -m 2>&1 | head -5
ls /usr/local/cuda/lib64 2>/dev/null | grep -i nccl
NH=$(python3 -c "import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])" 2>/dev/null); [ -n "$NH" ] && export NCCL_HOME=$NH
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON 2>&1 | grep -E 'NCCL|CUDA backend'
( time cmake --build build-gpu -j32 --target gpuattn_dist_tests gpuattn_cli ) 2>&1 | tail -4
timeout 300 build-gpu/tests/gpuattn_dist_tests 2>&1 > $OUT/dist_tests.log; echo "dist tests rc=$?"
grep -E 'FAILED|PASSED|SKIPPED|Failure|error' $OUT/dist_tests.log | head -40
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 1 build-gpu/tests/gpuattn_dist_tests --gtest_filter='*PeerCopy*' --gtest_brief=1 2>&1 | tail -5
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 1 build-gpu/tests/gpuattn_dist_tests --gtest_filter='All/SequenceParallelPeerCopy.*zigzag_ring_causal' --gtest_brief=1 2>&1 | tail -5
cd bench && timeout 400 python3 dist_attention.py --gpuattn ../build-gpu/tools/gpuattn --out $OUT/dist_bf16_causal 2>&1 | tail -30
