#!/usr/bin/env python3
"""Merges the comfuse suite results and the PyTorch baselines into one results set: JSON, Markdown and a plot.

Usage:
  python3 benchmarks/report.py --comfuse C.json --torch T.json --out-prefix PREFIX [--tune-log LOG.jsonl]
  python3 benchmarks/report.py --plot-only PREFIX.json

Writes PREFIX.json, PREFIX.md and PREFIX.png. Without matplotlib the JSON and Markdown are still written, the
missing plot is reported on stderr and the exit status is 3; `--plot-only PREFIX.json` draws it later.
"""
import argparse
import hashlib
import json
import math
import os
import re
import statistics
import sys

PEAK_TFLOPS = 707.5  # bf16 GEMM 8192³ measured with PyTorch on the H200 (baselines/h200-2026-12-02.json)
EXIT_NO_PLOT = 3
REASON_CHARS = 60

# Workloads whose epilogue is a row norm or a softmax over N.
NORM_SOFTMAX = {"post_layernorm", "post_rmsnorm", "gemm_layernorm_relu", "gemm_gelu_layernorm", "gemm_softmax",
                "gemm_softcap_softmax"}

# (time field, label, plot colour); cuBLAS GEMM alone is the plot's reference, drawn as the line at 1.0.
SYSTEMS = [
    ("ours_us", "comfuse", "#d62728"),
    ("cublas_gemm_us", "cuBLAS GEMM alone", None),
    ("inductor_max_autotune_us", "Inductor max-autotune", "#1f77b4"),
    ("inductor_default_us", "Inductor default", "#7fb2e0"),
    ("eager_us", "eager", "#7f7f7f"),
    ("sdpa_us", "SDPA", "#2ca02c"),
]

# Fields taken from each source (missing ones are null).
COMFUSE_FIELDS = ["ours_us", "cublas_gemm_us", "tune_seconds", "max_rel_err", "correct", "schedule_source",
                  "plan", "b2b_fused_us", "unfused_us", "b2b_fused_correct", "unfused_unsupported", "ours_kernel_us"]
TORCH_FIELDS = ["inductor_max_autotune_us", "inductor_default_us", "eager_us", "sdpa_us", "torch_gemm_us",
                "inductor_compile_seconds", "inductor_default_compile_seconds", "inductor_max_autotune_kernel_us",
                "inductor_default_kernel_us"]


def workload_of(name):
    """The workload part of an instance name: 'post_layernorm_M16384_K1024_N1024' -> 'post_layernorm'."""
    return re.sub(r"(_[A-Z]+\d+)+$", "", name)


def ratio(numerator, denominator):
    """numerator / denominator, or None when either is missing or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def merge_row(name, comfuse, torch):
    """One merged row from the comfuse and PyTorch records of `name` (either may be {})."""
    row = {"name": name, "workload": comfuse.get("workload") or torch.get("workload") or workload_of(name),
           "flops": comfuse.get("flops") or torch.get("flops") or None}  # older comfuse files write 0
    row.update({field: comfuse.get(field) for field in COMFUSE_FIELDS})
    row.update({field: torch.get(field) for field in TORCH_FIELDS})
    row["unsupported"] = comfuse.get("unsupported") if row["ours_us"] is None else None
    row["baseline_name"] = torch.get("baseline_name") or comfuse.get("baseline_row")
    row["torch_errors"] = torch.get("errors") or {}
    ours, gemm = row["ours_us"], row["cublas_gemm_us"]
    row["ours_over_gemm"] = ratio(ours, gemm)
    row["speedup_over_inductor_max_autotune"] = ratio(row["inductor_max_autotune_us"], ours)
    # Like for like: comfuse's time is its kernels' durations too.
    row["speedup_over_inductor_max_autotune_kernels"] = ratio(row["inductor_max_autotune_kernel_us"], ours)
    row["residual_us"] = ours - gemm if ours is not None and gemm is not None else None
    row["tflops"] = ratio(row["flops"], ours * 1e6) if ours is not None else None
    row["floor_us"] = row["flops"] / (PEAK_TFLOPS * 1e6) if row["flops"] else None
    pct = ratio(row["floor_us"], ours)
    row["pct_of_floor"] = pct * 100 if pct is not None else None
    return row


def merge_rows(comfuse_rows, torch_rows):
    """Every row of either input, by name: comfuse's order first, then the rows only PyTorch has."""
    comfuse_by_name = {row["name"]: row for row in comfuse_rows}
    torch_by_name = {row["name"]: row for row in torch_rows}
    names = list(comfuse_by_name) + [name for name in torch_by_name if name not in comfuse_by_name]
    return [merge_row(name, comfuse_by_name.get(name, {}), torch_by_name.get(name, {})) for name in names]


