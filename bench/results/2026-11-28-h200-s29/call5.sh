#!/usr/bin/env bash
# s29 call 5: ncu (clocks not locked) of the decode shapes furthest behind the anchors, for the next
# session's decode work: fp16 B1 Hq8 Sq1 Sk131072 D256 (ours 0.87x cuDNN, 0.73x FA2 in the
# fifteenth session) for ours, cuDNN and torch's flash (FA2) backend; fp16 B4 Hq16/1 Sq1 Sk8192
# D64 (0.80x cuDNN) for ours and cuDNN. Throughput, DRAM bandwidth, occupancy, stall reasons.
set -u
cd "$(dirname "$0")/../../.."
B=build-gpu
W=$OUT/work; mkdir -p $W
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $W/build.log 2>&1 || { tail -20 $W/build.log; exit 1; }
cat > /tmp/one.py <<'PY'
import sys, torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import gpu_attention as ga
who, shape = sys.argv[1], sys.argv[2]
b, hq, hkv, sk, d = {"d256": (1, 8, 8, 131072, 256), "d64": (4, 16, 1, 8192, 64)}[shape]
q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.float16)
k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.float16)
v = torch.randn_like(k)
backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}.get(who)
for _ in range(3):
    if who == "ours":
        ga.flash_attn_func(q, k, v)
    else:
        with sdpa_kernel(backend):
            F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           enable_gqa=hq != hkv)
torch.cuda.synchronize()
PY
S=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats)
OTHERS='regex:^(?!.*(elementwise|distribution|fill|copy|reduce|vectorized|Memset|memset)).*'
run() {  # who shape kernel-filter skip count
  PYTHONPATH=$B/python timeout 150 ncu -f --clock-control none -k "$3" --launch-skip $4 --launch-count $5 "${S[@]}" \
    python3 /tmp/one.py $1 $2 > $W/ncu-$1-$2.txt 2>&1
  echo "== $1 $2 rc $?"
  grep -E "^  [^ ].*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Grid Size|Block Size|Dynamic Shared|Warp Cycles Per Issued|Issued Warp|No Eligible|Active Warps Per" $W/ncu-$1-$2.txt | head -32
}
# the anchors launch a main kernel and a reduction a call: the second call's two
run ours d256 regex:decode 1 1
run cudnn d256 "$OTHERS" 2 2
run flash d256 "$OTHERS" 2 2
run ours d64 regex:decode 1 1
run cudnn d64 "$OTHERS" 2 2
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
