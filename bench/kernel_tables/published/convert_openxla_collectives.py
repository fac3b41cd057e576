#!/usr/bin/env python3
"""Converts OpenXLA's measured collective throughputs (xla/service/gpu/model/collective_interpolator_data.h, the
text-format profiles XLA's GPU cost model interpolates) into one CSV in nccl-tests' terms.

    convert_openxla_collectives.py collective_interpolator_data.h OUT.csv

XLA's generator (xla/tools/collective_perf_table_gen.cc) compiles one collective per (op, tensor size, replica
groups) over F32 elements, runs it 20 times and keeps the median run time; the table stores the tensor's bytes over
that time. The tensor is the gathered output of an all-gather, the scattered input of a reduce-scatter, the buffer
of an all-reduce or all-to-all: the size nccl-tests prints, so the stored rate is nccl-tests' algbw. The recorded
instruction carries the output shape, so a reduce-scatter's size is its output bytes times the group size. Replica
groups are `groups` groups of `ranks` consecutive devices, all running at once. This script writes per row the
GPU, op, ranks, groups, size_bytes, time_us = size / rate, algbw and busbw (algbw times (n-1)/n for all-gather,
reduce-scatter and all-to-all, 2(n-1)/n for all-reduce: nccl-tests' bus factors), in GB/s. Collective-permute rows
and the one GB200 all-reduce over a 2-D device list are left out.
"""

import csv
import re
import sys
from pathlib import Path

GPUS = {"sm_90": "h100", "sm_100_B200": "b200", "sm_100_GB200": "gb200", "sm_103": "gb300", "gfx942": "mi300x"}
OPS = {"all-gather": "all_gather", "reduce-scatter": "reduce_scatter", "all-reduce": "all_reduce",
       "all-to-all": "all_to_all"}
ENTRY = re.compile(
    r'opcode: "(?P<op>[^"]+)".*?element_type: F32\s*dimensions: (?P<dims>\d+)(?P<rest>.*?)'
    r'network_throughput_bytes_per_sec: (?P<rate>\d+)', re.S)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    text = Path(sys.argv[1]).read_text()
    body = text[text.index('R"pb(') + len('R"pb('):text.index(')pb"')]
    devices = re.split(r'\n  entries \{\n    key: "', body)[1:]
    rows = []
    for device in devices:
        key = device[:device.index('"')]
        for e in ENTRY.finditer(device):
            op = OPS.get(e["op"])
            group = re.search(r"num_replica_groups: (\d+)\s*num_devices_per_group: (\d+)", e["rest"])
            reshape = re.findall(r"iota_reshape_dims: (\d+)", e["rest"])
            if op is None or group is None or len(reshape) != 1:
                continue
            groups, ranks = int(group[1]), int(group[2])
            size = int(e["dims"]) * 4 * (ranks if op == "reduce_scatter" else 1)
            rate = int(e["rate"])
            factor = (2.0 if op == "all_reduce" else 1.0) * (ranks - 1) / ranks
            rows.append((GPUS[key], op, ranks, groups, size, size / rate * 1e6, rate / 1e9, rate * factor / 1e9))
    rows.sort(key=lambda r: (list(GPUS.values()).index(r[0]), r[1], r[2], r[4]))
    with open(sys.argv[2], "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["gpu", "op", "ranks", "groups", "size_bytes", "time_us", "algbw_gbps", "busbw_gbps"])
        for gpu, op, ranks, groups, size, us, alg, bus in rows:
            writer.writerow([gpu, op, ranks, groups, size, f"{us:.3f}", f"{alg:.3f}", f"{bus:.3f}"])


if __name__ == "__main__":
    main()
