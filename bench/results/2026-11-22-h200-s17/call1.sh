#!/usr/bin/env bash
# Device call 1 (seventeenth session): the paged decode's 32-bit offset bound (34908bc) had not run on
# a GPU. Paged, append, seqused_k, decode, graph and validation suites at HEAD.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
timeout 300 ctest --test-dir $B -R 'AppendKv|PagedKv|SeqUsedK|Decode|CapturedInACudaGraph|AttentionCudaValidation' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
