"""Tests of torch_baselines.py's row selection and kernel-time arithmetic: run as `python3 benchmarks/test_torch_baselines.py` (no PyTorch
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


class KernelSumsTest(unittest.TestCase):
    FLUSH = {"fill"}

    def test_each_run_sums_the_records_after_its_flush(self):
        records = [("fill", 0, 5), ("gemm", 6, 16), ("norm", 17, 20), ("fill", 21, 26), ("gemm", 27, 38),
                   ("norm", 38, 42)]
        self.assertEqual(torch_baselines.kernel_sums(records, self.FLUSH, 2), [13, 15])

    def test_records_in_any_order_are_ordered_by_start(self):
        records = [("norm", 38, 42), ("fill", 21, 26), ("gemm", 6, 16), ("fill", 0, 5), ("gemm", 27, 37)]
        self.assertEqual(torch_baselines.kernel_sums(records, self.FLUSH, 2), [10, 14])

    def test_flushes_one_after_another_begin_one_run(self):
        records = [("fill", 0, 5), ("memset", 5, 6), ("gemm", 7, 9), ("fill", 10, 11), ("gemm", 12, 15)]
        self.assertEqual(torch_baselines.kernel_sums(records, {"fill", "memset"}, 2), [2, 3])

    def test_a_program_launching_the_flush_kernel_is_an_error(self):
        records = [("fill", 0, 5), ("gemm", 6, 16), ("fill", 17, 18), ("norm", 19, 20)]
        with self.assertRaisesRegex(ValueError, "splits into 2 runs"):
            torch_baselines.kernel_sums(records, self.FLUSH, 1)

    def test_a_profile_not_beginning_with_the_flush_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "begins with gemm"):
            torch_baselines.kernel_sums([("gemm", 0, 1), ("fill", 2, 3), ("norm", 4, 5)], self.FLUSH, 1)
        with self.assertRaisesRegex(ValueError, "begins with nothing"):
            torch_baselines.kernel_sums([], self.FLUSH, 1)


if __name__ == "__main__":
    unittest.main()
