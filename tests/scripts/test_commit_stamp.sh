#!/usr/bin/env bash
# The commit gpuattn prints is the source tree's as it was built: HEAD's short hash, "+dirty" when
# tracked files differ from it, "unknown" outside a repository (tools/commit_stamp.cmake stamps it
# at every build). Fails, naming both, when the binary is older than the tree: rebuild.
#   test_commit_stamp.sh GPUATTN_CLI SOURCE_DIR
set -eu
cli=$1
src=$2
want=unknown
if command -v git > /dev/null && c=$(git -C "$src" rev-parse --short=12 HEAD 2> /dev/null); then
  want=$c
  if [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then want="$c+dirty"; fi
fi
got=$(env -u GPUATTN_COMMIT "$cli" generate --random tiny --device cpu --batch 1 --max-new 1 |
  sed -n 's/.*, commit \([^,]*\), .*/\1/p' | head -1)
if [ "$got" = "$want" ]; then
  echo ok
else
  echo "gpuattn says commit '$got'; the tree is at '$want'"
  exit 1
fi
