#!/usr/bin/env bash
# Device call 4 at main ce38c10 (sm90_ws_128x128_s3 landed; this tree adds two profile cases): the
# eight sweep points under 1.05x in call 3 or the run before, ours, cuDNN and FA2 in turn with 11
# rounds (median); then ncu (base clocks) of the short non-causal points against cuDNN: D128 S512
# (now the 3-stage kernel), D128 S2048, D256 S512.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF > /dev/null 2>&1
timeout 200 cmake --build build-gpu -j16 --target all > $OUT/build.log 2>&1; ts "build rc=$?"
cases=()
for c in 64,32,32,512,1 64,32,16,1024,1 128,16,32,512,0 128,16,16,1024,0 128,16,8,2048,0 128,16,32,512,1 256,8,32,512,0 256,8,16,1024,1; do
  IFS=, read d h b s causal <<< "$c"
  cases+=(--case "float16,$b,$h,$h,$s,$s,$d,$causal")
done
PYTHONPATH=$PWD/build-gpu/python timeout 200 python3 bench/compare_torch.py --repeats 11 --json $OUT/turns.json "${cases[@]}" > $OUT/turns.log 2>&1; ts "turns rc=$?"
grep -E "^(case|float16|bfloat16)|^B|cudnn" $OUT/turns.log | head -14
mkdir -p $OUT/ncu
NCU_BUILD_DIR=build-gpu OUT=$OUT/ncu timeout 250 scripts/ncu-pipes.sh dense-d128-512 dense-d128-2048 dense-d256-512 > $OUT/ncu.log 2>&1; ts "ncu rc=$?"
grep -B2 -A30 "^| " $OUT/ncu.log | head -120
cd $OUT && rm -f ncu/*.ncu-rep && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf ncu
