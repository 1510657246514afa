#!/usr/bin/env bash
# Written in s37 (not run yet), for main: where the decode kernel's instructions go at 124M B128
# (prompt 512), per SASS instruction. s37 call 4 had it at 0.50 issued a scheduler-cycle with
# ~2,000 warp-instructions a 64-key tile of a CTA (estimated from the elapsed cycles), far above
# the tile's 16 mma and softmax: the paged loads' address arithmetic (an integer division a page
# lookup at page size 16), the merge, the prologue? The source page (SASS with CUDA lines,
# executed instructions and stall samples each) answers it; page size 64 beside it.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s37/next-call-decode-ncu.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
# NCU_GPUATTN=path: profile that gpuattn (a build already made in the call) instead of building.
if [ -n "${NCU_GPUATTN:-}" ]; then
  G=$NCU_GPUATTN
else
  rm -rf /tmp/t && mkdir /tmp/t && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/t && cd /tmp/t
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
  cmake --build build -j16 --target gpuattn_cli > $OUT/build.log 2>&1; ts "build rc $?"
  G=build/tools/gpuattn
fi
for ps in 16 64; do
  timeout 120 ncu -f -o /tmp/dec$ps -k regex:decode_kernel --launch-skip 300 --launch-count 1 \
    --section SourceCounters --section InstructionStats --section WarpStateStats --section SpeedOfLight \
    --section LaunchStats --section Occupancy --import-source yes \
    $G generate --random 124m --batch 128 --prompt-len 512 --max-new 48 --warmup 0 --page-size $ps > $OUT/ncu-$ps.log 2>&1
  ts "ncu page size $ps rc $?"
  ncu --import /tmp/dec$ps.ncu-rep --page details > $OUT/details-$ps.txt 2>&1
  ncu --import /tmp/dec$ps.ncu-rep --page source --csv --print-source cuda,sass > $OUT/sass-$ps.csv 2>/dev/null ||
    ncu --import /tmp/dec$ps.ncu-rep --page source --csv --print-source sass > $OUT/sass-$ps.csv
  grep -E "Duration|DRAM Throughput|Executed Instructions |Issued Warp|Registers Per|Achieved Occupancy" $OUT/details-$ps.txt
done
# The CUDA lines with the most executed instructions (the source page's columns vary by ncu
# version: the script finds them by name).
python3 - "$OUT" <<'PY'
import csv, sys, collections
out = sys.argv[1]
for ps in (16, 64):
    rows = list(csv.reader(open(f"{out}/sass-{ps}.csv", errors="replace")))
    hdr = next((i for i, r in enumerate(rows) if any("Instructions Executed" in c for c in r)), None)
    if hdr is None:
        print(ps, "no 'Instructions Executed' column"); continue
    h = rows[hdr]
    ie = next(i for i, c in enumerate(h) if "Instructions Executed" in c and "Warp" in c or c == "Instructions Executed")
    src = next((i for i, c in enumerate(h) if c in ("Source", "# Source")), 1)
    tot = collections.Counter()
    for r in rows[hdr + 1:]:
        try: tot[r[src][:110]] += float(r[ie].replace(",", ""))
        except (ValueError, IndexError): pass
    s = sum(tot.values()) or 1
    print(f"== page size {ps}: {s:.0f} warp instructions executed")
    for line, n in tot.most_common(25): print(f"{100*n/s:5.1f}%  {line}")
PY
ts done
