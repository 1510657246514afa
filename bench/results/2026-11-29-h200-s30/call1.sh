#!/usr/bin/env bash
# s30 call 1:
#  1. session 29's open question: E4M3 decode at B8 L4096 measured +15 us after
#     decode-q8-addresses.patch in one run with no host check. quantized_decode.py (interleaved
#     rounds, host check) on the build without the patch (/tmp/old) and with it, old/new/old/new.
#  2. where the small decode calls' time goes: decode-timeline.patch (/tmp/diag) printf's
#     %globaltimer stamps per CTA; timeline.py summarizes the last of 3 calls, four shapes.
#  3. ncu of ours and cuDNN at two small shapes (kernel durations, occupancy, stalls), and
#     compare_torch's figures for the same shapes in this run.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
R=bench/results/2026-11-29-h200-s30
W=$OUT/work; mkdir -p $W
for t in old diag; do
  rm -rf /tmp/$t && mkdir -p /tmp/$t && tar --exclude=./build-gpu --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/$t -xf -
done
cp $R/fwd_decode_q8.before-s29.cuh /tmp/old/src/cuda/fwd_decode_q8.cuh
patch -s -p1 -d /tmp/diag < $R/decode-timeline.patch || { echo "diag patch failed"; exit 1; }
CM="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=OFF"
t0=$(date +%s)
(cmake -S . -B build-gpu $CM > /dev/null && cmake --build build-gpu -j6 > $W/build.log 2>&1; echo "new build rc $?") &
(cmake -S /tmp/old -B /tmp/old/build $CM > /dev/null && cmake --build /tmp/old/build -j5 > $W/build-old.log 2>&1; echo "old build rc $?") &
(cmake -S /tmp/diag -B /tmp/diag/build $CM > /dev/null && cmake --build /tmp/diag/build -j5 > $W/build-diag.log 2>&1; echo "diag build rc $?") &
wait; echo "builds $(( $(date +%s) - t0 )) s"
which nsys ncu | head -2
for t in b1d128 b8d128 mqa64 b1sk32k; do
  PYTHONPATH=/tmp/diag/build/python timeout 60 python3 $R/timeline.py run $t > $W/tl-$t.log 2>&1
  echo "== timeline $t rc $?"; python3 $R/timeline.py summary $W/tl-$t.log
done
for i in 1 2; do
  for side in old new; do
    if [ $side = old ]; then P=/tmp/old/build/python; else P=$PWD/build-gpu/python; fi
    PYTHONPATH=$P:$PWD/bench timeout 100 python3 bench/quantized_decode.py --repeats 3 --json $W/qd-$side-$i.json > $W/qd-$side-$i.log 2>&1
    echo "== quantized_decode $side $i rc $?"; grep -vE "Warning|warn" $W/qd-$side-$i.log | tail -40 | cut -c1-160
  done
done
C=(--repeats 2 --case bfloat16,1,32,8,1,4096,128,0 --case bfloat16,8,32,8,1,4096,128,0
   --case float16,4,16,1,1,8192,64,0 --case float16,1,32,8,1,32768,128,0)
PYTHONPATH=$PWD/build-gpu/python timeout 100 python3 bench/compare_torch.py "${C[@]}" --json $W/ct.json > $W/ct.log 2>&1
echo "== compare_torch rc $?"; grep -E "^(fp16|bf16)|HOST" $W/ct.log | cut -c1-150
cat > /tmp/one.py <<'PY'
import sys, torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import gpu_attention as ga
who, shape = sys.argv[1], sys.argv[2]
dt, b, hq, hkv, sk, d = {"b1d128": ("bfloat16", 1, 32, 8, 4096, 128), "mqa64": ("float16", 4, 16, 1, 8192, 64)}[shape]
dt = getattr(torch, dt)
q = torch.randn(b, 1, hq, d, device="cuda", dtype=dt)
k = torch.randn(b, sk, hkv, d, device="cuda", dtype=dt)
v = torch.randn_like(k)
for _ in range(3):
    if who == "ours":
        ga.flash_attn_func(q, k, v)
    else:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), enable_gqa=hq != hkv)
torch.cuda.synchronize()
PY
S=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats)
OTHERS='regex:^(?!.*(elementwise|distribution|fill|copy|reduce|vectorized|Memset|memset)).*'
run() {
  PYTHONPATH=build-gpu/python timeout 100 ncu -f --clock-control none -k "$3" --launch-skip $4 --launch-count $5 "${S[@]}" \
    python3 /tmp/one.py $1 $2 > $W/ncu-$1-$2.txt 2>&1
  echo "== ncu $1 $2 rc $?"
  grep -E "^  [^ ].*\(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|Dynamic Shared|Warp Cycles Per Issued|No Eligible|Active Warps Per" $W/ncu-$1-$2.txt | head -28
}
run ours b1d128 regex:decode 1 1
run cudnn b1d128 "$OTHERS" 2 2
run ours mqa64 regex:decode 1 1
run cudnn mqa64 "$OTHERS" 2 2
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
