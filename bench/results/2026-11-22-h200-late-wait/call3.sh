#!/usr/bin/env bash
# Device call 3 (ninth session): the split tail (wip/late-wait 0dacc75, .st): tests, sanitizers,
# then a default-shape A/B of main 02eafd2 (.snap) against the late wait alone (98422b7, .lw) and
# the late wait + split tail (.st).
set -u
export GPUATTN_COMMIT=split-tail-0dacc75
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/t" "$OUT/s1"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
cmake -S .st -B /tmp/bst -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON >$OUT/t/cfg.log 2>&1 && cmake --build /tmp/bst -j16 >$OUT/t/build.log 2>&1; ts "build rc=$?"
ctest --test-dir /tmp/bst -R 'SplitTail|SeedTable|ManyRowBlocks|SameInputs|AwkwardLengths|GroupedHeads|StridedViews|SeqlenMismatch' --timeout 120 -j8 > $OUT/t/ctest.log 2>&1; ts "ctest subset rc=$?"
tail -3 $OUT/t/ctest.log; grep -E "\*\*\*|Failed|Timeout" $OUT/t/ctest.log | head -20
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 1 /tmp/bst/tests/gpuattn_cuda_tests --gtest_filter='SplitTail/*H35_S1000_D128:SplitTail/*H35_S1000_D64*' --gtest_brief=1 > $OUT/t/racecheck.log 2>&1; ts "racecheck rc=$?"; tail -3 $OUT/t/racecheck.log
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/bst/tests/gpuattn_cuda_tests --gtest_filter='SplitTail/*' --gtest_brief=1 > $OUT/t/memcheck.log 2>&1; ts "memcheck rc=$?"; tail -3 $OUT/t/memcheck.log
AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".lw .st" OUT=$OUT/s1 timeout $((590-($(date +%s)-t0))) scripts/ab.sh .snap 3 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s1/ab/summary.md 2>/dev/null | grep -v "^$" || (cd "$OUT/s1/ab" && for d in *; do [ -d "$d" ] && python3 "$OLDPWD/bench/ab_summary.py" "$d"; done; tail -5 "$OUT/s1/ab.log")
cd "$OUT" && tar czf all.tgz t s1 && rm -rf t s1
