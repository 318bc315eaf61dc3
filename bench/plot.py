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
          "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#000000", "#637939", "#843c39", "#5254a3"]
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


def y_range(series):
    """Whole decades around every y of the series."""
    ys = [y for _, _, _, pts in series for _, y in pts]
    return 10 ** math.floor(math.log10(min(ys))), 10 ** math.ceil(math.log10(max(ys)))


def log_scale(value, low, high, start, end):
    """Where value falls between start (at low) and end (at high) on a log axis."""
    fraction = (math.log(value) - math.log(low)) / (math.log(high) - math.log(low))
    return start + fraction * (end - start)


def text(x, y, label, anchor="middle", extra=""):
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{label}</text>'


def line(x1, y1, x2, y2, color="#ddd", extra=""):
    return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}"'
            f'{extra}/>')


def panel(x0, title, xlabel, ylabel, series, xticks, yrange=None):
    """One log-log chart at horizontal offset x0. series: [(label, color, dashed, [(x, y)])];
    yrange: (low, high), default the series' decades."""
    if not any(pts for _, _, _, pts in series):
        return ""
    xs = [x for _, _, _, pts in series for x, _ in pts] + [x for x, _ in xticks]
    xlo, xhi = min(xs) / 1.3, max(xs) * 1.3
    ylo, yhi = yrange or y_range(series)
    left, right, top, bottom = x0 + MARGIN, x0 + WIDTH - 10, 30, HEIGHT - 45

    def sx(x):
        return log_scale(x, xlo, xhi, left, right)

    def sy(y):
        return log_scale(y, ylo, yhi, bottom, top)

    out = [text((left + right) / 2, 18, title, extra=' font-weight="bold"'),
           f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
           f'fill="none" stroke="#444"/>']
    for value, labeled in log_ticks(ylo, yhi):
        out.append(line(left, sy(value), right, sy(value)))
        if labeled:
            out.append(text(left - 4, sy(value) + 4, number(value), "end"))
    for value, label in xticks:
        out += [line(sx(value), top, sx(value), bottom), text(sx(value), bottom + 14, label)]
    out.append(text((left + right) / 2, bottom + 32, xlabel))
    out.append(f'<text transform="translate({x0 + 14},{(top + bottom) / 2}) rotate(-90)" '
               f'text-anchor="middle">{ylabel}</text>')
    for _, color, dashed, pts in series:
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="5,3"' if dashed else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                   f'stroke-width="1.8"{dash}/>')
        out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{color}"/>'
                for x, y in pts]
    return "\n".join(out)


def figure(path, panels, legend, notes):
    """panels: [(title, xlabel, ylabel, series, xticks[, yrange])]; legend: [(label, color,
    dashed)]; notes: lines of text under the legend."""
    rows = (len(legend) + 3) // 4
    height = HEIGHT + 18 * rows + 16 * len(notes) + 10
    width = WIDTH * len(panels)
    body = [panel(i * WIDTH, *p) for i, p in enumerate(panels)]
    for i, (label, color, dashed) in enumerate(legend):
        x, y = 20 + (i % 4) * (width - 40) / 4, HEIGHT + 18 * (i // 4) + 4
        dash = ' stroke-dasharray="5,3"' if dashed else ""
        body += [line(x, y, x + 24, y, color, ' stroke-width="2"' + dash),
                 text(x + 30, y + 4, label, "start")]
    for i, note in enumerate(notes):
        body.append(text(20, HEIGHT + 18 * rows + 16 * i + 12, note, "start", ' fill="#555"'))
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


def skipped(groups):
    """'<group> <x>: [<side>] skipped (<why>)' for each point a side did not run."""
    notes = []
    for group, rows in groups.items():
        for x, r in sorted(rows.items()):
            why = {side: r.get(side + "_skipped") for side in ("lumen", "pytorch")}
            if why["lumen"] and why["lumen"] == why["pytorch"]:
                notes.append(f"{group} {x}: skipped ({why['lumen']})")
                continue
            notes += [f"{group} {x}: {side} skipped ({why[side]})" for side in why if why[side]]
    return notes[:8]


def attention_plots(results, out, memory_label):
    for kind, suffix, ylabel in (("time", "", "ms per forward + backward"),
                                 ("memory", "_mem", "MB peak " + memory_label)):
        groups = collect(results, r"attn_(?P<group>.+)_n(?P<x>\d+)" + suffix)
        if not groups:
            continue
        colors = dict(zip(groups, COLORS * 2))
        xs = sorted({x for rows in groups.values() for x in rows})
        sides = {side: [(g, colors[g], False, points(rows, side)) for g, rows in groups.items()]
                 for side in ("lumen", "pytorch")}
        shared = y_range(sides["lumen"] + sides["pytorch"])  # one scale: compare the panels
        panels = [(f"{who}: attention {kind} vs N", "tokens N (C = 256, 8 heads, batch 1)",
                   ylabel, sides[side], [(x, str(x)) for x in xs], shared)
                  for who, side in (("lumen", "lumen"), ("PyTorch", "pytorch"))]
        legend = [(g, colors[g], False) for g in groups]
        figure(os.path.join(out, f"bench_attention_{kind}.svg"), panels, legend, skipped(groups))


def study_plot(results, out, prefix, name, xlabel, to_x, xticks, titles, memory_label):
    """Time and memory panels of one scaling study; titles: (time title, its y label)."""
    time = collect(results, prefix + r"(?P<group>[a-z]+)_[rp](?P<x>\d+)")
    memory = collect(results, prefix + r"(?P<group>[a-z]+)_[rp](?P<x>\d+)_mem")
    if not time:
        return
    colors = dict(zip(time, COLORS))
    panels = []
    for groups, (title, ylabel) in ((time, titles), (memory, ("peak memory", "MB " + memory_label))):
        series = []
        for g, rows in groups.items():
            series.append((g, colors[g], False, points(rows, "lumen", to_x)))
            series.append((g, colors[g], True, points(rows, "pytorch", to_x)))
        panels.append((title, xlabel, ylabel, series, xticks))
    legend = [(f"{g} lumen", colors[g], False) for g in time] + \
             [(f"{g} PyTorch", colors[g], True) for g in time]
    figure(os.path.join(out, name), panels, legend, skipped(time))


def main():
    results_path, out = sys.argv[1:3]
    run = json.load(open(results_path))
    results = run["results"]
    # On a GPU the memory figures are allocator peaks (lumen's, PyTorch's max_memory_allocated).
    memory_label = "(RSS growth)" if run.get("device", "cpu") == "cpu" else "(GPU allocator)"
    os.makedirs(out, exist_ok=True)
    attention_plots(results, out, memory_label)
    # The studies' settings (bench_scaling.cpp): resolutions at patch 16; patches on 512².
    resolutions = [224, 512, 1024, 2048]
    study_plot(results, out, "sfree_", "bench_sfree_scaling.svg",
               "input resolution (patch 16, batch 1)", lambda r: r,
               [(r, f"{r}²") for r in resolutions],
               ("softmax-free ViT: training step", "ms per step"), memory_label)
    patches = [32, 16, 8, 4]
    study_plot(results, out, "ctx_", "bench_context_scaling.svg",
               "patch size (512² image, batch 1): tokens", lambda p: (512 // p) ** 2,
               [((512 // p) ** 2, f"p{p}: {(512 // p) ** 2}") for p in patches],
               ("context ViT: forward + backward", "ms"), memory_label)


if __name__ == "__main__":
    main()
