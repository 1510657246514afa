#!/usr/bin/env bash
# Device call 3: why the sweep's shortest causal shapes trail cuDNN (D64 / D256 S512 causal at
# 0.94-0.97x), and why half tiles (call 2, .h1) made D64 S512 causal 11% slower: ncu warp-state
# samples of ours (main, build-gpu), of .h1 (build-h1) and of cuDNN on causal-d64-512 and
# causal-d256-512, with the raw stall-reason metrics.
set -u
export GPUATTN_COMMIT=tree-$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=-lineinfo >$OUT/cfg-$2.log 2>&1 && cmake --build "$2" -j8 >$OUT/build-$2.log 2>&1; }
cfg . build-gpu & p1=$!; cfg .h1 build-h1 & p2=$!; wait $p1; r1=$?; wait $p2; ts "builds rc=$r1/$?"
OUT=$OUT/ours timeout 150 scripts/ncu-source.sh causal-d64-512 causal-d256-512 > $OUT/ncu-ours.log 2>&1; ts "ncu ours rc=$?"
NCU_BUILD_DIR=build-h1 OUT=$OUT/h1 timeout 100 scripts/ncu-source.sh causal-d64-512 > $OUT/ncu-h1.log 2>&1; ts "ncu h1 rc=$?"
NCU_KERNEL='regex:sdpa|fmha|flash|cudnn' NCU_CASE_ARGS="--backend cudnn" OUT=$OUT/cudnn timeout 150 \
  scripts/ncu-source.sh causal-d64-512 causal-d256-512 > $OUT/ncu-cudnn.log 2>&1; ts "ncu cudnn rc=$?"
for d in ours h1 cudnn; do for c in causal-d64-512 causal-d256-512; do
  [ -f $OUT/$d/$c.ncu-rep ] || continue
  echo "== $d $c"; grep -E "Duration|Executed Instructions  |Issue Slots Busy|Warp Cycles Per Issued|Eligible Warps|Registers Per|fwd_kernel|cudnn_" $OUT/$d/$c-details.txt | cut -c1-150
  ncu --import $OUT/$d/$c.ncu-rep --page raw --csv 2>/dev/null > $OUT/$d/$c-raw.csv
  python3 - "$OUT/$d/$c-raw.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) >= 3:
    head, vals = rows[0], rows[-1]
    pairs = [(h, v) for h, v in zip(head, vals) if h.startswith("smsp__pcsamp_warps_issue_stalled_") and not h.endswith("_not_issued")]
    tot = sum(float(v.replace(",", "") or 0) for _, v in pairs)
    for h, v in sorted(pairs, key=lambda p: -float(p[1].replace(",", "") or 0))[:10]:
        print(f"  {h[len('smsp__pcsamp_warps_issue_stalled_'):]:28s} {100*float(v.replace(',', ''))/max(tot,1):5.1f}%")
PY
done; done
cd $OUT && tar czf ncu.tgz ours h1 cudnn && rm -rf ours h1 cudnn
