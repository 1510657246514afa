#!/usr/bin/env bash
# s36 call 2 (branch wip/fuse-kv): s35's next-call-fuse-kv.sh, then (if the machine has nsys) a
# kernel-by-kernel trace of b's 1.5B B1 int8 decode under its CUDA graph, to see where a step's
# ~1.8 ms goes (s36 call 1: the tensor-core int8 kernel's probe gain of ~5 us a layer became ~1).
set -u
cd "$(dirname "$0")/../../.."
OUT=$OUT bash bench/results/2026-11-29-h200-s35/next-call-fuse-kv.sh
N=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${N:-none}"
if [ -n "$N" ]; then
  timeout 150 $N profile --cuda-graph-trace=node -o /tmp/p15 -f true /tmp/b/build/tools/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8 > $OUT/nsys.log 2>&1
  echo "nsys rc $?"
  timeout 100 $N stats -r cuda_gpu_kern_sum -f csv -o $OUT/kern /tmp/p15.nsys-rep >> $OUT/nsys.log 2>&1
  echo "stats rc $?"; head -30 $OUT/kern*.csv | cut -c1-220
fi