def geomean(values):
    """{"value": geometric mean of the positive values or None, "rows": how many}."""
    values = [v for v in values if v is not None and v > 0]
    value = math.exp(sum(math.log(v) for v in values) / len(values)) if values else None
    return {"value": value, "rows": len(values)}


def geomeans(rows):
    """The summary ratios of the table."""
    return {
        "ours_over_gemm_norm_softmax": geomean(r["ours_over_gemm"] for r in rows if r["workload"] in NORM_SOFTMAX),
        "ours_over_gemm_gemm_alone": geomean(r["ours_over_gemm"] for r in rows if r["workload"] == "gemm"),
        "speedup_over_inductor_max_autotune": geomean(r["speedup_over_inductor_max_autotune"] for r in rows),
        "speedup_over_inductor_max_autotune_kernels": geomean(
            r["speedup_over_inductor_max_autotune_kernels"] for r in rows),
    }


def tune_log_summary(path):
    """What a tuning log (JSON Lines) holds: records, ok records, distinct workloads, time span, bad lines."""
    with open(path, "rb") as f:
        data = f.read()
    records, bad = [], 0
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
            records.append(record if isinstance(record, dict) else {})
        except json.JSONDecodeError:
            bad += 1
    stamps = sorted(r["timestamp"] for r in records if isinstance(r.get("timestamp"), str))
    keys = {r["workload"].get("key") for r in records if isinstance(r.get("workload"), dict)}
    return {"file": os.path.basename(path), "sha256": hashlib.sha256(data).hexdigest(), "records": len(records),
            "ok_records": sum(r.get("status") == "ok" for r in records), "workloads": len(keys - {None}),
            "malformed_lines": bad, "first": stamps[0] if stamps else None, "last": stamps[-1] if stamps else None}


def source_info(path, document, keys):
    """The description of one input file: its name and the given top-level fields."""
    info = {"file": os.path.basename(path)}
    info.update({key: document.get(key) for key in keys})
    return info


def build_report(comfuse, torch, comfuse_path, torch_path, tune_log=None):
    """The merged results document."""
    rows = merge_rows(comfuse.get("workloads", []), torch.get("workloads", []))
    gemm_pairs = [ratio(r["cublas_gemm_us"], r["torch_gemm_us"]) for r in rows]
    gemm_pairs = [v for v in gemm_pairs if v is not None]
    return {
        "device": comfuse.get("device") or torch.get("device"),
        "date": comfuse.get("date") or torch.get("date"),
        "workloads": rows,
        "geomeans": geomeans(rows),
        "sources": {
            "comfuse": source_info(comfuse_path, comfuse, ["device", "date", "timing", "variant"]),
            "torch": source_info(torch_path, torch, ["device", "date", "timing", "kernel_timing", "torch",
                                                     "triton", "inductor_caches"]),
            "peak_tflops": PEAK_TFLOPS,
            "floor": f"floor_us = flops / {PEAK_TFLOPS} TFLOP/s (bf16 GEMM peak measured with PyTorch on the H200)",
            "cublas_over_torch_gemm_median": statistics.median(gemm_pairs) if gemm_pairs else None,
            "tuning_log": tune_log,
        },
    }


