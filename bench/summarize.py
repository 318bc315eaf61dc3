"""Pairs the JSON lines of lumen (bench_*) and PyTorch (torch_*.py) that bench/run.sh collected
and writes <stem>.json ({machine, date, threads, pytorch_version, results: [{name, unit, lumen,
pytorch, speedup, ...}]}) and <stem>.md (the table, also printed). speedup = PyTorch time / lumen
time (> 1: lumen faster); for memory ("MB peak") PyTorch MB / lumen MB (> 1: lumen smaller).
Also records the run's wall time and the machine's load average (timings on a busy machine are
noisy). Usage: summarize.py lumen.jsonl torch.jsonl STEM THREADS WALL_SECONDS"""
import datetime
import json
import os
import platform
import socket
import subprocess
import sys


def load(path):
    """name -> the best row over rounds (least time, or least memory); skipped rows kept."""
    rows = {}
    for line in open(path):
        row = json.loads(line)
        old = rows.get(row["name"])
        if old is None or old.get("skipped") or (not row.get("skipped") and cost(row) < cost(old)):
            rows[row["name"]] = row
    return rows


def cost(row):
    return row["value"] if is_memory(row) else row["ms"]


def is_memory(row):
    return row["unit"].startswith("MB")


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def entry(name, mine, theirs):
    """One result: values in the unit, speedup, the timings and the reasons for skips."""
    result = {"name": name, "unit": mine["unit"], "lumen": mine.get("value"),
              "pytorch": theirs.get("value") if theirs else None, "speedup": None}
    ran = result["lumen"] is not None and result["pytorch"] is not None
    if ran and is_memory(mine) and result["lumen"] > 0:
        result["speedup"] = round(result["pytorch"] / result["lumen"], 3)
    elif ran and not is_memory(mine) and mine["ms"] > 0:
        result["speedup"] = round(theirs["ms"] / mine["ms"], 3)
    if not is_memory(mine):
        result["lumen_ms"] = mine.get("ms")
        result["pytorch_ms"] = theirs.get("ms") if theirs else None
    if "allocator_mb" in mine:
        result["lumen_allocator_mb"] = mine["allocator_mb"]
    for side, row in (("lumen", mine), ("pytorch", theirs or {})):
        if row.get("skipped"):
            result[side + "_skipped"] = row["skipped"]
    return result


def cell(result, side):
    value = result[side]
    if value is None:
        why = result.get(side + "_skipped")
        return f"skipped: {why}" if why else "n/a"
    text = f"{value:.1f} {result['unit']}"
    if side == "lumen" and "lumen_allocator_mb" in result:
        text += f" (allocator {result['lumen_allocator_mb']:.1f})"
    if result.get(side + "_ms") is not None and result["unit"] != "ms":
        text += f" ({result[side + '_ms']:.2f} ms)"
    return text


def table(results, title):
    lines = [title, "", "| workload | lumen | PyTorch | speedup |", "|---|---|---|---|"]
    for r in results:
        speedup = f"{r['speedup']:.2f}" if r["speedup"] is not None else "n/a"
        lines.append(f"| {r['name']} | {cell(r, 'lumen')} | {cell(r, 'pytorch')} | {speedup} |")
    lines += ["", "speedup = PyTorch time / lumen time (> 1: lumen is faster); for \"MB peak\" "
              "entries PyTorch MB / lumen MB (> 1: lumen needs less). Times are medians over "
              "repeats after warm-up (the best over rounds); MB peak = growth of the process's "
              "peak RSS during the first forward + backward in a fresh process, the lumen "
              "allocator's peak beside it."]
    return "\n".join(lines) + "\n"


def main():
    lumen_file, torch_file, stem, threads, wall = sys.argv[1:6]
    loadavg = [round(x, 2) for x in os.getloadavg()]
    lumen = load(lumen_file)
    torch_rows = load(torch_file) if os.path.exists(torch_file) else {}
    python = os.environ.get("PYTHON", "/usr/bin/python3")
    torch_version = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    machine = os.environ.get("MACHINE") or \
        f"{socket.gethostname()}: {cpu_model()}, {os.cpu_count()} cores"
    date = datetime.date.today().isoformat()
    results = [entry(name, row, torch_rows.get(name)) for name, row in lumen.items()]
    before = os.environ.get("BENCH_LOAD_BEFORE", "?")
    title = (f"# lumen vs PyTorch {torch_version} ({machine}, {threads} threads, {date})\n\n"
             f"Wall time {int(wall) / 60:.1f} min. Load average (1, 5, 15 min) before the run "
             f"{before}, at its end {' '.join(map(str, loadavg))}; the run itself adds about "
             f"{threads}.")
    text = table(results, title)
    print(text)
    open(stem + ".md", "w").write(text)
    with open(stem + ".json", "w") as f:
        json.dump({"machine": machine, "date": date, "threads": int(threads),
                   "pytorch_version": torch_version, "wall_seconds": int(wall),
                   "load_before": before, "load_after": loadavg, "results": results}, f,
                  indent=1)
    print(f"wrote {stem}.md and {stem}.json", file=sys.stderr)


if __name__ == "__main__":
    main()
