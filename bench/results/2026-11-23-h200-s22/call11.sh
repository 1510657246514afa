#!/usr/bin/env bash
# Device call 11: ncu of the whole-tile loop (this tree) against the one loop before it (.snap =
# 6a74494) on dense D64 (B4 H32 S4096, 3 consumers) and D128 S1024 (2 consumers): pipes and warp
# stall reasons (the no-instruction stall tests the loop-size reading of calls 6 and 7).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for t in ".:build-gpu" ".snap:build-snap"; do
  src=${t%%:*}; bld=${t#*:}
  cmake -S $src -B $bld -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF > /dev/null 2>&1
  timeout 150 cmake --build $bld -j16 --target all > $OUT/build-$bld.log 2>&1; ts "build $bld rc=$?"
done
mkdir -p $OUT/new $OUT/old
NCU_BUILD_DIR=build-gpu OUT=$OUT/new timeout 200 scripts/ncu-pipes.sh dense-d64 dense-d128-1024 > $OUT/new.log 2>&1; ts "ncu new rc=$?"
NCU_BUILD_DIR=build-snap OUT=$OUT/old timeout 200 scripts/ncu-pipes.sh dense-d64 dense-d128-1024 > $OUT/old.log 2>&1; ts "ncu old rc=$?"
for f in $OUT/new/*-pipes.md; do b=$(basename $f); echo "== $b new"; grep -iE "no.instruction|tensor|xu|issue|duration|elapsed|branch|stall" $f | head -14; echo "== $b old"; grep -iE "no.instruction|tensor|xu|issue|duration|elapsed|branch|stall" $OUT/old/$b | head -14; done
cd $OUT && rm -f new/*.ncu-rep old/*.ncu-rep && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf new old