# ---- Markdown. ----


def cell(value, digits=1):
    """A table cell: the number, or '—' when missing."""
    return "—" if value is None else f"{value:.{digits}f}"


def comfuse_cell(row):
    """The comfuse time, or why there is none."""
    if row["ours_us"] is None:
        reason = (row["unsupported"] or "")[:REASON_CHARS].replace("|", "\\|")
        return "unsupported: " + reason if reason else "—"
    return cell(row["ours_us"]) + (" (wrong)" if row["correct"] is False else "")


TABLE_HEADER = ["workload", "comfuse µs", "cuBLAS GEMM alone µs", "Inductor max-autotune µs", "Inductor default µs",
                "eager µs", "SDPA µs", "comfuse / GEMM", "speedup vs Inductor MA", "residual µs", "TFLOP/s",
                "% of floor", "comfuse kernels µs", "Inductor MA kernels µs", "speedup vs Inductor MA kernels"]


def table_row(row):
    """The Markdown cells of one workload."""
    times = [cell(row[field]) for field, _, _ in SYSTEMS[1:]]
    return [row["name"], comfuse_cell(row)] + times + [
        cell(row["ours_over_gemm"], 2), cell(row["speedup_over_inductor_max_autotune"], 2),
        cell(row["residual_us"]), cell(row["tflops"], 0), cell(row["pct_of_floor"], 0), kernels_cell(row),
        cell(row["inductor_max_autotune_kernel_us"]), cell(row["speedup_over_inductor_max_autotune_kernels"], 2)]


def kernels_cell(row):
    """Each kernel of a comfuse run on its own (a deferred reduction: main + finish), when it has several."""
    times = row.get("ours_kernel_us") or []
    return " + ".join(cell(t) for t in times) if len(times) > 1 else "—"


def geomean_rows(means):
    """Table rows of the geomeans, each value under its column."""
    column = {"comfuse / GEMM": TABLE_HEADER.index("comfuse / GEMM"),
              "speedup": TABLE_HEADER.index("speedup vs Inductor MA"),
              "kernels": TABLE_HEADER.index("speedup vs Inductor MA kernels")}
    specs = [("ours_over_gemm_norm_softmax", "geomean, post-norm and softmax rows", column["comfuse / GEMM"]),
             ("ours_over_gemm_gemm_alone", "geomean, GEMM-alone rows", column["comfuse / GEMM"]),
             ("speedup_over_inductor_max_autotune", "geomean, rows with both times", column["speedup"]),
             ("speedup_over_inductor_max_autotune_kernels", "geomean, rows with both kernel times",
              column["kernels"])]
    out = []
    for key, label, index in specs:
        cells = [""] * len(TABLE_HEADER)
        cells[0] = f"**{label}** (n={means[key]['rows']})"
        cells[index] = "**" + cell(means[key]["value"], 2) + "**"
        out.append(cells)
    return out


def said(value):
    """A source's field for the header text."""
    return "not recorded" if value is None else value


