#!/usr/bin/env bash
# Device call 12: ncu of fp16 B16 H16 S1024 D128 causal (causal-short: 1.05x / 1.04x cuDNN in the
# two timing halves, the named shape nearest the 1.05x goal) for ours (main, Q in registers) and
# cuDNN, with the raw stall-reason metrics (as call 3).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=-lineinfo >$OUT/cfg.log 2>&1 && cmake --build build-gpu -j16 >$OUT/build.log 2>&1; ts "build rc=$?"
OUT=$OUT/ours timeout 120 scripts/ncu-source.sh causal-short > $OUT/ncu-ours.log 2>&1; ts "ncu ours rc=$?"
NCU_KERNEL='regex:sdpa|fmha|flash|cudnn' NCU_CASE_ARGS="--backend cudnn" OUT=$OUT/cudnn timeout 120 \
  scripts/ncu-source.sh causal-short > $OUT/ncu-cudnn.log 2>&1; ts "ncu cudnn rc=$?"
for d in ours cudnn; do c=causal-short
  [ -f $OUT/$d/$c.ncu-rep ] || continue
  echo "== $d $c"; grep -E "Duration|Executed Instructions  |Warp Cycles Per Issued|fwd_kernel|cudnn_" $OUT/$d/$c-details.txt | cut -c1-150
  ncu --import $OUT/$d/$c.ncu-rep --page raw --csv 2>/dev/null > $OUT/$d/$c-raw.csv
  python3 - "$OUT/$d/$c-raw.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) >= 3:
    head, vals = rows[0], rows[-1]
    pairs = [(h, v) for h, v in zip(head, vals) if h.startswith("smsp__pcsamp_warps_issue_stalled_") and not h.endswith("_not_issued")]
    tot = sum(float(v.replace(",", "") or 0) for _, v in pairs)
    for h, v in sorted(pairs, key=lambda p: -float(p[1].replace(",", "") or 0))[:8]:
        print(f"  {h[len('smsp__pcsamp_warps_issue_stalled_'):]:28s} {100*float(v.replace(',', ''))/max(tot,1):5.1f}%")
    for h, v in zip(head, vals):
        if h in ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__throughput.avg.pct_of_peak_sustained_elapsed"):
            print(f"  {h} {v}")
PY
done
cd $OUT && tar czf ncu.tgz ours cudnn && rm -rf ours cudnn
