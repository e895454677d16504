#!/usr/bin/env python3
"""PyTorch baselines for the comfuse benchmark suite.

For every suite row this times PyTorch eager, torch.compile (default mode), torch.compile
(mode="max-autotune-no-cudagraphs"), SDPA for attention rows, and cuBLAS GEMM alone (torch.matmul(X, W.t()))
for the single-GEMM rows. Each compiled program is timed twice: per call between CUDA events (which also counts
the gaps between its kernels, and the host's launch time where the host falls behind the GPU), and as the sum of
its kernels' durations in a profile (the CUDA profiler's activity records, as comfuse's own times are taken).
Shapes, layouts and dtypes are comfuse's (src/te/workloads.cc): bf16 inputs, W [N, K] with mm = X·Wᵀ, epilogue
math in f32, one bf16 output.

One numerical difference is deliberate: comfuse carries the f32 accumulator into the epilogue, while here each
GEMM returns bf16 (accumulated in f32 by cuBLAS or Triton) and the epilogue upcasts it to f32. That is the form a
PyTorch user writes and the one Inductor fuses; the alternative, an f32 GEMM output, writes twice the bytes.

Usage: python3 benchmarks/torch_baselines.py OUT.json [--only NAME_SUBSTRING[,...]] [--skip-compile]
                                                      [--compile-budget SECONDS]

GEMM-alone rows (workload "gemm") are timed with torch.matmul and eager only: compiling a lone matmul gives
cuBLAS or a Triton GEMM, which is not what those rows compare against. With --compile-budget, rows that start
after that many seconds are not compiled either; each skipped compile is named in the row's "errors" map.
PyTorch is imported in main(), so --help works without it.
"""
import argparse
import datetime
import json
import math
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Callable

torch = F = None  # set by import_torch(), called from main()

EPS = 1e-5  # every norm of the suite
SOFTCAP = 30.0  # gemm_softcap_softmax's cap
ERROR_CHARS = 500  # longest error message kept per system


def import_torch():
    """Imports PyTorch into this module's namespace."""
    global torch, F
    import torch
    import torch.nn.functional as F


# ---- The workloads: one function per comfuse workload, inputs in the program's input order. ----


def linear_f32(X, W):
    """X·Wᵀ (bf16 GEMM, f32 accumulation) upcast to f32 for the epilogue."""
    return torch.matmul(X, W.t()).float()


def gemm(X, W):
    """comfuse `gemm`: Y = X·Wᵀ."""
    return torch.matmul(X, W.t())


def gemm_bias_relu(X, W, b):
    """comfuse `gemm_bias_relu`: Y = relu(X·Wᵀ + b)."""
    return torch.relu(linear_f32(X, W) + b.float()).to(torch.bfloat16)


def layer_norm(x, gamma, beta):
    """LayerNorm over the last axis (biased variance, eps 1e-5) with f32 gamma and beta."""
    return F.layer_norm(x, x.shape[-1:], gamma.float(), beta.float(), EPS)


def post_layernorm(X, W, b, R, gamma, beta):
    """comfuse `post_layernorm`: Y = LayerNorm(X·Wᵀ + b + R)."""
    return layer_norm(linear_f32(X, W) + b.float() + R.float(), gamma, beta).to(torch.bfloat16)


def post_rmsnorm(X, W, b, gamma):
    """comfuse `post_rmsnorm`: Y = RMSNorm(X·Wᵀ + b) = y · rsqrt(mean(y²) + eps) · gamma."""
    y = linear_f32(X, W) + b.float()
    return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + EPS) * gamma.float()).to(torch.bfloat16)


def gemm_layernorm_relu(X, W, b, gamma, beta):
    """comfuse `gemm_layernorm_relu`: Y = relu(LayerNorm(X·Wᵀ + b))."""
    return torch.relu(layer_norm(linear_f32(X, W) + b.float(), gamma, beta)).to(torch.bfloat16)


def gemm_gelu_layernorm(X, W, b, gamma, beta):
    """comfuse `gemm_gelu_layernorm`: Y = LayerNorm(gelu_tanh(X·Wᵀ + b))."""
    act = F.gelu(linear_f32(X, W) + b.float(), approximate="tanh")
    return layer_norm(act, gamma, beta).to(torch.bfloat16)


