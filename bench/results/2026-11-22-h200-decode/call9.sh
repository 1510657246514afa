#!/usr/bin/env bash
# Device call 9: ncu of one decode_16x64 launch and one cuDNN launch (bf16 B8 Hq32 Hkv8 Sq1
# Sk4096 D128): memory throughput, DRAM bandwidth, stall reasons. Clocks not locked.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
cat > /tmp/one.py <<'PY'
import sys, torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import gpu_attention as ga
q = torch.randn(8, 1, 32, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(8, 4096, 8, 128, device="cuda", dtype=torch.bfloat16)
v = torch.randn_like(k)
for _ in range(3):
    if sys.argv[1] == "ours":
        ga.flash_attn_func(q, k, v)
    else:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), enable_gqa=True)
torch.cuda.synchronize()
PY
S=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats)
PYTHONPATH=$B/python ncu -f --clock-control none -k regex:decode_kernel --launch-skip 1 --launch-count 1 "${S[@]}" python3 /tmp/one.py ours > $OUT/ncu-ours.txt 2>&1
echo "ours rc $?"
PYTHONPATH=$B/python ncu -f --clock-control none -k regex:'^(?!.*(elementwise|distribution|fill|copy|reduce|vectorized)).*' --launch-skip 3 --launch-count 1 "${S[@]}" python3 /tmp/one.py cudnn > $OUT/ncu-cudnn.txt 2>&1
echo "cudnn rc $?"
for f in ours cudnn; do echo "=== $f"; grep -E "^\s+[a-z].*\b(Duration|Memory Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Registers Per|Grid Size|Block Size|Stall|Warp Cycles Per Issued|Theoretical Occupancy|Dynamic Shared|Max Bandwidth|Mem Busy|Mem Pipes)" $OUT/ncu-$f.txt | head -30; grep -E "^\s+  [a-zA-Z_:<>0-9 ,()]+\(" $OUT/ncu-$f.txt | head -3; done
