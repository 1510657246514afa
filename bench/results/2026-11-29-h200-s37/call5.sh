#!/usr/bin/env bash
# s37 call 5: decode-only steps captured into a graph only when the step before had the same
# (batch, width) and ran plainly (b), against main's "the second time a key comes" (a). Expect:
# 124M B128 prompt 512 +3-5% (the timed run no longer captures the 7 one-step tail batches, ~1.4 ms
# each; call 1's trace); identical tokens (request 0's line, a and b).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s37/call5.sh
set -u
cd "$(dirname "$0")/../../.."
source scripts/gen-ab.sh
AB_NO_TESTS=1 ab_build bench/results/2026-11-29-h200-s37/a-src 1 || exit 1
for d in a b; do
  timeout 100 $AB_ROOT/$d/build/tools/gpuattn generate --random 124m --batch 128 --prompt-len 512 --max-new 128 > $OUT/$d.log 2>&1
  echo "$d rc $? $(tail -1 $OUT/$d.log)"
done
cmp <(grep "request 0 generated" $OUT/a.log) <(grep "request 0 generated" $OUT/b.log) && echo "request 0: same tokens"