def header_text(report):
    """The paragraph above the table: device, date, timing of both sources, how to read the columns."""
    src = report["sources"]
    c, t = src["comfuse"], src["torch"]
    caches = f"; Inductor caches {t['inductor_caches']}" if t["inductor_caches"] else ""
    lines = [f"# comfuse vs PyTorch on {report['device']}, {report['date']}", "",
             f"Device: {report['device']}. comfuse and cuBLAS GEMM alone (`{c['file']}`, {said(c['date'])}): "
             f"{said(c['timing'])}. PyTorch eager, Inductor default, Inductor max-autotune-no-cudagraphs and SDPA "
             f"(`{t['file']}`, {said(t['date'])}, torch {said(t['torch'])}, triton {said(t['triton'])}): "
             f"{said(t['timing'])}{caches}.",
             "",
             "Times are medians in µs; — means not measured or failed. comfuse / GEMM is comfuse over cuBLAS GEMM "
             "alone at the same M, N, K; speedup vs Inductor MA is Inductor max-autotune time over comfuse time "
             "(above 1: comfuse faster); residual is comfuse − GEMM alone; TFLOP/s is flops / comfuse time; comfuse "
             "kernels are the medians of each kernel of a run where it launches several (a deferred reduction's "
             "main kernel + its finish kernel). "
             f"% of floor is floor / comfuse × 100, the floor being the FLOPs at {PEAK_TFLOPS} TFLOP/s, the bf16 "
             "GEMM peak measured with PyTorch on this H200 (8192³). The first geomean covers the norm and softmax "
             f"epilogues ({', '.join(sorted(NORM_SOFTMAX))}). The two sources time differently (kernel durations "
             "against event-timed calls, which also count the gaps between a PyTorch program's kernels and the "
             "host's launch time where it falls behind the GPU), so a ratio across them includes that "
             "difference; Inductor MA kernels is the max-autotune program timed as comfuse is, by its kernels' "
             f"durations ({said(t.get('kernel_timing'))}), and the last column is that time over comfuse's."]
    if src["cublas_over_torch_gemm_median"] is not None:
        lines += ["", "Cross-check: cuBLAS GEMM alone (comfuse driver) / torch.matmul (PyTorch script), median "
                      f"over rows: {src['cublas_over_torch_gemm_median']:.3f}."]
    counts = {}
    for row in report["workloads"]:
        if row["schedule_source"]:
            counts[row["schedule_source"]] = counts.get(row["schedule_source"], 0) + 1
    if counts:
        lines += ["", "Schedules: " + ", ".join(f"{n} from {s}" for s, n in sorted(counts.items())) + "."]
    log = src["tuning_log"]
    if log:
        span = f", {log['first']} to {log['last']}" if log["first"] else ""
        lines += ["", f"Tuning log `{log['file']}`: {log['records']} records ({log['ok_records']} ok) over "
                      f"{log['workloads']} workloads{span}, {log['malformed_lines']} malformed lines, sha256 "
                      f"{log['sha256'][:16]}…."]
    return lines


def markdown(report):
    """The report as Markdown: header, table, geomeans, PyTorch failures."""
    lines = header_text(report) + ["", "| " + " | ".join(TABLE_HEADER) + " |",
                                   "|---|" + "---:|" * (len(TABLE_HEADER) - 1)]
    rows = [table_row(row) for row in report["workloads"]] + geomean_rows(report["geomeans"])
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    failures = [f"- {row['name']}: {system}: {message[:120]}" for row in report["workloads"]
                for system, message in sorted(row["torch_errors"].items())]
    lines += b2b_lines(report)
    if failures:
        lines += ["", "PyTorch failures (full messages in the JSON):", ""] + failures
    return "\n".join(lines) + "\n"


def b2b_lines(report):
    """Back-to-back rows measured both ways: the fused kernel, the two-kernel plan, and which one the row uses."""
    rows = [row for row in report["workloads"] if row.get("plan")]
    if not rows:
        return []
    lines = ["", "Back-to-back rows: the fused kernel and the two-kernel plan, both measured in this run; the row "
             "uses the faster correct one.", "", "| workload | fused µs | two kernels µs | plan |", "|---|---:|---:|---|"]
    for row in rows:
        fused = cell(row.get("b2b_fused_us"))
        if row.get("b2b_fused_correct") is False:
            fused += " (wrong)"
        two = cell(row.get("unfused_us")) if row.get("unfused_us") is not None else "— (no two-kernel plan)"
        lines.append(f"| {row['name']} | {fused} | {two} | {row['plan']} |")
    return lines


# ---- Plot. ----


# The plot's reference times, in order of preference, with the label of a row that is not divided by the first.
REFERENCES = [("cublas_gemm_us", ""), ("inductor_max_autotune_us", "  [÷ Inductor max-autotune]"),
              ("inductor_default_us", "  [÷ Inductor default]"), ("eager_us", "  [÷ eager]")]


