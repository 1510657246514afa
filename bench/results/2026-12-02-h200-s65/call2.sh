#!/usr/bin/env bash
# Session 65, call 2: what soft-capping on the sm_90a and decode kernels costs and gains.
#  1. A/B of calls without a cap: gpuattn bench at main 0bb9de6 (A: built on the CPU machine,
#     carried as carry/base.tar.xz) against this tree's (B: build-gpu from call 1), the same
#     shapes in one process a side, rounds in A B B A order. Expectation: B/A 1.00 +- 0.01 at
#     every shape (one uniform branch a tile beside the softmax; SASS of the uncapped path
#     otherwise the same). The default bench shapes, D256 S512, causal D64/D256 and a decode.
#  2. The same shapes soft-capped at 50 on this tree: the default dispatch (sm_90a / decode)
#     and GPUATTN_KERNEL=sm80 (where every soft-capped call ran before), 2 rounds each.
#     Expectation: capped sm_90a 1.1-1.4x the uncapped time (a second and third MUFU op an
#     element beside the exp2: the softmax is MUFU-bound at D64, less so at D256), and 1.5-2x
#     faster than the sm_80 path at the prefill shapes.
#  3. bench/softcap_bench.py: ours soft-capped against compiled FlexAttention with the same
#     score_mod, each against its uncapped call, cuDNN's uncapped time beside them.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s65/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s65-call2}
start=$(date +%s)
mkdir -p /tmp/carry && tar xJf carry/base.tar.xz -C /tmp/carry
A=/tmp/carry/base/gpuattn
B=build-gpu/tools/gpuattn
if [ ! -x "$B" ]; then
  GPU_CHECK_TESTS=0 GPU_CHECK_BENCH=0 scripts/gpu-check.sh > $OUT/build.log 2>&1
  echo "build rc $? after $(( $(date +%s) - start )) s"
fi
SH="B1 H16 S1024 D64; B4 H16 S4096 D128; B4 H16 S4096 D128 causal; B4 H16 S4096 D128 bf16;
B4 H16 S4096 D128 causal bf16; B16 H16 S1024 D128 causal; B4 H32 S4096 D64; B4 H32 S4096 D64 causal;
B4 H8 S4096 D256; B4 H8 S4096 D256 causal; B32 H16 S512 D256; B32 Hq32 Hkv8 Sq1 Sk4096 D128"
SH=$(echo "$SH" | tr '\n' ' ')
mkdir -p $OUT/ab
n=0
for r in 1 2 3; do
  for side in a b b a; do
    n=$((n + 1))
    bin=$A; [ $side = b ] && bin=$B
    timeout 120 $bin bench --device cuda --shape "$SH" --json $OUT/ab/bench-$side-$n.json \
      > $OUT/ab/bench-$side-$n.log 2>&1 || echo "run $n side $side rc $?"
  done
done
echo "A/B done after $(( $(date +%s) - start )) s"
python3 bench/ab_summary.py $OUT/ab > $OUT/ab-summary.md 2>&1; cat $OUT/ab-summary.md | head -40
CAP=$(echo "$SH" | sed 's/;/ softcap50;/g; s/$/ softcap50/')
mkdir -p $OUT/cap
for r in 1 2; do
  timeout 120 $B bench --device cuda --shape "$CAP" --json $OUT/cap/bench-a-$r.json > $OUT/cap/a-$r.log 2>&1 || echo "cap default rc $?"
  GPUATTN_KERNEL=sm80 timeout 120 $B bench --device cuda --shape "$CAP" --json $OUT/cap/bench-b-$r.json > $OUT/cap/b-$r.log 2>&1 || echo "cap sm80 rc $?"
done
echo "capped done after $(( $(date +%s) - start )) s (cap: A = default dispatch, B = GPUATTN_KERNEL=sm80)"
python3 bench/ab_summary.py $OUT/cap > $OUT/cap-summary.md 2>&1; head -30 $OUT/cap-summary.md
PYTHONPATH=$PWD/build-gpu/python timeout $(( 590 - ($(date +%s) - start) )) python3 bench/softcap_bench.py \
  --json $OUT/softcap_bench.json --md $OUT/softcap_bench.md > $OUT/softcap_bench.log 2>&1
echo "softcap_bench rc $?"; tail -16 $OUT/softcap_bench.log
echo "done after $(( $(date +%s) - start )) s"
