#!/usr/bin/env python3
"""Converts OpenXLA's measured matmul rates (xla/service/gpu/model/matmul_interpolator_data.h, the text-format
GemmPerfTable XLA's GPU cost model reads) into the GEMM table CSV that `fsdpsim simulate --gemm-table` reads.

    convert_openxla_matmul.py matmul_interpolator_data.h OUT_DIR

XLA's table gives, per device key, the achieved FLOP/s (2·b·m·n·k over the median kernel time of five profiled runs,
xla/tools/matmul_perf_table_gen.cc) of one dot per (b, m, n, k, operand and output types): lhs [b, m, k] times rhs
[b, k, n], both row-major, i.e. one layout — the one fsdpsim's measure script calls `nn`. This script keeps the b = 1
rows (a linear layer's GEMM) and writes, per GPU, one row per role and shape with time_us = 2·m·n·k / rate; the three
roles share the one measured layout. FP8 roles take the operand formats Transformer Engine's hybrid recipe gives
them: E4M3 × E4M3 forward, E5M2 gradients × E4M3 for dgrad and wgrad. Which dtypes are written per GPU, and why the
others are not, is in README.md beside this script.
"""

import csv
import re
import sys
from pathlib import Path

# device key in XLA's table → (our file name, {our dtype: {role: XLA's type key}})
BF16 = "bf16xbf16->bf16"
E4M3 = "f8e4m3fnxf8e4m3fn->bf16"
E5M2_E4M3 = "f8e5m2xf8e4m3fn->bf16"
ALL_ROLES_BF16 = {"forward": BF16, "dgrad": BF16, "wgrad": BF16}
FP8_HYBRID = {"forward": E4M3, "dgrad": E5M2_E4M3, "wgrad": E5M2_E4M3}
OUTPUTS = {
    "sm_100_B200": ("b200-gemm-openxla.csv", {"bf16": ALL_ROLES_BF16, "fp8": FP8_HYBRID}),
    "sm_90": ("h100-gemm-openxla.csv", {"bf16": ALL_ROLES_BF16}),
    "gfx942": ("mi300x-gemm-openxla.csv", {"bf16": ALL_ROLES_BF16}),
}


def tokens(text):
    return re.findall(r'"[^"]*"|[{}:]|[A-Za-z_0-9.+-]+', text)


def parse_message(toks, i):
    """A text-format message body from toks[i] to its closing brace: a list of (field, value or sub-message)."""
    fields = []
    while i < len(toks) and toks[i] != "}":
        name = toks[i]
        if toks[i + 1] == ":" and toks[i + 2] != "{":
            fields.append((name, toks[i + 2].strip('"')))
            i += 3
            continue
        i += 2 if toks[i + 1] == "{" else 3  # `name {` or `name: {`
        sub, i = parse_message(toks, i)
        fields.append((name, sub))
    return fields, i + 1


def field(message, name):
    return [value for key, value in message if key == name]


def read_table(path):
    text = Path(path).read_text()
    begin = text.index('R"pb(') + len('R"pb(')
    end = text.index(')pb"', begin)
    root, _ = parse_message(tokens(text[begin:end]), 0)
    devices = {}
    for device in field(root, "entries"):
        key = field(device, "key")[0]
        shapes = {}
        for entry in field(field(device, "value")[0], "entries"):
            b, m, n, k = (int(field(entry, axis)[0]) for axis in "bmnk")
            rates = {field(f, "key")[0]: float(field(f, "value")[0]) for f in field(entry, "flops")}
            # gfx942 lists (1, 256, 256, 256) twice, first with a BF16 rate alone; the later, complete entry wins.
            shapes.setdefault((b, m, n, k), {}).update(rates)
        devices[key] = shapes
    return devices


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    devices = read_table(sys.argv[1])
    out_dir = Path(sys.argv[2])
    for device, (file_name, dtypes) in OUTPUTS.items():
        shapes = devices[device]
        with open(out_dir / file_name, "w", newline="") as out:
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(["role", "layout", "dtype", "m", "n", "k", "time_us", "tflops"])
            for dtype, roles in dtypes.items():
                for role, xla_type in roles.items():
                    for (b, m, n, k), rates in sorted(shapes.items(), key=lambda s: s[0][1:]):
                        if b != 1:
                            continue
                        rate = rates[xla_type]
                        time_us = 2.0 * m * n * k / rate * 1e6
                        writer.writerow([role, "nn", dtype, m, n, k, f"{time_us:.3f}", f"{rate / 1e12:.1f}"])


if __name__ == "__main__":
    main()
