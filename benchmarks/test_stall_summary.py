#!/usr/bin/env python3
"""Tests of stall_summary.py on a synthetic source page: run as `python3 benchmarks/test_stall_summary.py`."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stall_summary  # noqa: E402

HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)",
          "stall_barrier", "stall_lg", "stall_long_sb", "stall_barrier (Not Issued)"]
ROWS = [
    ["0x7f00a0", "  HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24", "5", "5", "0", "0", "1", "0"],
    ["0x7f00b0", "  WARPGROUP.DEPBAR.LE gsb0, 0x0", "60", "60", "60", "0", "0", "60"],
    ["0x7f00c0", "  @!P1  BRA 0x7f0200", "25", "25", "0", "0", "25", "0"],
    ["0x7f00d0", "  @!P2  STG.E desc[UR54][R4.64], R3", "10", "10", "0", "9", "0", "0"],
]


def write_csv(rows):
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    f.write('"Kernel Name","comfuse_b2b_x",\n')
    for row in [HEADER] + rows:
        f.write(",".join(f'"{cell}"' for cell in row) + "\n")
    f.close()
    return f.name


class StallSummaryTest(unittest.TestCase):
    def test_reasons_kinds_and_top_instructions(self):
        path = write_csv(ROWS)
        try:
            header, rows = stall_summary.read_rows(path)
            text = stall_summary.summarize(header, rows, top=2)
        finally:
            os.unlink(path)
        self.assertIn("100 warp-stall samples over 4 instructions", text)
        self.assertIn("stall_barrier                 60  60.0%", text)
        self.assertIn("stall_long_sb                 26  26.0%", text)
        self.assertIn("wgmma wait", text)
        self.assertIn("global store", text)
        # The top two: the wgmma wait, then the branch, each with its leading reason.
        top = text.split("top 2 instructions:")[1].strip().splitlines()
        self.assertEqual(len(top), 2)
        self.assertIn("WARPGROUP.DEPBAR", top[0])
        self.assertIn("barrier 60", top[0])
        self.assertIn("BRA", top[1])
        self.assertIn("long_sb 25", top[1])

    def test_a_file_without_the_header_is_refused(self):
        f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
        f.write('"Kernel Name","x"\n')
        f.close()
        try:
            with self.assertRaises(SystemExit) as raised:
                stall_summary.read_rows(f.name)
        finally:
            os.unlink(f.name)
        self.assertIn("no header row starting with 'Address'", str(raised.exception))

    def test_no_samples_is_refused(self):
        rows = [[cell if i < 2 else "0" for i, cell in enumerate(row)] for row in ROWS]
        path = write_csv(rows)
        try:
            header, rows = stall_summary.read_rows(path)
            with self.assertRaises(SystemExit) as raised:
                stall_summary.summarize(header, rows, top=3)
        finally:
            os.unlink(path)
        self.assertIn("no stall samples", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
