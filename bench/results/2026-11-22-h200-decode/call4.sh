#!/usr/bin/env bash
# Device call 4: the decode plan's minimum key tiles per split (DecodePlan::kMinTilesPerSplit) at
# 4 (as committed), 8 and 16, each timed by compare_torch on the same decode cases (edited in
# core/decode_split.h; only the decode path and the rule rebuild).
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > $OUT/configure.log 2>&1
C=(--case bfloat16,8,32,8,1,4096,128,0 --case float16,1,32,8,1,32768,128,0 --case bfloat16,32,32,8,1,2048,128,0
   --case float16,4,16,1,1,8192,64,0 --case bfloat16,2,32,8,4,4096,128,1 --case float16,1,8,8,1,131072,256,0
   --case bfloat16,64,32,32,1,512,128,0 --case float16,16,64,8,2,8192,128,1 --case bfloat16,16,32,8,1,8192,64,0
   --case bfloat16,1,32,8,1,4096,128,0 --case float16,4,32,8,1,1024,128,0)
for m in 4 8 16; do
  sed -i "s/kMinTilesPerSplit = [0-9]*;/kMinTilesPerSplit = $m;/" src/core/decode_split.h
  cmake --build $B -j16 > $OUT/build$m.log 2>&1 || { tail -40 $OUT/build$m.log; exit 1; }
  PYTHONPATH=$PWD/$B/python timeout 150 python3 bench/compare_torch.py --repeats 3 --json $OUT/compare_m$m.json "${C[@]}" > $OUT/compare_m$m.log 2>&1
  echo "compare m$m rc $?"; tail -18 $OUT/compare_m$m.log | grep -v flash_error
done
sed -i "s/kMinTilesPerSplit = [0-9]*;/kMinTilesPerSplit = 4;/" src/core/decode_split.h
rm -f $OUT/build*.log $OUT/configure.log