def gemm_softmax(X, W):
    """comfuse `gemm_softmax`: Y = softmax(X·Wᵀ) over N."""
    return torch.softmax(linear_f32(X, W), dim=-1).to(torch.bfloat16)


def gemm_softcap_softmax(X, W):
    """comfuse `gemm_softcap_softmax`: Y = softmax(30 · tanh((X·Wᵀ / √K) / 30))."""
    scaled = linear_f32(X, W) * (1.0 / math.sqrt(X.shape[-1]))
    return torch.softmax(SOFTCAP * torch.tanh(scaled / SOFTCAP), dim=-1).to(torch.bfloat16)


def mlp_relu(X, W1, W2):
    """comfuse `mlp_relu`: Y = bf16(relu(X·W1ᵀ))·W2ᵀ. relu commutes with rounding to bf16, so it runs in bf16."""
    return torch.matmul(torch.relu(torch.matmul(X, W1.t())), W2.t())


def mlp_gelu(X, W1, W2):
    """comfuse `mlp_gelu`: Y = bf16(gelu_tanh(X·W1ᵀ))·W2ᵀ, the GELU in f32."""
    H = F.gelu(linear_f32(X, W1), approximate="tanh").to(torch.bfloat16)
    return torch.matmul(H, W2.t())


def attention(Q, K, V, causal):
    """comfuse `attention` / `target_attention`: Y = bf16(softmax(Q·Kᵀ/√D [causal]))·V.

    The causal mask keeps key j for query i when j ≤ i + (Lk − Lq), as comfuse's causal_mask does.
    """
    S = torch.matmul(Q, K.transpose(-1, -2)).float() * (1.0 / math.sqrt(Q.shape[-1]))
    if causal:
        lq, lk = S.shape[-2:]
        i = torch.arange(lq, device=S.device)[:, None]
        j = torch.arange(lk, device=S.device)[None, :]
        S = S.masked_fill(j > i + (lk - lq), float("-inf"))
    return torch.matmul(torch.softmax(S, dim=-1).to(torch.bfloat16), V)


def sdpa(Q, K, V, causal):
    """The same attention through F.scaled_dot_product_attention, the BH axis taken as heads."""
    return F.scaled_dot_product_attention(Q[None], K[None], V[None], is_causal=causal)[0]


# ---- The suite: shapes, operands and FLOP counts. ----


@dataclass(frozen=True)
class Workload:
    """How to run one comfuse workload in PyTorch."""

    kind: str  # "linear" (one GEMM and its epilogue), "b2b" (two GEMMs) or "attention"
    operands: Callable[[dict], list]  # shape -> [(tensor shape, scale)] in the program's input order
    function: Callable[[dict], Callable]  # shape -> the PyTorch function of those operands
    flops: Callable[[dict], int]


def linear_operands(*extras):
    """X [M, K], W [N, K] (scaled so that X·Wᵀ is about unit variance), then the named extra inputs."""
    def operands(s):
        shapes = {"b": (s["N"],), "R": (s["M"], s["N"]), "gamma": (s["N"],), "beta": (s["N"],)}
        return [((s["M"], s["K"]), 1.0), ((s["N"], s["K"]), s["K"] ** -0.5)] + [(shapes[e], 1.0) for e in extras]
    return operands


def mlp_operands(s):
    """X [M, K], W1 [N, K], W2 [O, N]."""
    return [((s["M"], s["K"]), 1.0), ((s["N"], s["K"]), s["K"] ** -0.5), ((s["O"], s["N"]), s["N"] ** -0.5)]


def attention_lengths(s):
    """(Lq, Lk) of an attention shape: L for both, or LQ and LK."""
    return (s["L"], s["L"]) if "L" in s else (s["LQ"], s["LK"])


def attention_operands(s):
    """Q [BH, Lq, D], K and V [BH, Lk, D]."""
    lq, lk = attention_lengths(s)
    return [((s["BH"], lq, s["D"]), 1.0), ((s["BH"], lk, s["D"]), 1.0), ((s["BH"], lk, s["D"]), 1.0)]


def linear(function, *extras):
    """A one-GEMM workload."""
    return Workload("linear", linear_operands(*extras), lambda s: function,
                    lambda s: 2 * s["M"] * s["N"] * s["K"])


def mlp(function):
    """A back-to-back MLP workload."""
    return Workload("b2b", mlp_operands, lambda s: function,
                    lambda s: 2 * s["M"] * s["N"] * (s["K"] + s["O"]))


