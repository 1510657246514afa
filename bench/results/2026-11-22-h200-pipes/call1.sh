#!/usr/bin/env bash
# Device call 1 (thirteenth session): build main, run the GPU tests of head dim 256 (the two cases
# added after the twelfth session's last device call), then ncu's pipe activity and stall reasons
# of ours against cuDNN on the one-wave D64 shape and the sweep's short causal D64 shapes.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/configure.log 2>&1
timeout 330 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
timeout 120 ctest --test-dir build-gpu -R "HeadDim256" -j 8 --output-on-failure > $OUT/ctest-d256.log 2>&1
ts "ctest HeadDim256 rc=$?"; tail -4 $OUT/ctest-d256.log
grep -c "Passed" $OUT/ctest-d256.log
OUT=$OUT/ncu timeout $((590 - $(date +%s) + t0)) scripts/ncu-pipes.sh short-d64 causal-d64-512 causal-d64-1024 > $OUT/ncu-pipes.log 2>&1
ts "ncu rc=$?"; grep -E "^==|^\|" $OUT/ncu-pipes.log
cd $OUT && tar czf ncu.tgz ncu/*.md ncu/*-raw.csv 2>/dev/null; rm -rf ncu
