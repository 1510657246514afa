#!/usr/bin/env bash
# Device call 2: dead warpgroups (this tree: a consumer whose 64 rows all lie past the sequence
# end takes its part of the item's barriers without GEMMs or exponentials; .x: the same plus the
# whole-tile loop at D256). GPU tests of this tree on the cases with such warpgroups (awkward
# lengths, short items, varlen, causal, on the default dispatch and D64 on the 3-consumer kernel),
# then the D64 sweep (3 rounds) and the D256 sweep (2 rounds) against main (.snap = 8301b38).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 220 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
F='*AwkwardLengths*:*ShortItems*:*ManyRowBlocks*:*SeqlenMismatch*:*arlen*:*causal*:*BlockSparse*:*LSE*:*Lse*'
timeout 120 build-gpu/tests/gpuattn_cuda_tests --gtest_filter="$F" > $OUT/tests.log 2>&1; ts "tests rc=$?"
grep -E "PASSED|FAILED|tests ran" $OUT/tests.log | head -12
GPUATTN_KERNEL=sm90_ws_192x128 timeout 60 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='*D64*' > $OUT/tests192.log 2>&1; ts "tests 192 rc=$?"
grep -E "PASSED|FAILED|tests ran" $OUT/tests192.log | head -12
mkdir -p $OUT/s1 $OUT/s2
AB_B_DIRS=". .x" AB_SHAPES=sweep AB_ONLY="D64" AB_SPARSE=0 OUT=$OUT/s1 timeout 260 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab D64 rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -34
left=$((585 - $(date +%s) + t0))
[ $left -gt 60 ] && AB_B_DIRS=". .x" AB_SHAPES=sweep AB_ONLY="D256" AB_SPARSE=0 OUT=$OUT/s2 timeout $left scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab D256 rc=$?"
grep -E "^\| |^## " $OUT/s2/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -34
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1 s2
