#!/usr/bin/env python3
"""Writes the wgmma specializations of src/cuda/wgmma.cuh: one inline-PTX function per (type,
shape, operand source), the text between the "generated" marker and "// clang-format on".

    python3 scripts/gen_wgmma.py          rewrite the block in place
    python3 scripts/gen_wgmma.py --check  exit 1 if the header differs from what this writes

A new shape is one entry in SS_SHAPES or RS_SHAPES (N a multiple of 8 up to 256, wgmma's rule).
ctest runs --check (wgmma.header_generated), so the header and this script cannot drift apart.
"""
import argparse
import pathlib
import sys

HEADER = pathlib.Path(__file__).resolve().parent.parent / "src" / "cuda" / "wgmma.cuh"
BEGIN = "// The specializations below are generated text (scripts/gen_wgmma.py: one wgmma shape and\n"
BEGIN_REST = "// type each).\n// clang-format off\n"
END = "// clang-format on\n"

TYPES = [("__half", "f16"), ("__nv_bfloat16", "bf16")]
SS_SHAPES = [64, 80, 128]  # S = Q K^T: 64/128 keys a tile, 80 at head dim 256
RS_SHAPES = [64, 128, 256]  # O += P V: the head dim
# A from registers with B K-major (wgmma_rs_kmajor): S = Q K^T with Q held in registers (64: the
# first half of a 128-key tile, see FwdTraits::kHalfLast).
RS_KMAJOR_SHAPES = [64, 128]
# FP8 E4M3 (k32 a step; 8-bit operands are K-major only, so no transpose immediates): the FP8
# kernel's S = Q K^T (SS, N = 128 keys) and O += P V (P from registers, V^T K-major, N = head dim
# 64, 128 or 256).
FP8_TYPES = [("__nv_fp8_e4m3", "e4m3")]
FP8_SS_SHAPES = [128]
FP8_RS_KMAJOR_SHAPES = [64, 128, 256]


def operand_list(first, count, per_line):
    """'%first, ..., %(first+count-1)' in quoted lines of per_line operands."""
    names = [f"%{i}" for i in range(first, first + count)]
    lines = [", ".join(names[i:i + per_line]) for i in range(0, count, per_line)]
    return lines


def accumulators(n_regs):
    """The "+f"(d[i]) constraints, 6 a line."""
    items = [f'"+f"(d[{i}])' for i in range(n_regs)]
    lines = [", ".join(items[i:i + 6]) for i in range(0, n_regs, 6)]
    return "      : " + ",\n        ".join(lines)


def specialization(ctype, ptype, n, rs, b_kmajor=False, k=16):
    regs = n // 2
    name = ("wgmma_rs_kmajor" if b_kmajor else "wgmma_rs") if rs else "wgmma_ss"
    a_param = "const std::uint32_t (&a)[4]" if rs else "std::uint64_t a_desc"
    head = f"__device__ __forceinline__ void {name}<{ctype}, {n}>(float (&d)[{regs}], {a_param},"
    indent = " " * (head.index("(") + 1)
    out = ["template <>", head, f"{indent}std::uint64_t b_desc, int scale_d) {{", "  asm volatile("]
    eight_bit = k == 32  # no transpose immediates
    if rs:
        a_ops = f"{{%{regs}, %{regs + 1}, %{regs + 2}, %{regs + 3}}}"
        b_op, scale_op = regs + 4, regs + 5
        trans = "" if eight_bit else f", {0 if b_kmajor else 1}"
        tail = f"}}, {a_ops}, %{b_op}, p, 1, 1{trans};\\n}}\\n"
    else:
        b_op, scale_op = regs + 1, regs + 2
        trans = "" if eight_bit else ", 0, 0"
        tail = f"}}, %{regs}, %{b_op}, p, 1, 1{trans};\\n}}\\n"
    out.append(f'      "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{scale_op}, 0;\\n"')
    out.append(f'      "wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{ptype}.{ptype} {{"')
    lines = operand_list(0, regs, 16)
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        out.append(f'      "{line}{tail if last else ","}"')
    out.append(accumulators(regs))
    if rs:
        out.append('      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d));')
    else:
        out.append('      : "l"(a_desc), "l"(b_desc), "r"(scale_d));')
    out.append("}")
    return "\n".join(out) + "\n"


def generated_block():
    parts = []
    for ctype, ptype in TYPES:
        for n in SS_SHAPES:
            parts.append(specialization(ctype, ptype, n, rs=False))
        for n in RS_SHAPES:
            parts.append(specialization(ctype, ptype, n, rs=True))
        for n in RS_KMAJOR_SHAPES:
            parts.append(specialization(ctype, ptype, n, rs=True, b_kmajor=True))
    for ctype, ptype in FP8_TYPES:
        for n in FP8_SS_SHAPES:
            parts.append(specialization(ctype, ptype, n, rs=False, k=32))
        for n in FP8_RS_KMAJOR_SHAPES:
            parts.append(specialization(ctype, ptype, n, rs=True, b_kmajor=True, k=32))
    return BEGIN + BEGIN_REST + "\n".join(parts) + "\n" + END


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if src/cuda/wgmma.cuh differs from what this script writes")
    args = ap.parse_args()
    text = HEADER.read_text()
    begin = text.find(BEGIN)
    end = text.find(END, begin)
    if begin < 0 or end < 0:
        sys.exit(f"gen_wgmma: {HEADER} lacks the generated block's markers "
                 f"({BEGIN.strip()!r} ... {END.strip()!r})")
    new = text[:begin] + generated_block() + text[end + len(END):]
    if args.check:
        if new != text:
            sys.exit(f"gen_wgmma: {HEADER} differs from scripts/gen_wgmma.py's output; "
                     "run python3 scripts/gen_wgmma.py")
        print(f"gen_wgmma: {HEADER.name} is current")
        return
    if new != text:
        HEADER.write_text(new)
    print(f"gen_wgmma: wrote {HEADER}")


if __name__ == "__main__":
    main()
