#!/usr/bin/env python3
"""Tests of report.py on synthetic inputs: run as `python3 benchmarks/test_report.py` (standard library only)."""
import contextlib
import importlib.util
import io
import json
import math
import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

LONG_REASON = ("op 'S' is a batched contraction of rank 3: back-to-back contractions are planned by the B2B "
               "planner")

COMFUSE = {
    "device": "NVIDIA H200", "date": "2026-12-02", "timing": "CUPTI kernel durations, median of 50 runs",
    "workloads": [
        {"name": "post_layernorm_M16384_K1024_N1024", "workload": "post_layernorm", "flops": 34359738368,
         "ours_us": 200.0, "cublas_gemm_us": 50.0, "max_rel_err": 1e-4, "correct": True,
         "schedule_source": "tuning_log", "tune_seconds": 40.0, "baseline_row": "postln_M16384_K1024_N1024",
         "ours_kernel_us": [150.0, 50.0]},
        {"name": "gemm_softmax_M4096_K1024_N8192", "workload": "gemm_softmax", "flops": 68719476736,
         "ours_us": 900.0, "cublas_gemm_us": 100.0, "max_rel_err": 1e-6, "correct": True,
         "schedule_source": "default", "tune_seconds": None},
        {"name": "gemm_M8192_K8192_N8192", "workload": "gemm", "flops": 1099511627776, "ours_us": 1500.0,
         "cublas_gemm_us": 1600.0, "max_rel_err": 2e-4, "correct": True, "schedule_source": "default"},
        # A back-to-back row: no GEMM-alone time.
        {"name": "mlp_relu_M65536_K128_N512_O128", "workload": "mlp_relu", "flops": 17179869184,
         "ours_us": 150.0, "max_rel_err": 1e-3, "correct": True, "schedule_source": "tuning_log",
         "plan": "unfused", "unfused_us": 150.0, "b2b_fused_us": 170.0, "b2b_fused_correct": True},
        # An unsupported row, written the way older drivers did (flops 0, no schedule fields).
        {"name": "attention_BH64_L2048_D128_CAUSAL0", "workload": "attention", "flops": 0, "ours_us": None,
         "unsupported": LONG_REASON},
    ],
}

TORCH = {
    "device": "NVIDIA H200", "date": "2026-12-03", "torch": "2.11.0", "triton": "3.6.0",
    "timing": "triton.testing.do_bench median", "inductor_caches": "disabled",
    "workloads": [
        {"name": "attention_BH64_L2048_D128_CAUSAL0", "flops": 137438953472, "eager_us": 2265.0,
         "inductor_default_us": 785.0, "inductor_max_autotune_us": 690.0, "sdpa_us": 215.0, "torch_gemm_us": None,
         "inductor_compile_seconds": 15.0, "baseline_name": "b2b_attn_BH64_L2048_D128", "errors": {}},
        {"name": "post_layernorm_M16384_K1024_N1024", "eager_us": 160.0, "inductor_default_us": 78.0,
         "inductor_max_autotune_us": 80.0, "sdpa_us": None, "torch_gemm_us": 52.0, "inductor_compile_seconds": 11.5,
         "inductor_max_autotune_kernel_us": 76.0, "inductor_default_kernel_us": 75.0,
         "inductor_default_compile_seconds": 3.0, "baseline_name": "postln_M16384_K1024_N1024", "errors": {}},
        {"name": "gemm_softmax_M4096_K1024_N8192", "inductor_max_autotune_us": 200.0, "torch_gemm_us": 100.0,
         "inductor_max_autotune_kernel_us": 180.0, "errors": {}},
        {"name": "gemm_M8192_K8192_N8192", "inductor_max_autotune_us": 1580.0, "torch_gemm_us": 1650.0,
         "errors": {}},
        {"name": "mlp_relu_M65536_K128_N512_O128", "eager_us": 93.0, "inductor_max_autotune_us": 110.0,
         "errors": {}},
        # Only PyTorch has this row; its max-autotune run failed.
        {"name": "target_attention_BH1024_LQ32_LK1024_D64", "flops": 8589934592, "eager_us": 120.0,
         "sdpa_us": 20.0, "inductor_max_autotune_us": None,
         "errors": {"inductor_max_autotune": "RuntimeError: out of resource"}},
    ],
}

NAMES = ["post_layernorm_M16384_K1024_N1024", "gemm_softmax_M4096_K1024_N8192", "gemm_M8192_K8192_N8192",
         "mlp_relu_M65536_K128_N512_O128", "attention_BH64_L2048_D128_CAUSAL0",
         "target_attention_BH1024_LQ32_LK1024_D64"]


def has_matplotlib():
    """Whether matplotlib can be imported here."""
    return importlib.util.find_spec("matplotlib") is not None


