# Call 5 (nvidia-h200-x2): the Python binding on the GPU (three ranks on GPU 0 through peer
# copies, torch tensors), the C++ suite, and head_parallel on two GPUs against the other two.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export GPUATTN_COMMIT=$(cat .commit)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON 2>&1 | grep -E 'NCCL|Python module'
cmake --build build-gpu -j32 --target gpuattn_dist_tests gpuattn_cli _C 2>&1 | tail -1
timeout 200 build-gpu/tests/gpuattn_dist_tests --gtest_brief=1 > $OUT/dist_tests.log 2>&1; echo "dist tests rc=$?"; tail -4 $OUT/dist_tests.log
PYTHONPATH=build-gpu/python timeout 120 python3 -m pytest -q tests/python/test_distributed.py 2>&1 | tail -3
cd bench && timeout 300 python3 dist_attention.py --gpuattn ../build-gpu/tools/gpuattn --seq 32768,131072 --rep 3 --out $OUT/dist2_bf16_causal 2>&1 | tail -16