# FLOPs of both GEMMs in full, also when causal (as the baselines file counts them).
ATTENTION = Workload(
    "attention", attention_operands,
    lambda s: lambda Q, K, V: attention(Q, K, V, s.get("CAUSAL", 0) == 1),
    lambda s: 4 * s["BH"] * attention_lengths(s)[0] * attention_lengths(s)[1] * s["D"])

WORKLOADS = {
    "gemm": linear(gemm),
    "gemm_bias_relu": linear(gemm_bias_relu, "b"),
    "post_layernorm": linear(post_layernorm, "b", "R", "gamma", "beta"),
    "post_rmsnorm": linear(post_rmsnorm, "b", "gamma"),
    "gemm_layernorm_relu": linear(gemm_layernorm_relu, "b", "gamma", "beta"),
    "gemm_gelu_layernorm": linear(gemm_gelu_layernorm, "b", "gamma", "beta"),
    "gemm_softmax": linear(gemm_softmax),
    "gemm_softcap_softmax": linear(gemm_softcap_softmax),
    "mlp_relu": mlp(mlp_relu),
    "mlp_gelu": mlp(mlp_gelu),
    "attention": ATTENTION,
    "target_attention": ATTENTION,
}

# The rows of benchmarks/suite.cc, in its order: (workload, shape in the workload's parameter order, row name in
# baselines/h200-2026-12-02.json or None).
SUITE = [
    ("post_layernorm", {"M": 16384, "K": 1024, "N": 1024}, "postln_M16384_K1024_N1024"),
    ("post_layernorm", {"M": 16384, "K": 4096, "N": 1024}, "postln_M16384_K4096_N1024"),
    ("post_layernorm", {"M": 8192, "K": 4096, "N": 4096}, "postln_M8192_K4096_N4096"),
    ("post_layernorm", {"M": 8192, "K": 1024, "N": 4096}, "postln_M8192_K1024_N4096"),
    ("post_rmsnorm", {"M": 8192, "K": 4096, "N": 4096}, "postrms_M8192_K4096_N4096"),
    ("gemm_softmax", {"M": 4096, "K": 1024, "N": 8192}, "gemm_softmax_M4096_K1024_N8192"),
    ("gemm_softmax", {"M": 4096, "K": 4096, "N": 32000}, "gemm_softmax_M4096_K4096_N32000"),
    ("gemm_gelu_layernorm", {"M": 16384, "K": 1024, "N": 4096}, "gemm_gelu_ln_M16384_K1024_N4096"),
    ("gemm_layernorm_relu", {"M": 8192, "K": 4096, "N": 4096}, None),
    ("gemm_softcap_softmax", {"M": 4096, "K": 1024, "N": 8192}, None),
    ("gemm_bias_relu", {"M": 8192, "K": 4096, "N": 4096}, None),
    ("mlp_relu", {"M": 65536, "K": 128, "N": 512, "O": 128}, "b2b_mlp_M65536_K128_N512_O128"),
    ("mlp_relu", {"M": 16384, "K": 1024, "N": 4096, "O": 1024}, "b2b_mlp_M16384_K1024_N4096_O1024"),
    ("attention", {"BH": 64, "L": 2048, "D": 128, "CAUSAL": 0}, "b2b_attn_BH64_L2048_D128"),
    ("attention", {"BH": 128, "L": 1024, "D": 64, "CAUSAL": 0}, "b2b_attn_BH128_L1024_D64"),
    ("mlp_gelu", {"M": 65536, "K": 128, "N": 512, "O": 128}, None),
    ("mlp_gelu", {"M": 16384, "K": 1024, "N": 4096, "O": 1024}, None),
    ("attention", {"BH": 64, "L": 2048, "D": 128, "CAUSAL": 1}, None),
    ("attention", {"BH": 128, "L": 1024, "D": 64, "CAUSAL": 1}, None),
    ("target_attention", {"BH": 1024, "LQ": 32, "LK": 1024, "D": 64}, None),
    ("gemm", {"M": 8192, "K": 8192, "N": 8192}, None),
    # Each fused row's GEMM alone.
    ("gemm", {"M": 16384, "K": 1024, "N": 1024}, None),
    ("gemm", {"M": 16384, "K": 4096, "N": 1024}, None),
    ("gemm", {"M": 8192, "K": 4096, "N": 4096}, None),
    ("gemm", {"M": 8192, "K": 1024, "N": 4096}, None),
    ("gemm", {"M": 4096, "K": 1024, "N": 8192}, None),
    ("gemm", {"M": 4096, "K": 4096, "N": 32000}, None),
    ("gemm", {"M": 16384, "K": 1024, "N": 4096}, None),
]


