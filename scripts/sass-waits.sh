#!/usr/bin/env bash
# Where each sm_90a kernel waits for its wgmma groups, from the SASS of a build (no GPU needed):
# per instantiation, in code order, every WARPGROUP.DEPBAR.LE (W<n>: wait until n groups are
# pending) and every run of MUFU.EX2 (M<count>: a softmax). The tile loop should read
# "W0x1 M66 W0x0" where the P V wait comes after the softmax (Tr::kLateWait: head dim 128, the
# dense non-causal and the 4-stage causal head-dim-64 kernels) and
# "W0x1 W0x0 M66" where it is hoisted to the softmax's start (ptxas's own placement; see
# bench/results/sm90-kernel-notes.md, ninth session). Needs cuobjdump (the CUDA toolkit's, or the
# nvidia-cuda-cuobjdump wheel's on PATH).
#
#   scripts/sass-waits.sh [BUILD_DIR]   (default build; the objects of src/cuda/fwd_sm90_*.cu)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
command -v cuobjdump >/dev/null || { echo "sass-waits: cuobjdump not on PATH" >&2; exit 2; }
objs=$(find "$BUILD" -name 'fwd_sm90_*.cu.o' | sort)
[ -n "$objs" ] || { echo "sass-waits: no fwd_sm90_*.cu.o under $BUILD" >&2; exit 2; }
for o in $objs; do
  echo "== $(basename "$o" .cu.o)"
  cuobjdump -sass "$o" | awk '
    /Function :/ { if (line != "") print line; name = $3; sub(/.*FwdTraitsI/, "", name);
                   sub(/EEEvNS_9.*/, "", name); line = "  " name ":"; m = 0; next }
    /MUFU.EX2/ { m++; next }
    /WARPGROUP.DEPBAR.LE/ { if (m) { line = line " M" m; m = 0 }
                            w = $0; sub(/.*gsb0, /, "", w); sub(/ .*/, "", w); line = line " W" w; next }
    END { if (m) line = line " M" m; if (line != "") print line }'
done
