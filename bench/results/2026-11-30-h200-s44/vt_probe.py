#!/usr/bin/env python3
"""How long the FP8 call's V^T pass takes against its attention kernel (torch.profiler, CUPTI
kernel times), at the FP8 bench's sweep shapes. PYTHONPATH=<build>/python python3 vt_probe.py"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, "bench")
import fp8_attention as fa  # noqa: E402

for B, H, S, causal in [(32, 16, 512, False), (16, 16, 1024, False), (4, 16, 4096, False),
                        (32, 16, 512, True), (16, 16, 1024, True)]:
    rows, _ = fa.case_rows(B, H, S, causal)
    fp8 = rows["fp8"]
    for _ in range(5):
        fp8()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fp8()
        torch.cuda.synchronize()
    t = {}
    for e in prof.key_averages():
        if "transpose_v" in e.key:
            t["vt"] = e.device_time_total / e.count
        elif "fp8_fwd" in e.key:
            t["fwd"] = e.device_time_total / e.count
    flop = 4 * B * H * S * S * fa.D * (0.5 if causal else 1.0)
    print(f"B{B} H{H} S{S} {'causal' if causal else 'dense '}  V^T pass {t.get('vt', 0):7.1f} us  "
          f"kernel {t.get('fwd', 0):7.1f} us  kernel alone {flop / t.get('fwd', 1) / 1e6:6.0f} "
          f"TFLOP/s  with the pass {flop / (t.get('fwd', 1) + t.get('vt', 0)) / 1e6:6.0f}",
          flush=True)