def instance_name(workload, shape):
    """The row name, as te::instance_name writes it: the workload, then _<PARAM><value> in parameter order."""
    return workload + "".join(f"_{param}{value}" for param, value in shape.items())


# ---- Timing. ----


def make_timer():
    """(bench, description, triton version or None): bench(fn) is the median time of fn() in µs."""
    try:
        import triton
        import triton.testing
    except ImportError as error:
        return cuda_event_bench, ("CUDA events, median of runs filling 200 ms after 50 ms of warm-up, L2 cleared "
                                  f"before each run (triton not importable: {error})"), None

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=50, rep=200, return_mode="median") * 1e3

    return (bench, "triton.testing.do_bench median, warmup 50 ms, rep 200 ms, L2 cleared before each run",
            triton.__version__)


def l2_flush_buffer():
    """A 256 MB buffer whose zeroing clears L2 (the H200's is 60 MB) before a timed run."""
    return torch.empty(64 * 2**20, dtype=torch.int32, device="cuda")


def cuda_event_bench(fn, warmup_ms=50.0, rep_ms=200.0):
    """Median µs of fn() over CUDA-event-timed runs, each after clearing L2 with a 256 MB write."""
    cache = l2_flush_buffer()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / estimate_ms))):
        fn()
    events = []
    for _ in range(max(1, int(rep_ms / estimate_ms))):
        cache.zero_()
        pair = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        pair[0].record()
        fn()
        pair[1].record()
        events.append(pair)
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in events) * 1e3


KERNEL_RUNS = 50  # profiled runs of a kernel-time measurement
KERNEL_TIMING = (f"sum of the call's kernel durations (torch.profiler's CUDA activity records), median of "
                 f"{KERNEL_RUNS} profiled calls after 10 warm-up calls, L2 cleared before each call")


def kernel_sums(kernels, flush_names, runs):
    """Per-run sums of kernel durations (µs) from the device records of a profile of `runs` calls, each after an
    L2 flush: kernels is [(name, start µs, end µs)] in any order, flush_names the names the flush's records take.

    A run is the records between one flush and the next (flushes one after another count as one). Raises
    ValueError when the records do not begin with a flush or do not split into `runs` runs with work in each:
    then the program itself launched a kernel of the flush's name, or the profile lost records."""
    ordered = sorted(kernels, key=lambda kernel: kernel[1])
    if not ordered or ordered[0][0] not in flush_names:
        first = ordered[0][0] if ordered else "nothing"
        flush = ", ".join(sorted(flush_names))
        raise ValueError(f"the profile begins with {first}, not with the L2 flush ({flush})")
    sums, current = [], None
    for name, start, end in ordered:
        if name in flush_names:
            if current is not None:
                sums.append(current)
                current = None
            continue
        current = (current or 0.0) + (end - start)
    if current is not None:
        sums.append(current)
    if len(sums) != runs:
        raise ValueError(f"the profile of {runs} calls splits into {len(sums)} runs at the L2 flushes "
                         f"({len(ordered)} device records)")
    return sums


def profiled_kernels(work):
    """[(name, start µs, end µs)] of the device records (kernels, memsets, copies) of work() in a profile."""
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profile:
        work()
        torch.cuda.synchronize()
    return [(event.name, event.time_range.start, event.time_range.end) for event in profile.events()
            if event.device_type == torch.profiler.DeviceType.CUDA]


def kernel_bench(fn, runs=KERNEL_RUNS, warmup=10):
    """Median over `runs` profiled calls of fn() of the sum of its kernels' durations (µs), L2 cleared first."""
    cache = l2_flush_buffer()
    for _ in range(warmup):
        cache.zero_()
        fn()
    torch.cuda.synchronize()
    flush_names = {name for name, _, _ in profiled_kernels(cache.zero_)}

    def calls():
        for _ in range(runs):
            cache.zero_()
            fn()
    return statistics.median(kernel_sums(profiled_kernels(calls), flush_names, runs))


