#!/usr/bin/env python3
"""Writes the H100 attention rates published in the FlashAttention-3 paper as the attention table CSV that
`fsdpsim simulate --attention-table` reads.

    write_flashattention3_paper.py OUT.csv

Source: Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao, "FlashAttention-3: Fast and Accurate Attention with Asynchrony
and Low-precision", arXiv 2407.08608, §4.1: BF16 on one H100 80GB SXM5, hidden dimension 2048 (32 heads of 64, 16
of 128), batch × sequence = 16,384 tokens, sequence 512-16k. The rates are the labels above the figures' bars
(TFLOP/s, forward 4·batch·heads·seq²·head_dim, halved under a causal mask, backward 2.5× the forward):
Figure 5 gives the forward with and without a causal mask, Figure 6 the backward without one. README.md beside this
script says how each label was read.

A causal row leaves backward_us empty: the paper publishes no causal backward, and fsdpsim's reader derives it from
the unmasked row of the same shape (topologies/attention_table.h).
"""

import csv
import sys

SEQS = [512, 1024, 2048, 4096, 8192, 16384]
TOKENS = 16384
HIDDEN = 2048

# (kernel, head_dim) → {"fwd": forward without the mask, "fwd_causal": forward with it, "bwd": backward without it}
RATES_TFLOPS = {
    ("flash_attn3", 64): {
        "fwd": [333, 392, 460, 476, 496, 497],
        "fwd_causal": [197, 265, 371, 420, 460, 473],
        "bwd": [272, 363, 422, 453, 472, 474],
    },
    ("flash_attn3", 128): {
        "fwd": [467, 565, 625, 638, 646, 648],
        "fwd_causal": [292, 423, 521, 579, 602, 616],
        "bwd": [316, 424, 501, 542, 559, 561],
    },
    ("cudnn", 64): {
        "fwd": [335, 373, 395, 408, 412, 413],
        "fwd_causal": [225, 288, 334, 363, 379, 388],
        "bwd": [266, 348, 395, 417, 432, 433],
    },
    ("cudnn", 128): {
        "fwd": [497, 574, 617, 609, 600, 595],
        "fwd_causal": [315, 410, 484, 518, 529, 539],
        "bwd": [305, 408, 465, 499, 518, 516],
    },
    ("flash_attn2", 64): {
        "fwd": [282, 306, 318, 321, 322, 324],
        "fwd_causal": [180, 229, 262, 284, 295, 299],
        "bwd": [198, 238, 264, 279, 287, 291],
    },
    ("flash_attn2", 128): {
        "fwd": [309, 350, 362, 368, 370, 370],
        "fwd_causal": [191, 260, 298, 319, 333, 335],
        "bwd": [214, 260, 291, 310, 318, 322],
    },
}


def microseconds(flops, tflops):
    return f"{flops / (tflops * 1e12) * 1e6:.2f}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["kernel", "batch", "seq", "heads", "head_dim", "causal", "forward_us", "backward_us",
                      "forward_tflops"])
        for (kernel, head_dim), rates in RATES_TFLOPS.items():
            heads = HIDDEN // head_dim
            for i, seq in enumerate(SEQS):
                batch = TOKENS // seq
                flops = 4.0 * batch * heads * seq * seq * head_dim
                causal_fwd = rates["fwd_causal"][i]
                out.writerow([kernel, batch, seq, heads, head_dim, 1, microseconds(flops / 2, causal_fwd), "",
                              f"{causal_fwd:.1f}"])
                out.writerow([kernel, batch, seq, heads, head_dim, 0, microseconds(flops, rates["fwd"][i]),
                              microseconds(2.5 * flops, rates["bwd"][i]), f"{rates['fwd'][i]:.1f}"])


if __name__ == "__main__":
    main()
