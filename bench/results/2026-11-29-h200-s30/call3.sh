#!/usr/bin/env bash
# s30 call 3: call 2 measured merge-batched.patch 3-7 us SLOWER at 16-33 splits (B1 Sk4096 D128
# 18.0 -> 21.2 us, B4 Hkv1 Sk8192 D64 18.8 -> 21.6, B1 Sk32768 D128 52.5 -> 59.7) and unchanged at
# 4 splits. Which half: decode-diag3.patch selects by GPUATTN_DIAG_FLAGS bit 0 the old count-in
# (every thread's fence, the add, a fence), bit 1 the old merge loop, bit 2 printf stamps
# (entry, merge start, counted in, end). One build; decode_ab.py per variant, twice in turn;
# then the stamps (timeline.py summary2) of each variant at three shapes.
set -u
cd "$(dirname "$0")/../../.."
R=bench/results/2026-11-29-h200-s30
W=$OUT/work; mkdir -p $W
rm -rf /tmp/d3 && mkdir -p /tmp/d3 && tar --exclude=./build-gpu --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/d3 -xf -
patch -s -p1 -d /tmp/d3 < $R/decode-diag3.patch || { echo "diag patch failed"; exit 1; }
t0=$(date +%s)
cmake -S /tmp/d3 -B /tmp/d3/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=OFF > /dev/null && cmake --build /tmp/d3/build -j16 > $W/build.log 2>&1
echo "build rc $? in $(( $(date +%s) - t0 )) s"
P=/tmp/d3/build/python
for i in 1 2; do
  for f in 0 1 2 3; do
    GPUATTN_DIAG_FLAGS=$f PYTHONPATH=$P timeout 80 python3 $R/decode_ab.py flags$f --json $W/ab-$f-$i.json > $W/ab-$f-$i.log 2>&1
    echo "-- flags $f round $i rc $?"; grep -v -i warn $W/ab-$f-$i.log | head -5
  done
done
for t in b1d128 b1sk32k mqa64; do
  for f in 4 5 6 7; do
    GPUATTN_DIAG_FLAGS=$f PYTHONPATH=$P timeout 60 python3 $R/timeline.py run $t > $W/tl-$t-$f.log 2>&1
    echo "== $t flags $f rc $?"; python3 $R/timeline.py summary2 $W/tl-$t-$f.log
  done
done
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
