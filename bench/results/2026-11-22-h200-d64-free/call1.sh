#!/usr/bin/env bash
# Device call 1 (tenth session): the launch floor (tools/launch_floor.cu), then D64 without
# ping-pong and with the late wait (.np) and D64 with the late wait alone (.lw) against main cedf0d2
# (.snap): quick shapes (B1 H16 S1024 D64 first) 9 rounds, then the sweep 2 rounds.
set -u
export GPUATTN_COMMIT=tree-cedf0d2
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
nvcc -O2 -arch=sm_90a tools/launch_floor.cu -o /tmp/floor && /tmp/floor 300 | tee $OUT/floor.md; ts "floor"
mkdir -p "$OUT/s1"
AB_SHAPES=quick AB_SPARSE=0 AB_B_DIRS=".np .lw" OUT=$OUT/s1 timeout 330 scripts/ab.sh .snap 9 >"$OUT/s1/ab.log" 2>&1; ts "quick ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
mkdir -p "$OUT/s2"; AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".np .lw" OUT=$OUT/s2 timeout $((575-($(date +%s)-t0))) scripts/ab.sh .snap 2 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$"
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