def reference(row):
    """(time every bar of the row is divided by, label suffix): cuBLAS GEMM alone where there is one."""
    for field, suffix in REFERENCES:
        if row[field]:
            return row[field], suffix
    return None, "  [no reference time]"


def import_pyplot():
    """(matplotlib.pyplot on the Agg backend, matplotlib.ticker)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker as ticker
    return plt, ticker


def plot(report, path):
    """Grouped horizontal bars per workload, each system's time over the row's reference time."""
    plt, ticker = import_pyplot()
    rows = report["workloads"]
    drawn = [s for s in SYSTEMS if s[2] is not None]
    bar = 0.8 / len(drawn)
    fig, ax = plt.subplots(figsize=(12, 1.5 + 0.55 * len(rows)))
    labels, labelled, lowest, highest = [], set(), 1.0, 1.0
    for y, row in enumerate(rows):
        ref, suffix = reference(row)
        if row["ours_us"] is None:
            suffix += "  (comfuse: unsupported)" if row["unsupported"] else "  (comfuse: no time)"
        labels.append(row["name"] + suffix)
        for k, (field, label, colour) in enumerate(drawn):
            value = ratio(row[field], ref)
            if value is None:
                continue
            offset = y + (k - (len(drawn) - 1) / 2) * bar
            ax.barh(offset, value, height=bar, color=colour, label=None if label in labelled else label)
            labelled.add(label)
            lowest, highest = min(lowest, value), max(highest, value)
            if field == "ours_us":
                ax.text(value, offset, f" {value:.2f}", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top
    ax.set_xscale("log")
    ax.set_xlim(lowest / 1.5, highest * 1.6)  # room for the value labels
    ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.axvline(1.0, color="black", linewidth=1, label="cuBLAS GEMM alone (1.0)")
    ax.set_xlabel("time / cuBLAS GEMM alone (log scale; lower is better)")
    ax.set_title(f"comfuse vs PyTorch, {report['device']}, {report['date']}", pad=40)
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plot(report, path):
    """Draws the plot; returns the exit status (EXIT_NO_PLOT with a message on stderr when matplotlib is missing)."""
    try:
        plot(report, path)
    except ImportError as error:
        print(f"report: {path} NOT written: matplotlib is not importable ({error}); the .json and .md are "
              f"written; draw the plot where matplotlib exists with: python3 benchmarks/report.py --plot-only "
              f"{os.path.splitext(path)[0]}.json", file=sys.stderr)
        return EXIT_NO_PLOT
    return 0


def load(path):
    """A JSON document from a file."""
    with open(path) as f:
        return json.load(f)


def parse_args(argv):
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--comfuse", metavar="C.json", help="bench_suite's results")
    parser.add_argument("--torch", metavar="T.json", help="torch_baselines.py's results")
    parser.add_argument("--out-prefix", metavar="PREFIX", help="writes PREFIX.json, PREFIX.md and PREFIX.png")
    parser.add_argument("--tune-log", metavar="LOG.jsonl", help="the tuning log the schedules came from")
    parser.add_argument("--plot-only", metavar="PREFIX.json", help="draw PREFIX.png from a merged results file")
    args = parser.parse_args(argv)
    if args.plot_only is None and not (args.comfuse and args.torch and args.out_prefix):
        parser.error("give --comfuse, --torch and --out-prefix, or --plot-only PREFIX.json")
    return args


def main(argv=None):
    """Runs the command line; returns the exit status."""
    args = parse_args(argv)
    if args.plot_only:
        return write_plot(load(args.plot_only), os.path.splitext(args.plot_only)[0] + ".png")
    tune_log = tune_log_summary(args.tune_log) if args.tune_log else None
    report = build_report(load(args.comfuse), load(args.torch), args.comfuse, args.torch, tune_log)
    with open(args.out_prefix + ".json", "w") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(args.out_prefix + ".md", "w") as f:
        f.write(markdown(report))
    return write_plot(report, args.out_prefix + ".png")


if __name__ == "__main__":
    sys.exit(main())
