#!/usr/bin/env bash
# Session 27, device call 5 (warm, after calls 3-4): ctest but python.pytest with 16 jobs instead
# of gpu-check's 8, on call 3's build.
cd build-gpu && /usr/bin/time -f "ctest -j16 wall %e s" ctest -E python.pytest -j16 > /tmp/ct16.log 2>&1
tail -4 /tmp/ct16.log; grep -E "tests passed|Total Test" /tmp/ct16.log
awk '{for(i=1;i<=NF;i++) if($i=="sec") print $(i-1), $4}' /tmp/ct16.log | sort -rn | head -8; cp /tmp/ct16.log $OUT/
