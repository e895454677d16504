#!/usr/bin/env python3
"""The timeline of a phase trace (`comfuse trace ... --json FILE`): what each warpgroup of a few CTAs did when.

Usage: trace_timeline.py TRACE.json OUT_PREFIX [--ctas N]

Writes OUT_PREFIX.txt: for each of the first N CTAs (default 4) one line a warpgroup, a character a time step
(M mainloop, w waiting for the first operand stage, i waiting for staged inputs, E element loops and combines,
X waiting for the cluster peers' partials, S store issue, L the producer issuing loads, . anything else:
waits for a turn, a free stage or a slot), then each category's share of the warpgroups' time over all CTAs.
Writes OUT_PREFIX.png as well where matplotlib is installed.
"""
import argparse
import json
import sys

CATEGORIES = {  # code: (legend, colour)
    "M": ("mainloop", "#1f77b4"),
    "w": ("first stage wait", "#aec7e8"),
    "i": ("staged inputs wait", "#c5b0d5"),
    "E": ("elements and combines", "#ff7f0e"),
    "X": ("cluster peers wait", "#d62728"),
    "S": ("store issue", "#2ca02c"),
    "L": ("producer loads", "#9467bd"),
    ".": ("other waits", "#dddddd"),
}


def category(previous, current):
    """The code of the interval between two consecutive records of one warpgroup, by their event names."""
    if previous == "loads begin":
        return "L"
    if previous == "mainloop begin" and current == "first stage ready":
        return "w"
    if current == "mainloop end":
        return "M"
    if current == "inputs ready":
        return "i"
    if previous.endswith(" sent") and current.endswith(" combined"):
        return "X"
    if current == "store issued":
        return "S"
    if current.endswith(" elements") or current.endswith(" combined") or current.endswith(" sent"):
        return "E"
    return "."


def intervals(slot):
    """(start, end, code) of a slot's consecutive records, in clocks from the slot's start."""
    records = slot["records"]
    return [(a["clock"], b["clock"], category(a["event"], b["event"])) for a, b in zip(records, records[1:])]


def shares(slots):
    """{code: fraction of the summed interval time} over `slots`."""
    totals = {}
    for slot in slots:
        for start, end, code in intervals(slot):
            totals[code] = totals.get(code, 0) + end - start
    whole = sum(totals.values())
    return {code: t / whole for code, t in totals.items()} if whole else {}


def text_timeline(trace, ctas, width=100):
    """The text form described in the module's docstring."""
    mhz = trace["sm_clock_mhz"]
    lines = []
    for cta in sorted({s["cta"] for s in trace["slots"]})[:ctas]:
        members = [s for s in trace["slots"] if s["cta"] == cta and s["records"]]
        if not members:
            continue
        # Clocks of one SM: every slot of a CTA counts from its own start, within a few cycles of the others.
        span = max(s["records"][-1]["clock"] for s in members) or 1
        lines.append(f"CTA {cta} (SM {members[0]['sm']}), {span / mhz:.1f} us, {span / width / mhz:.2f} us a character")
        for slot in members:
            row = ["."] * width
            for start, end, code in intervals(slot):
                first, last = int(start * width / span), max(int(start * width / span) + 1, int(end * width / span))
                for x in range(first, min(last, width)):
                    row[x] = code
            who = "producer" if slot["warpgroup"] == 0 else f"consumer {slot['warpgroup'] - 1}"
            lines.append(f"  {who:<11} |{''.join(row)}|")
    lines.append("")
    lines.append("share of the warpgroups' time (all CTAs):")
    for title, kind in (("consumers", lambda s: s["warpgroup"] > 0), ("producer", lambda s: s["warpgroup"] == 0)):
        part = shares([s for s in trace["slots"] if kind(s)])
        items = sorted(part.items(), key=lambda kv: -kv[1])
        lines.append(f"  {title:<10} " + ", ".join(f"{CATEGORIES[c][0]} {100 * f:.1f}%" for c, f in items))
    return "\n".join(lines) + "\n"


def plot(trace, ctas, path):
    """The same timeline as horizontal bars, one row a warpgroup."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    mhz = trace["sm_clock_mhz"]
    rows = [s for s in trace["slots"] if s["cta"] in sorted({t["cta"] for t in trace["slots"]})[:ctas]]
    fig, ax = plt.subplots(figsize=(14, 0.35 * len(rows) + 1.5))
    labels = []
    for y, slot in enumerate(rows):
        labels.append(f"CTA {slot['cta']} " + ("producer" if slot["warpgroup"] == 0 else f"wg {slot['warpgroup']}"))
        for start, end, code in intervals(slot):
            ax.barh(y, (end - start) / mhz, left=start / mhz, color=CATEGORIES[code][1], height=0.8)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("us from each warpgroup's start")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour) for _, colour in CATEGORIES.values()]
    ax.legend(handles, [legend for legend, _ in CATEGORIES.values()], ncol=4, loc="upper center",
              bbox_to_anchor=(0.5, -0.12 if len(rows) > 6 else -0.3))
    ax.set_title(f"{trace['workload']}: phase trace")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("out_prefix")
    parser.add_argument("--ctas", type=int, default=4)
    args = parser.parse_args(argv)
    with open(args.trace) as f:
        trace = json.load(f)
    text = text_timeline(trace, args.ctas)
    with open(args.out_prefix + ".txt", "w") as f:
        f.write(text)
    sys.stdout.write(text)
    try:
        plot(trace, args.ctas, args.out_prefix + ".png")
    except ImportError:
        print("(matplotlib is not installed: no PNG)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
