#!/usr/bin/env bash
# scripts/ptxas-guard.sh against fake compilers: it fails a compile whose ptxas output reports
# serialized wgmma (and removes the object), passes every other output through, and keeps a
# failing compiler's exit status.
set -uo pipefail
guard=${1:?usage: test_ptxas_guard.sh PATH/TO/ptxas-guard.sh}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$dir/serializing" <<'SH'
#!/usr/bin/env bash
while [ $# -gt 0 ]; do [ "$1" = "-o" ] && echo obj > "$2"; shift; done
echo "ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the wgmma pipeline in the function 'k'" >&2
exit 0
SH
cat > "$dir/clean" <<'SH'
#!/usr/bin/env bash
while [ $# -gt 0 ]; do [ "$1" = "-o" ] && echo obj > "$2"; shift; done
echo "ptxas info    : (C7519) warpgroup.arrive is injected in around line 12 by compiler" >&2
exit 0
SH
cat > "$dir/broken" <<'SH'
#!/usr/bin/env bash
echo "error: something else" >&2
exit 3
SH
chmod +x "$dir/serializing" "$dir/clean" "$dir/broken"

err=$("$guard" "$dir/serializing" -c x.cu -o "$dir/a.o" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "serializing compile: exit $rc, expected 1"
grep -q "ptxas-guard: error: ptxas serialized wgmma instructions compiling $dir/a.o" <<<"$err" ||
  fail "serializing compile: no error naming the object: $err"
grep -q "C7511" <<<"$err" || fail "serializing compile: ptxas's own line not passed through"
[ ! -e "$dir/a.o" ] || fail "serializing compile: the object was left behind"

err=$("$guard" "$dir/clean" -c x.cu -o "$dir/b.o" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "clean compile: exit $rc: $err"
grep -q "C7519" <<<"$err" || fail "clean compile: its output was not passed through"
[ -e "$dir/b.o" ] || fail "clean compile: the object is gone"

err=$("$guard" "$dir/broken" -c x.cu -o "$dir/c.o" 2>&1); rc=$?
[ $rc -eq 3 ] || fail "failing compile: exit $rc, expected the compiler's 3"
grep -q "something else" <<<"$err" || fail "failing compile: its error was not passed through"

"$guard" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no arguments: expected exit 2"
echo "ptxas-guard: all cases pass"