class MergeTest(unittest.TestCase):
    def setUp(self):
        self.report = report.build_report(COMFUSE, TORCH, "/some/dir/comfuse.json", "/some/dir/torch.json")
        self.rows = {row["name"]: row for row in self.report["workloads"]}

    def test_every_row_kept_comfuse_order_first(self):
        self.assertEqual([row["name"] for row in self.report["workloads"]], NAMES)

    def test_fields_of_a_fused_row(self):
        row = self.rows["post_layernorm_M16384_K1024_N1024"]
        self.assertEqual(row["ours_us"], 200.0)
        self.assertEqual(row["cublas_gemm_us"], 50.0)
        self.assertEqual(row["inductor_max_autotune_us"], 80.0)
        self.assertEqual(row["inductor_default_us"], 78.0)
        self.assertEqual(row["eager_us"], 160.0)
        self.assertIsNone(row["sdpa_us"])
        self.assertEqual(row["tune_seconds"], 40.0)
        self.assertEqual(row["inductor_compile_seconds"], 11.5)
        self.assertEqual(row["max_rel_err"], 1e-4)
        self.assertIsNone(row["unsupported"])
        self.assertEqual(row["schedule_source"], "tuning_log")
        self.assertEqual(row["baseline_name"], "postln_M16384_K1024_N1024")
        self.assertEqual(row["ours_over_gemm"], 4.0)
        self.assertAlmostEqual(row["speedup_over_inductor_max_autotune"], 0.4)
        self.assertEqual(row["inductor_max_autotune_kernel_us"], 76.0)
        self.assertEqual(row["inductor_default_kernel_us"], 75.0)
        self.assertAlmostEqual(row["speedup_over_inductor_max_autotune_kernels"], 0.38)
        self.assertEqual(row["residual_us"], 150.0)
        self.assertAlmostEqual(row["tflops"], 171.79869184)  # 34359738368 / 200 / 1e6
        self.assertAlmostEqual(row["floor_us"], 48.56500123, places=6)  # 34359738368 / 707.5e6
        self.assertAlmostEqual(row["pct_of_floor"], 24.28250061, places=6)

    def test_b2b_row_has_no_gemm_ratio(self):
        row = self.rows["mlp_relu_M65536_K128_N512_O128"]
        self.assertIsNone(row["cublas_gemm_us"])
        self.assertIsNone(row["ours_over_gemm"])
        self.assertIsNone(row["residual_us"])
        self.assertAlmostEqual(row["speedup_over_inductor_max_autotune"], 110.0 / 150.0)
        self.assertIsNone(row["speedup_over_inductor_max_autotune_kernels"])  # no kernel time for it

    def test_unsupported_row_keeps_reason_and_takes_torch_flops(self):
        row = self.rows["attention_BH64_L2048_D128_CAUSAL0"]
        self.assertIsNone(row["ours_us"])
        self.assertEqual(row["unsupported"], LONG_REASON)
        self.assertEqual(row["sdpa_us"], 215.0)
        self.assertEqual(row["flops"], 137438953472)
        self.assertIsNone(row["speedup_over_inductor_max_autotune"])
        self.assertIsNone(row["tune_seconds"])
        self.assertEqual(row["workload"], "attention")

    def test_torch_only_row(self):
        row = self.rows["target_attention_BH1024_LQ32_LK1024_D64"]
        self.assertIsNone(row["ours_us"])
        self.assertIsNone(row["unsupported"])
        self.assertEqual(row["workload"], "target_attention")
        self.assertEqual(row["torch_errors"], {"inductor_max_autotune": "RuntimeError: out of resource"})

    def test_geomeans(self):
        means = self.report["geomeans"]
        # post-norm and softmax rows: 200/50 = 4 and 900/100 = 9.
        self.assertEqual(means["ours_over_gemm_norm_softmax"]["rows"], 2)
        self.assertAlmostEqual(means["ours_over_gemm_norm_softmax"]["value"], 6.0)
        self.assertEqual(means["ours_over_gemm_gemm_alone"]["rows"], 1)
        self.assertAlmostEqual(means["ours_over_gemm_gemm_alone"]["value"], 0.9375)
        # 80/200, 200/900, 1580/1500, 110/150.
        speedup = means["speedup_over_inductor_max_autotune"]
        self.assertEqual(speedup["rows"], 4)
        self.assertAlmostEqual(speedup["value"], 0.511893, places=5)
        # Kernel times: 76/200 and 180/900.
        kernels = means["speedup_over_inductor_max_autotune_kernels"]
        self.assertEqual(kernels["rows"], 2)
        self.assertAlmostEqual(kernels["value"], (0.38 * 0.2) ** 0.5)

    def test_sources(self):
        sources = self.report["sources"]
        self.assertEqual(self.report["device"], "NVIDIA H200")
        self.assertEqual(self.report["date"], "2026-12-02")
        self.assertEqual(sources["comfuse"]["file"], "comfuse.json")
        self.assertEqual(sources["torch"]["timing"], "triton.testing.do_bench median")
        # cuBLAS / torch.matmul: 50/52, 100/100, 1600/1650; the median is 1600/1650.
        self.assertAlmostEqual(sources["cublas_over_torch_gemm_median"], 1600 / 1650)

    def test_markdown(self):
        text = report.markdown(self.report)
        for name in NAMES:
            self.assertIn(f"| {name} |", text)
        self.assertIn("| post_layernorm_M16384_K1024_N1024 | 200.0 | 50.0 | 80.0 | 78.0 | 160.0 | — | 4.00 | "
                      "0.40 | 150.0 | 172 | 24 | 150.0 + 50.0 | 76.0 | 0.38 |", text)
        self.assertIn("**0.28**", text)  # the geomean over kernel times
        self.assertIn("| unsupported: " + LONG_REASON[:60] + " |", text)
        self.assertNotIn(LONG_REASON[:61], text)
        self.assertIn("**6.00**", text)
        self.assertIn("**0.94**", text)
        self.assertIn("**0.51**", text)
        self.assertIn("707.5 TFLOP/s", text)
        self.assertIn("CUPTI kernel durations", text)
        self.assertIn("inductor_max_autotune: RuntimeError: out of resource", text)
        # Back-to-back rows list both plans' times and the one used.
        self.assertIn("| mlp_relu_M65536_K128_N512_O128 | 170.0 | 150.0 | unfused |", text)
        self.assertNotIn("| post_layernorm_M16384_K1024_N1024 | — |", text)


