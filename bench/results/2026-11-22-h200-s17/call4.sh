#!/usr/bin/env bash
# Device call 4: where a GPT-2 124M decode step's 0.74 ms goes (B1; call 3 measured 1354 tok/s,
# graphs on). Per-kernel GPU times from ncu (no clock control) for B1 and B32 decode steps, and
# nsys's timeline summary where nsys exists.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" -A3 $OUT/build.log | head -40; exit 1; }
G=$B/tools/gpuattn
which nsys ncu
ncu --metrics gpu__time_duration.sum --clock-control none --print-summary per-kernel \
  $G generate --random 124m --batch 1 --prompt-len 16 --max-new 6 --warmup 0 > $OUT/ncu-b1.txt 2>&1
ncu --metrics gpu__time_duration.sum --clock-control none --print-summary per-kernel \
  $G generate --random 124m --batch 32 --prompt-len 64 --max-new 4 --warmup 0 > $OUT/ncu-b32.txt 2>&1
python3 - <<'PY'
import os, re
for name in ("ncu-b1.txt", "ncu-b32.txt"):
    text = open(os.path.join(os.environ["OUT"], name)).read()
    print("==", name)
    # blocks: kernel name line, then "Section: Command line profiler metrics", then metric rows
    blocks = re.split(r"\n\s*\n", text)
    rows = []
    cur = None
    for line in text.splitlines():
        m = re.match(r"\s{2}(\S.*)\s+\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", line)
        if m: cur = m.group(1).strip()[:90]; inv = None
        m2 = re.search(r"Invocations\s*:?\s*(\d+)", line)
        m3 = re.match(r"\s+gpu__time_duration.sum\s+(\S+)\s+([\d.,]+)\s+([\d.,]+)\s+([\d.,]+)", line)
        if m3 and cur:
            rows.append((cur, m3.group(1), m3.group(4)))
    print("\n".join(" | ".join(r) for r in rows[:60]))
PY
tail -5 $OUT/ncu-b1.txt
