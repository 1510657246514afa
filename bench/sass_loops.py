"""The loops of one kernel's SASS and the instructions each holds, by opcode: where a kernel's
issue slots go per tile, to set beside ncu's instruction count (smsp__inst_executed.sum).

    cuobjdump -sass build/CMakeFiles/gpuattn.dir/src/cuda/fwd_sm90_fp8.cu.o > fp8.sass
    python3 bench/sass_loops.py fp8.sass --function 'Fp8ConfigILi128ELi2EEELb0' \\
        [--skip 0x4610:0x5450] [--min 20]

A loop is a backward branch's span: from its target to the branch, inclusive; nested loops
show as their own rows. --skip START:END (hex, END exclusive; repeatable) leaves out a range
inside the loops, such as a masked tiles' block that unmasked tiles branch around, so that a row
reads as the instructions one pass of the common path issues. The opcode drops its modifiers
(FMNMX.FTZ -> FMNMX) and its predicate.

The image's CUDA toolkit has no cuobjdump: PyPI's nvidia-cuda-cuobjdump wheel carries one
(`pip download --no-deps nvidia-cuda-cuobjdump`, unzip, `nvidia/cu13/bin/cuobjdump`).
"""
import argparse
import collections
import re
import sys

INSTR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"\bBRA\s+(?:!?U?P\w+,\s*)?0x([0-9a-f]+)")


def functions(text):
    """{mangled name: [(address, instruction text)]} of a cuobjdump -sass listing."""
    out, name = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            out[name] = []
            continue
        m = INSTR.match(line)
        if m and name is not None:
            out[name].append((int(m.group(1), 16), m.group(2)))
    return out


def opcode(text):
    text = re.sub(r"^@!?U?P\w+\s+", "", text)
    return text.split()[0].split(".")[0]


def loops(instrs, skip=()):
    """[(start, end, count, Counter of opcodes)] for each backward branch, by start address."""
    rows = []
    for addr, text in instrs:
        m = BRANCH.search(text)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target > addr:
            continue
        body = [t for a, t in instrs
                if target <= a <= addr and not any(s <= a < e for s, e in skip)]
        rows.append((target, addr, len(body), collections.Counter(opcode(t) for t in body)))
    return sorted(rows)


def parse_range(text):
    m = re.fullmatch(r"(0x)?([0-9a-fA-F]+):(0x)?([0-9a-fA-F]+)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"a range is START:END in hex, got '{text}'")
    start, end = int(m.group(2), 16), int(m.group(4), 16)
    if end <= start:
        raise argparse.ArgumentTypeError(f"a range's end must be past its start, got '{text}'")
    return start, end


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sass", help="cuobjdump -sass output")
    ap.add_argument("--function", required=True,
                    help="a regular expression that picks exactly one function's mangled name")
    ap.add_argument("--skip", type=parse_range, action="append", default=[],
                    help="START:END (hex) left out of every loop (repeatable)")
    ap.add_argument("--min", type=int, default=1, help="loops of fewer instructions not shown")
    ap.add_argument("--top", type=int, default=12, help="opcodes shown a loop")
    args = ap.parse_args(argv)
    with open(args.sass) as f:
        funcs = functions(f.read())
    if not funcs:
        sys.exit(f"sass_loops: no 'Function :' in {args.sass} (a cuobjdump -sass listing?)")
    try:
        pick = re.compile(args.function)
    except re.error as e:
        sys.exit(f"sass_loops: --function '{args.function}' is not a regular expression ({e})")
    names = [n for n in funcs if pick.search(n)]
    if len(names) != 1:
        sys.exit(f"sass_loops: --function '{args.function}' matches {len(names)} of the "
                 f"{len(funcs)} functions; it must pick one")
    name = names[0]
    print(f"{name}: {len(funcs[name])} instructions")
    for start, end, count, ops in loops(funcs[name], args.skip):
        if count < args.min:
            continue
        mix = ", ".join(f"{op} {n}" for op, n in ops.most_common(args.top))
        print(f"  loop {start:#06x}-{end:#06x}: {count} instructions: {mix}")


if __name__ == "__main__":
    main()