class TuneLogTest(unittest.TestCase):
    def test_summary(self):
        lines = [
            {"workload": {"key": "sha256:a"}, "status": "ok", "timestamp": "2026-12-02T10:00:00Z"},
            {"workload": {"key": "sha256:a"}, "status": "timeout", "timestamp": "2026-12-02T10:05:00Z"},
            {"workload": {"key": "sha256:b"}, "status": "ok", "timestamp": "2026-12-02T09:00:00Z"},
        ]
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "h200.jsonl")
            with open(path, "w") as f:
                f.write("".join(json.dumps(line) + "\n" for line in lines) + "{not json\n")
            summary = report.tune_log_summary(path)
        self.assertEqual(summary["file"], "h200.jsonl")
        self.assertEqual((summary["records"], summary["ok_records"], summary["workloads"]), (3, 2, 2))
        self.assertEqual(summary["malformed_lines"], 1)
        self.assertEqual((summary["first"], summary["last"]), ("2026-12-02T09:00:00Z", "2026-12-02T10:05:00Z"))


class CommandLineTest(unittest.TestCase):
    def run_main(self, folder):
        paths = {}
        for key, document in (("comfuse", COMFUSE), ("torch", TORCH)):
            paths[key] = os.path.join(folder, key + ".json")
            with open(paths[key], "w") as f:
                json.dump(document, f)
        prefix = os.path.join(folder, "out")
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            status = report.main(["--comfuse", paths["comfuse"], "--torch", paths["torch"], "--out-prefix", prefix])
        return status, prefix, stderr.getvalue()

    def test_without_matplotlib_json_and_md_are_written_and_status_is_3(self):
        with tempfile.TemporaryDirectory() as folder, \
                mock.patch.object(report, "import_pyplot", side_effect=ImportError("No module named 'matplotlib'")):
            status, prefix, stderr = self.run_main(folder)
            self.assertEqual(status, 3)
            self.assertIn("NOT written", stderr)
            self.assertIn("--plot-only", stderr)
            self.assertFalse(os.path.exists(prefix + ".png"))
            with open(prefix + ".json") as f:
                self.assertEqual(len(json.load(f)["workloads"]), len(NAMES))
            self.assertTrue(os.path.exists(prefix + ".md"))

    @unittest.skipUnless(has_matplotlib(), "matplotlib is not installed")
    def test_plot_and_plot_only(self):
        with tempfile.TemporaryDirectory() as folder:
            status, prefix, _ = self.run_main(folder)
            self.assertEqual(status, 0)
            with open(prefix + ".png", "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            os.remove(prefix + ".png")
            self.assertEqual(report.main(["--plot-only", prefix + ".json"]), 0)
            self.assertTrue(os.path.exists(prefix + ".png"))


class HelperTest(unittest.TestCase):
    def test_workload_of(self):
        self.assertEqual(report.workload_of("gemm_softcap_softmax_M4096_K1024_N8192"), "gemm_softcap_softmax")
        self.assertEqual(report.workload_of("attention_BH64_L2048_D128_CAUSAL1"), "attention")

    def test_plot_reference_prefers_gemm_alone_then_inductor_max_autotune(self):
        row = {"cublas_gemm_us": 50.0, "inductor_max_autotune_us": 80.0, "inductor_default_us": 78.0,
               "eager_us": 160.0}
        self.assertEqual(report.reference(row), (50.0, ""))
        row["cublas_gemm_us"] = None
        self.assertEqual(report.reference(row), (80.0, "  [÷ Inductor max-autotune]"))
        row.update(inductor_max_autotune_us=None, inductor_default_us=None, eager_us=None)
        self.assertEqual(report.reference(row), (None, "  [no reference time]"))

    def test_geomean_ignores_missing(self):
        self.assertEqual(report.geomean([None, 2.0, 8.0]), {"value": 4.0, "rows": 2})
        self.assertEqual(report.geomean([None]), {"value": None, "rows": 0})
        self.assertTrue(math.isclose(report.geomean([3.0])["value"], 3.0))


if __name__ == "__main__":
    unittest.main()
