#!/usr/bin/env bash
# s30 call 2: call 1's timeline put 2.1-2.5 us at the end of every split CTA (rows left, a
# fence by every thread, the count) and 1.9 us (16 splits) to 5.7 us (32 splits) in the merge of
# the CTA that counts last (its L2 loads a batch of 8 at a time, one element after another).
#  - merge-batched.patch (in the tree): one acquire-release add by one thread; the merge's loads
#    in batches (lse2 in one, O 16 float4s a thread);
#  - decode-diag.patch (/tmp/diag2, on top): GPUATTN_DIAG_NO_MEMSET (persistent self-resetting
#    counts, no memset node: what the memset costs), GPUATTN_DIAG_STAGES=3/4 at D128 (the 4-tile
#    splits of small calls wait on one tile in flight at a time).
# Decode suites, racecheck and memcheck of the new tree; decode_ab.py old / new / variants in turn.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
R=bench/results/2026-11-29-h200-s30
W=$OUT/work; mkdir -p $W
for t in old diag2; do
  rm -rf /tmp/$t && mkdir -p /tmp/$t && tar --exclude=./build-gpu --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/$t -xf -
done
patch -R -s -p1 -d /tmp/old < $R/merge-batched.patch || { echo "patch -R failed"; exit 1; }
patch -s -p1 -d /tmp/diag2 < $R/decode-diag.patch || { echo "diag patch failed"; exit 1; }
grep -c atom_add_acq_rel src/cuda/fwd_decode.cuh /tmp/old/src/cuda/fwd_decode.cuh /tmp/diag2/src/cuda/fwd_decode.cuh
CM="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON"
NT="-DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=OFF"
t0=$(date +%s)
(cmake -S . -B build-gpu $CM > /dev/null && cmake --build build-gpu -j8 > $W/build.log 2>&1; echo "new build rc $?") &
(cmake -S /tmp/old -B /tmp/old/build $CM $NT > /dev/null && cmake --build /tmp/old/build -j4 > $W/build-old.log 2>&1; echo "old build rc $?") &
(cmake -S /tmp/diag2 -B /tmp/diag2/build $CM $NT > /dev/null && cmake --build /tmp/diag2/build -j4 > $W/build-diag.log 2>&1; echo "diag build rc $?") &
wait; echo "builds $(( $(date +%s) - t0 )) s"
F='Decode/*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:Varlen/*:GroupedHeads/*:SeqlenMismatch/*'
build-gpu/tests/gpuattn_cuda_tests --gtest_filter="$F" > $W/cuda_tests.log 2>&1
echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED) |tests ran" $W/cuda_tests.log | tail -4
(timeout 120 compute-sanitizer --tool racecheck build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='Decode/*:QuantizedKvCuda.Decode*' > $W/racecheck-decode.log 2>&1; echo "racecheck rc $?" > $W/racecheck.rc) &
(timeout 120 compute-sanitizer --tool memcheck build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='Decode/*:SeqUsedKCuda.Decode*:PagedKvCuda.Decode*:QuantizedKvCuda.Decode*' > $W/memcheck-decode.log 2>&1; echo "memcheck rc $?" > $W/memcheck.rc) &
wait
cat $W/racecheck.rc; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/racecheck-decode.log | tail -3
cat $W/memcheck.rc; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/memcheck-decode.log | tail -3
ab() {  # label python-path env...
  local label=$1 path=$2; shift 2
  env "$@" PYTHONPATH=$path timeout 80 python3 $R/decode_ab.py $label $ANCH --json $W/ab-$label-$i.json > $W/ab-$label-$i.log 2>&1
  echo "-- $label $i rc $?"; grep -v -i warn $W/ab-$label-$i.log | tail -9
}
for i in 1 2; do
  ANCH=--anchors; ab old /tmp/old/build/python X=1
  ANCH=; ab new /tmp/diag2/build/python X=1
  ab nomemset /tmp/diag2/build/python GPUATTN_DIAG_NO_MEMSET=1
  ab stages3 /tmp/diag2/build/python GPUATTN_DIAG_STAGES=3
  ab stages4 /tmp/diag2/build/python GPUATTN_DIAG_STAGES=4
done
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
