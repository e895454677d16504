#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's source page.

Reads the CSV that `ncu --import REPORT --page source --csv --print-source sass` writes (one row per SASS
instruction, with its warp-stall samples by reason) and prints the stall reasons over the whole kernel, the
samples by kind of instruction (mbarrier waits, wgmma waits, global stores, ...), and the instructions with the
most samples, each with its top reasons.

Usage: stall_summary.py SASS.csv [--top N]
"""

import argparse
import collections
import csv
import sys

# Kinds of SASS instruction, by the first pattern their text contains (in this order).
KINDS = [
    ("wgmma wait", "WARPGROUP.DEPBAR"),
    ("wgmma issue", "HGMMA"),
    ("branch (mostly mbarrier try-wait loops)", "BRA"),
    ("mbarrier", "SYNCS"),
    ("named barrier", "BAR."),
    ("global store", "STG"),
    ("global load", "LDG"),
    ("shared store", "STS"),
    ("shared load", "LDS"),
    ("TMA", "UTMA"),
    ("conversion", "F2F"),
    ("conversion", "F2FP"),
    ("special function", "MUFU"),
]


def kind_of(instruction):
    for kind, pattern in KINDS:
        if pattern in instruction:
            return kind
    return "other"


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    # The first rows name the kernel; the header is the row that starts with "Address".
    for i, row in enumerate(rows):
        if row and row[0] == "Address":
            return row, rows[i + 1:]
    raise SystemExit(f"{path}: no header row starting with 'Address' (is it ncu's --page source --csv output?)")


def integer(text):
    try:
        return int(text)
    except ValueError:
        return 0


def summarize(header, rows, top):
    column = {name: i for i, name in enumerate(header)}
    samples_column = column.get("Warp Stall Sampling (All Samples)")
    if samples_column is None:
        raise SystemExit("no 'Warp Stall Sampling (All Samples)' column: profile with --set full")
    reasons = [name for name in header if name.startswith("stall_") and "(Not Issued)" not in name]
    total = sum(integer(r[samples_column]) for r in rows)
    if total == 0:
        raise SystemExit("no stall samples in the report")
    lines = [f"{total} warp-stall samples over {len(rows)} instructions", "", "by reason:"]
    by_reason = collections.Counter()
    for r in rows:
        for reason in reasons:
            by_reason[reason] += integer(r[column[reason]])
    for reason, n in by_reason.most_common(8):
        lines.append(f"  {reason:24s} {n:7d} {100 * n / total:5.1f}%")
    lines += ["", "by kind of instruction:"]
    by_kind = collections.Counter()
    for r in rows:
        by_kind[kind_of(r[1])] += integer(r[samples_column])
    for kind, n in by_kind.most_common():
        lines.append(f"  {kind:40s} {n:7d} {100 * n / total:5.1f}%")
    lines += ["", f"top {top} instructions:"]
    for r in sorted(rows, key=lambda r: -integer(r[samples_column]))[:top]:
        mine = sorted(((integer(r[column[x]]), x) for x in reasons), reverse=True)[:2]
        why = ", ".join(f"{x[len('stall_'):]} {n}" for n, x in mine if n > 0)
        lines.append(f"  {r[0][-6:]} {integer(r[samples_column]):6d}  {r[1].strip()[:60]:60s} {why}")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    header, rows = read_rows(args.csv)
    print(summarize(header, rows, args.top))


if __name__ == "__main__":
    main(sys.argv[1:])
