#!/usr/bin/env bash
# Device call 9: wip/fast-totals (the epilogue's row totals with one MUFU rcp and lg2 a row,
# both rows together) against main (.snap): the sweep 2 rounds and the default shapes 2 rounds,
# A and B in turn; then its GPU tests on the default path, verify and racecheck.
set -u
export GPUATTN_COMMIT=fast-totals
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1 $OUT/s2
AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s1 timeout 230 scripts/ab.sh .snap 2 > $OUT/s1/ab.log 2>&1; ts "ab sweep rc=$?"
grep -E "^\| B|^\| case" $OUT/s1/ab/summary.md | grep -E "case|D64|causal" | head -24
AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s2 timeout 90 scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| " $OUT/s2/ab/summary.md | head -12
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 60 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
left=$((575 - $(date +%s) + t0))
timeout $((left - 90)) ctest --test-dir build-gpu -E "^(sm80|sm90_192)\." -j 8 > $OUT/ctest.log 2>&1; ts "ctest rc=$?"
grep -E "tests passed|tests failed|\*\*\*Failed|Failed  " $OUT/ctest.log | head -8; grep -c " Passed " $OUT/ctest.log
timeout 75 build-gpu/tools/gpuattn verify --device cuda > $OUT/verify.log 2>&1; ts "verify rc=$?"; tail -1 $OUT/verify.log
cd $OUT && tar czf all.tgz s1 s2 *.log && rm -rf s1 s2 *.log
