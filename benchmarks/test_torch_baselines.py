"""Tests of torch_baselines.py's row selection: run as `python3 benchmarks/test_torch_baselines.py` (no PyTorch
needed: the module imports it only when it measures)."""
import importlib.util
import os
import unittest

_spec = importlib.util.spec_from_file_location(
    "torch_baselines", os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_baselines.py"))
torch_baselines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(torch_baselines)


def names(rows):
    return [torch_baselines.instance_name(workload, shape) for workload, shape, _ in rows]


class SelectRowsTest(unittest.TestCase):
    def test_all_rows_without_a_filter(self):
        self.assertEqual(names(torch_baselines.select_rows(None)), names(torch_baselines.SUITE))

    def test_rows_come_in_the_order_of_the_first_part_they_match(self):
        selected = names(torch_baselines.select_rows("target_attention,mlp_relu_M65536,attention"))
        self.assertEqual(selected[0], "target_attention_BH1024_LQ32_LK1024_D64")
        self.assertEqual(selected[1], "mlp_relu_M65536_K128_N512_O128")
        # The self-attention rows follow in suite order; target attention is not repeated.
        self.assertEqual(len(selected), 6)
        self.assertEqual(len(set(selected)), 6)
        self.assertTrue(all(name.startswith("attention_") for name in selected[2:]))

    def test_no_match_selects_nothing(self):
        self.assertEqual(torch_baselines.select_rows("no_such_row"), [])


if __name__ == "__main__":
    unittest.main()