def compiled_measures(system, function, inputs, mode, keys, bench):
    """[(system, measure)] for one torch.compile mode, to run in order: the first compiles the program and times
    it per call between events (and its first call, compilation included); the second times the same program's
    kernels. keys: (time field, kernel-time field, compile seconds field)."""
    time_key, kernel_key, seconds_key = keys
    programs = []

    def measure():
        torch._dynamo.reset()
        compiled = torch.compile(function, mode=mode, dynamic=False)
        begin = time.perf_counter()
        compiled(*inputs)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - begin
        programs.append(compiled)
        return {time_key: bench(lambda: compiled(*inputs)), seconds_key: seconds}

    def measure_kernels():
        if not programs:
            raise RuntimeError(f"no program to profile: {system} did not compile")
        return {kernel_key: kernel_bench(lambda: programs[0](*inputs))}

    return [(system, measure), (system + "_kernels", measure_kernels)]


# ---- One row. ----


def make_inputs(operands):
    """Random bf16 tensors on the GPU for [(shape, scale)], seeded."""
    torch.manual_seed(0)
    return [(torch.randn(shape, device="cuda") * scale).to(torch.bfloat16) for shape, scale in operands]


# (system, torch.compile mode, time field (events), kernel-time field, compile seconds field)
COMPILE_MODES = [
    ("inductor_default", None, "inductor_default_us", "inductor_default_kernel_us",
     "inductor_default_compile_seconds"),
    ("inductor_max_autotune", "max-autotune-no-cudagraphs", "inductor_max_autotune_us",
     "inductor_max_autotune_kernel_us", "inductor_compile_seconds"),
]


def systems(workload, shape, inputs, bench, skip_compile):
    """[(system, measure)]: measure() returns the row fields of that system."""
    function = workload.function(shape)
    out = [("eager", lambda: {"eager_us": bench(lambda: function(*inputs))})]
    if workload.kind == "linear":
        X, W = inputs[0], inputs[1]
        out.append(("torch_gemm", lambda: {"torch_gemm_us": bench(lambda: torch.matmul(X, W.t()))}))
    if workload.kind == "attention":
        causal = shape.get("CAUSAL", 0) == 1
        out.append(("sdpa", lambda: {"sdpa_us": bench(lambda: sdpa(*inputs, causal))}))
    if not skip_compile:
        for system, mode, *keys in COMPILE_MODES:
            out += compiled_measures(system, function, inputs, mode, keys, bench)
    return out


def measure_row(workload_name, shape, baseline_name, bench, skip_compile, skip_reason=None):
    """The JSON record of one suite row; every failure lands in its "errors" map."""
    workload = WORKLOADS[workload_name]
    row = {"name": instance_name(workload_name, shape), "workload": workload_name, "shape": shape,
           "baseline_name": baseline_name, "flops": workload.flops(shape),
           "eager_us": None, "inductor_default_us": None, "inductor_max_autotune_us": None, "sdpa_us": None,
           "torch_gemm_us": None, "inductor_default_kernel_us": None, "inductor_max_autotune_kernel_us": None,
           "inductor_default_compile_seconds": None, "inductor_compile_seconds": None,
           "errors": {}}
    try:
        inputs = make_inputs(workload.operands(shape))
    except Exception as error:  # noqa: BLE001 - one failure must not end the run
        row["errors"]["inputs"] = describe(error)
        return row
    if skip_reason is not None:
        row["errors"]["inductor"] = skip_reason
    for system, measure in systems(workload, shape, inputs, bench, skip_compile or skip_reason is not None):
        try:
            row.update(measure())
        except Exception as error:  # noqa: BLE001
            row["errors"][system] = describe(error)
            torch.cuda.empty_cache()
    del inputs
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return row


