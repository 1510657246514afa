#!/usr/bin/env bash
# scripts/gen-ab.sh on a scratch repository with a fake cmake and a fake gpuattn (no GPU, no
# build): the overlay holds REF's files, a differs from b in exactly them, a stale overlay is
# refused, and ab_gen runs the side it names with AB_ENV in its environment.
set -euo pipefail
LIB=$1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/repo/src" "$T/bin" "$T/out"
cd "$T/repo"
git init -q . && git config user.email t@t && git config user.name t
echo one > src/x.cpp && echo same > src/y.cpp && git add . && git commit -qm base
echo two > src/x.cpp && git commit -qam change
# cmake: "configure" does nothing; "--build" puts a gpuattn that prints its tree and env there.
cat > "$T/bin/cmake" <<'FAKE'
#!/usr/bin/env bash
if [ "$1" = --build ]; then
  mkdir -p build/tools
  printf '#!/usr/bin/env bash\necho "tree $(cat %s/src/x.cpp) flag ${FLAG:-unset} args $*"\n' "$PWD" > build/tools/gpuattn
  chmod +x build/tools/gpuattn
fi
FAKE
chmod +x "$T/bin/cmake"
export PATH="$T/bin:$PATH" OUT="$T/out" AB_ROOT="$T/root"
# shellcheck source=/dev/null
source "$LIB"
ab_overlay HEAD~1 .ov src/x.cpp
[ "$(cat .ov/src/x.cpp)" = one ] || { echo "overlay holds the wrong version"; exit 1; }
out=$(ab_build .ov 1)
echo "$out"
grep -q "a differs from b in: 1 files (want 1)" <<<"$out"
grep -q "build a rc 0" <<<"$out" && grep -q "build b rc 0" <<<"$out"
[ ! -e "$AB_ROOT/a/.ov" ] && [ ! -e "$AB_ROOT/b/.ov" ]
line=$(ab_gen lbl a 124m --batch 2)
echo "$line"
[ "$line" = "lbl a: rc 0 tree one flag unset args generate --random 124m --batch 2" ]
line=$(AB_ENV="FLAG=1" ab_gen lbl b 124m)
echo "$line"
[ "$line" = "lbl b (FLAG=1): rc 0 tree two flag 1 args generate --random 124m" ]
if ab_build .ov 2 > "$T/stale.txt"; then echo "a stale overlay was taken"; exit 1; fi
grep -q "the overlay is stale" "$T/stale.txt"
# ab_carry: a packed side (as scripts/carry-build.sh packs it) runs as a built one.
mkdir -p "$T/pack/cside" carry
printf '#!/usr/bin/env bash\necho "carried args $*"\n' > "$T/pack/cside/gpuattn"
chmod +x "$T/pack/cside/gpuattn"
tar cJf carry/cside.tar.xz -C "$T/pack" cside
ab_carry cside
line=$(ab_gen lbl cside 124m)
echo "$line"
[ "$line" = "lbl cside: rc 0 carried args generate --random 124m" ]
if ab_carry nothere > "$T/none.txt"; then echo "a missing carry was taken"; exit 1; fi
grep -q "no carry/nothere.tar.xz" "$T/none.txt"
echo ok
