# Call 2 (nvidia-h200-x2): scratch from the library's pool; the tests again, the benchmark, a GQA
# run, and ncu's kernel times of one zigzag call per strategy (peer copies: NCCL's kernels would
# deadlock under ncu's serialization).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export GPUATTN_COMMIT=$(cat .commit)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON 2>&1 | grep -E 'NCCL'
( time cmake --build build-gpu -j32 --target gpuattn_dist_tests gpuattn_cli ) 2>&1 | tail -4
timeout 300 build-gpu/tests/gpuattn_dist_tests > $OUT/dist_tests.log 2>&1; echo "dist tests rc=$?"
grep -E 'FAILED|PASSED|Failure' $OUT/dist_tests.log | head -20
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 1 build-gpu/tests/gpuattn_dist_tests --gtest_filter='*PeerCopy*' --gtest_brief=1 2>&1 | tail -3
cd bench
timeout 300 python3 dist_attention.py --gpuattn ../build-gpu/tools/gpuattn --out $OUT/dist_bf16_causal 2>&1 | tail -24
timeout 200 python3 dist_attention.py --gpuattn ../build-gpu/tools/gpuattn --seq 32768,131072 --kv-heads 8 --out $OUT/dist_bf16_causal_gqa 2>&1 | tail -14
cd ..
for s in ring all_gather; do
timeout 120 ncu --metrics gpu__time_duration.sum --clock-control none --print-summary per-kernel build-gpu/tools/gpuattn dist --transport peer_copy --seq 65536 --rep 1 --strategies $s --layouts zigzag > $OUT/ncu_$s.log 2>&1
python3 bench/ncu_kernel_summary.py $OUT/ncu_$s.log | head -12
done
