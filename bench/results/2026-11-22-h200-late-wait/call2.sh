#!/usr/bin/env bash
# Device call 2 (ninth session): the wgmma wait after the softmax (wip/late-wait, .lw) against
# main 02eafd2 (.snap): a test subset, then default and sweep A/B, 3 rounds each.
set -u
export GPUATTN_COMMIT=late-wait
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/t" "$OUT/s1" "$OUT/s2"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
cmake -S .lw -B /tmp/blw -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON >$OUT/t/cfg.log 2>&1 && cmake --build /tmp/blw -j16 >$OUT/t/build.log 2>&1; ts "build rc=$?"
ctest --test-dir /tmp/blw -R 'Awkward|Seed|Varlen|Gqa|GQA|Causal|Window|Block' --timeout 60 -j8 > $OUT/t/ctest.log 2>&1; ts "ctest subset rc=$?"
tail -3 $OUT/t/ctest.log; grep -E "\*\*\*|Failed" $OUT/t/ctest.log | head -20
AB_SHAPES=default AB_SPARSE=1 AB_B_DIRS=".lw" OUT=$OUT/s1 timeout 200 scripts/ab.sh .snap 3 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s1/ab/summary.md 2>/dev/null | grep -v "^$" || tail -20 "$OUT/s1/ab.log"
AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".lw" OUT=$OUT/s2 timeout $((590-($(date +%s)-t0))) scripts/ab.sh .snap 3 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s2/ab/summary.md 2>/dev/null | grep -v "^$" || tail -20 "$OUT/s2/ab.log"
cd "$OUT" && tar czf all.tgz t s1 s2 && rm -rf t s1 s2
