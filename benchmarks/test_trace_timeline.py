#!/usr/bin/env python3
"""Tests of trace_timeline.py on a hand-made trace: run as `python3 benchmarks/test_trace_timeline.py`."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_timeline  # noqa: E402


def record(clock, event):
    return {"clock": clock, "event": event, "m_block": 0, "n_tile": 0}


# One CTA at 1000 MHz over 100 cycles: the producer loads for 40 cycles; a consumer waits 10 cycles for its
# first stage, runs its mainloop to 50, waits 10 for staged inputs, runs stage 0 to 70, waits 20 for its cluster
# peers, then stage 1 to 100.
TRACE = {
    "workload": "post_layernorm",
    "sm_clock_mhz": 1000.0,
    "slots": [
        {"cta": 0, "warpgroup": 0, "sm": 3, "records": [record(0, "loads begin"), record(40, "loads issued")]},
        {"cta": 0, "warpgroup": 1, "sm": 3, "records": [
            record(0, "mainloop begin"), record(10, "first stage ready"), record(50, "mainloop end"),
            record(60, "inputs ready"), record(70, "stage 0 elements"), record(70, "stage 0 sent"),
            record(90, "stage 0 combined"), record(100, "stage 1 elements")]},
    ],
}


class TraceTimelineTest(unittest.TestCase):
    def test_categories(self):
        self.assertEqual([c for _, _, c in trace_timeline.intervals(TRACE["slots"][1])],
                         ["w", "M", "i", "E", "E", "X", "E"])
        self.assertEqual(trace_timeline.category("stage 1 elements", "mainloop begin"), ".")
        self.assertEqual(trace_timeline.category("loads issued", "loads begin"), ".")
        self.assertEqual(trace_timeline.category("stage 0 elements", "store issued"), "S")

    def test_shares(self):
        shares = trace_timeline.shares([TRACE["slots"][1]])
        self.assertAlmostEqual(shares["M"], 0.4)
        self.assertAlmostEqual(shares["X"], 0.2)
        self.assertAlmostEqual(shares["E"], 0.2)
        self.assertAlmostEqual(sum(shares.values()), 1.0)

    def test_text_timeline(self):
        text = trace_timeline.text_timeline(TRACE, 4, width=10)
        self.assertIn("CTA 0 (SM 3), 0.1 us, 0.01 us a character", text)
        self.assertIn("  producer    |LLLL......|", text)
        self.assertIn("  consumer 0  |wMMMMiEXXE|", text)
        self.assertIn("consumers  mainloop 40.0%, elements and combines 20.0%, cluster peers wait 20.0%", text)
        self.assertIn("producer   producer loads 100.0%", text)

    def test_main_writes_the_text(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.json")
            with open(path, "w") as f:
                json.dump(TRACE, f)
            prefix = os.path.join(tmp, "out")
            with open(os.devnull, "w") as devnull:
                saved, sys.stdout = sys.stdout, devnull
                try:
                    self.assertEqual(trace_timeline.main([path, prefix, "--ctas", "1"]), 0)
                finally:
                    sys.stdout = saved
            with open(prefix + ".txt") as f:
                self.assertIn("consumer 0", f.read())


if __name__ == "__main__":
    unittest.main()
