"""Draws the benchmark plots from a bench/results/*.json as self-contained SVG (standard library
only) into a folder (docs/): time and peak memory of every attention variant's forward + backward
versus N (log-log, lumen and PyTorch side by side), and the two scaling studies (time and memory
versus resolution / patch size, lumen solid, PyTorch dashed). Skipped points are left out and
listed under the chart. Usage: plot.py RESULTS.json OUT_DIR"""
import json
import math
import os
import re
import sys

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#843c39", "#5254a3"]
WIDTH, HEIGHT, MARGIN = 420, 300, 60  # one panel; MARGIN around its plot area


def log_ticks(low, high):
    """Decades and their 2x, 5x steps between low and high (labels only on decades)."""
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for step in (1, 2, 5):
            value = step * 10.0 ** exponent
            if low <= value <= high:
                ticks.append((value, step == 1))
    return ticks


def number(value):
    return f"{value:g}" if value >= 1e-3 else f"{value:.0e}"


def panel(x0, title, xlabel, ylabel, series, xticks):
    """One log-log chart at horizontal offset x0. series: [(label, color, dashed, [(x, y)])]."""
    points = [p for _, _, _, pts in series for p in pts]
    if not points:
        return ""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    xlo, xhi = min(xs) / 1.3, max(xs) * 1.3
    ylo, yhi = 10 ** math.floor(math.log10(min(ys))), 10 ** math.ceil(math.log10(max(ys)))
    left, right, top, bottom = x0 + MARGIN, x0 + WIDTH - 10, 30, HEIGHT - 45

    def sx(x):
        return left + (math.log(x) - math.log(xlo)) / (math.log(xhi) - math.log(xlo)) * (right - left)

    def sy(y):
        return bottom - (math.log(y) - math.log(ylo)) / (math.log(yhi) - math.log(ylo)) * (bottom - top)

    out = [f'<text x="{(left + right) / 2}" y="18" text-anchor="middle" font-weight="bold">'
           f'{title}</text>',
           f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
           f'fill="none" stroke="#444"/>']
    for value, labeled in log_ticks(ylo, yhi):
        y = sy(value)
        out.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        if labeled:
            out.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{number(value)}</text>')
    for value, label in xticks:
        x = sx(value)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">{label}</text>')
    out.append(f'<text x="{(left + right) / 2}" y="{bottom + 32}" text-anchor="middle">{xlabel}</text>')
    out.append(f'<text transform="translate({x0 + 14},{(top + bottom) / 2}) rotate(-90)" '
               f'text-anchor="middle">{ylabel}</text>')
    for _, color, dashed, pts in series:
        if not pts:
            continue
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="5,3"' if dashed else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.8"{dash}/>')
        out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{color}"/>' for x, y in pts]
    return "\n".join(out)


def figure(path, panels, legend, notes):
    """panels: [(title, xlabel, ylabel, series, xticks)]; legend: [(label, color, dashed)]."""
    rows = (len(legend) + 3) // 4
    height = HEIGHT + 18 * rows + 16 * len(notes) + 10
    width = WIDTH * len(panels)
    body = [panel(i * WIDTH, *p) for i, p in enumerate(panels)]
    for i, (label, color, dashed) in enumerate(legend):
        x, y = 20 + (i % 4) * (width - 40) / 4, HEIGHT + 18 * (i // 4) + 4
        dash = ' stroke-dasharray="5,3"' if dashed else ""
        body.append(f'<line x1="{x}" x2="{x + 24}" y1="{y}" y2="{y}" stroke="{color}" '
                    f'stroke-width="2"{dash}/><text x="{x + 30}" y="{y + 4}">{label}</text>')
    for i, note in enumerate(notes):
        body.append(f'<text x="20" y="{HEIGHT + 18 * rows + 16 * i + 12}" fill="#555">{note}</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">\n<rect width="100%" height="100%" '
           f'fill="white"/>\n' + "\n".join(body) + "\n</svg>\n")
    with open(path, "w") as f:
        f.write(svg)
    print(f"wrote {path}", file=sys.stderr)


def collect(results, pattern):
    """{group: {x: result}} for the names matching pattern (groups 'group' and 'x')."""
    groups = {}
    for r in results:
        m = re.fullmatch(pattern, r["name"])
        if m:
            groups.setdefault(m["group"], {})[int(m["x"])] = r
    return groups


def points(rows, side, x_of=lambda x: x):
    return sorted((x_of(x), r[side]) for x, r in rows.items() if r[side])


def skipped(groups, side_names=("lumen", "pytorch")):
    notes = []
    for group, rows in groups.items():
        for x, r in sorted(rows.items()):
            for side in side_names:
                if r.get(side + "_skipped"):
                    notes.append(f"{group} {x}: {side} skipped ({r[side + '_skipped']})")
    return notes[:8]


def attention_plots(results, out):
    for kind, suffix, ylabel in (("time", "", "ms per forward + backward"),
                                 ("memory", "_mem", "MB peak (RSS growth)")):
        groups = collect(results, r"attn_(?P<group>.+)_n(?P<x>\d+)" + suffix)
        if not groups:
            continue
        colors = dict(zip(groups, COLORS * 2))
        xs = sorted({x for rows in groups.values() for x in rows})
        panels = [(f"{who}: attention {kind} vs N", "tokens N (C = 256, 8 heads, batch 1)",
                   ylabel, [(g, colors[g], False, points(rows, side)) for g, rows in groups.items()],
                   [(x, str(x)) for x in xs])
                  for who, side in (("lumen", "lumen"), ("PyTorch", "pytorch"))]
        legend = [(g, colors[g], False) for g in groups]
        figure(os.path.join(out, f"bench_attention_{kind}.svg"), panels, legend,
               skipped(groups, ("lumen",)))


def study_plot(results, out, prefix, name, xlabel, to_x, xticks, title):
    time = collect(results, prefix + r"(?P<group>[a-z]+)_[rp](?P<x>\d+)")
    memory = collect(results, prefix + r"(?P<group>[a-z]+)_[rp](?P<x>\d+)_mem")
    if not time:
        return
    colors = dict(zip(time, COLORS))
    panels = []
    for groups, ylabel in ((time, "ms per step"), (memory, "MB peak (RSS growth)")):
        series = []
        for g, rows in groups.items():
            series.append((g, colors[g], False, points(rows, "lumen", to_x)))
            series.append((g, colors[g], True, points(rows, "pytorch", to_x)))
        panels.append((f"{title}: {ylabel.split(' ')[0]}", xlabel, ylabel, series, xticks))
    legend = [(f"{g} lumen", colors[g], False) for g in time] + \
             [(f"{g} PyTorch", colors[g], True) for g in time]
    figure(os.path.join(out, name), panels, legend, skipped(time))


def main():
    results_path, out = sys.argv[1:3]
    results = json.load(open(results_path))["results"]
    os.makedirs(out, exist_ok=True)
    attention_plots(results, out)
    resolutions = [224, 512, 1024, 2048]
    study_plot(results, out, "sfree_", "bench_sfree_scaling.svg", "input resolution (patch 16)",
               lambda r: r, [(r, f"{r}²") for r in resolutions], "softmax-free ViT")
    patches = [32, 16, 8, 4]
    study_plot(results, out, "ctx_", "bench_context_scaling.svg", "patch size (512² image)",
               lambda p: 512 // p, [(512 // p, f"p{p}") for p in patches], "context ViT")


if __name__ == "__main__":
    main()