def describe(error):
    """A one-line, bounded description of an exception."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS] + "..."


# ---- Output. ----


def fmt(value, digits=1):
    """A number for the table, '-' for a missing one."""
    return "-" if value is None else f"{value:.{digits}f}"


def progress_line(index, total, row):
    """One stderr line per finished row."""
    parts = [f"{key[:-3]} {fmt(row[key])}" for key in
             ("eager_us", "inductor_default_us", "inductor_default_kernel_us", "inductor_max_autotune_us",
              "inductor_max_autotune_kernel_us", "sdpa_us", "torch_gemm_us")
             if row[key] is not None]
    if row["inductor_compile_seconds"] is not None:
        parts.append(f"max-autotune compile {row['inductor_compile_seconds']:.1f} s")
    parts += [f"{system} FAILED" for system in row["errors"]]
    return f"[{index}/{total}] {row['name']}: " + ", ".join(parts)


def print_table(rows):
    """The results as a short fixed-width table on stdout (µs)."""
    header = ("workload", "eager", "ind_default", "ind_def_kern", "ind_max_at", "ind_ma_kern", "sdpa",
              "torch_gemm", "errors")
    print(f"{header[0]:<44}" + "".join(f"{h:>13}" for h in header[1:-1]) + f"  {header[-1]}")
    for row in rows:
        times = (row[k] for k in ("eager_us", "inductor_default_us", "inductor_default_kernel_us",
                                  "inductor_max_autotune_us", "inductor_max_autotune_kernel_us", "sdpa_us",
                                  "torch_gemm_us"))
        print(f"{row['name']:<44}" + "".join(f"{fmt(t):>13}" for t in times) + "  " + ",".join(row["errors"]))


def write_json(path, document):
    """Writes the document (rewritten after every row, so an interrupted run keeps what it measured)."""
    with open(path, "w") as out:
        json.dump(document, out, indent=1)
        out.write("\n")


def disable_inductor_caches():
    """Turns Inductor's caches off, so compile seconds do not depend on earlier runs; says whether it worked."""
    warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")  # said once per compile otherwise
    try:
        torch._inductor.config.force_disable_caches = True
        return "disabled (force_disable_caches); Triton's own kernel cache left as is"
    except AttributeError as error:
        return f"default (could not disable: {error})"


def parse_args(argv):
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", metavar="OUT.json", help="where to write the results")
    parser.add_argument("--only", metavar="NAME_SUBSTRING[,...]",
                        help="run only the rows whose name contains one of these (comma-separated), in "
                             "the order of the first one each matches")
    parser.add_argument("--skip-compile", action="store_true", help="time eager, SDPA and torch.matmul only")
    parser.add_argument("--compile-budget", type=float, default=0, metavar="SECONDS",
                        help="rows starting after this many seconds are not compiled (0: no budget)")
    return parser.parse_args(argv)


def select_rows(only):
    """The suite rows whose name contains one of the comma-separated parts of `only` (all rows for None), in
    the order of the first part each matches, so that a budget-limited run measures the named rows first."""
    if only is None:
        return list(SUITE)
    parts = [part for part in only.split(",") if part]
    def first_match(entry):
        name = instance_name(entry[0], entry[1])
        return next((index for index, part in enumerate(parts) if part in name), None)
    ranked = [(first_match(entry), position, entry) for position, entry in enumerate(SUITE)]
    return [entry for rank, _, entry in sorted((r for r in ranked if r[0] is not None), key=lambda r: r[:2])]


def main(argv=None):
    """Measures the selected rows, writing OUT.json after each; prints progress to stderr and a table."""
    args = parse_args(argv)
    import_torch()
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False  # f32 accumulation, as comfuse
    bench, timing, triton_version = make_timer()
    rows = select_rows(args.only)
    if not rows:
        sys.exit(f"torch_baselines: no suite row name contains '{args.only}'")
    document = {"device": torch.cuda.get_device_name(),
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
                "torch": torch.__version__, "triton": triton_version, "timing": timing,
                "kernel_timing": None if args.skip_compile else KERNEL_TIMING,
                "inductor_caches": disable_inductor_caches() if not args.skip_compile else None,
                "skip_compile": args.skip_compile,
                "matmul": "bf16 inputs, f32 accumulation (bf16 reduced-precision reductions off)",
                "workloads": []}
    start = time.monotonic()
    for index, (workload_name, shape, baseline_name) in enumerate(rows, 1):
        skip_reason = None
        if workload_name == "gemm":
            skip_reason = "not compiled: GEMM-alone rows are timed with torch.matmul"
        elif args.compile_budget > 0 and time.monotonic() - start > args.compile_budget:
            skip_reason = f"not compiled: the compile budget of {args.compile_budget:.0f} s was spent"
        row = measure_row(workload_name, shape, baseline_name, bench, args.skip_compile, skip_reason)
        document["workloads"].append(row)
        write_json(args.out, document)
        print(progress_line(index, len(rows), row), file=sys.stderr, flush=True)
    print_table(document["workloads"])


if __name__ == "__main__":
    main()
