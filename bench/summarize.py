"""Pairs the JSON lines of lumen and PyTorch that bench/run.sh collected into <stem>.json
({machine, date, threads, pytorch_version, device, results: [{name, unit, lumen, pytorch,
speedup}]}, plus wall time and load average) and <stem>.md. BENCH_DEVICE (cpu or cuda[:i])
and BENCH_GPU (its name) come from run.sh. speedup = PyTorch time / lumen time; for memory
("MB peak") PyTorch MB / lumen MB: > 1 is better for lumen.
Usage: summarize.py lumen.jsonl torch.jsonl STEM THREADS WALL_SECONDS"""
import datetime
import json
import math
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


# The entries of the headline table (README "Performance"), when present.
HEADLINE = ["sgemm_1024", "conv3x3_b8_c64_56", "layer_norm_64x1024x256", "attn_mhsa_n4096",
            "attn_mhsa_n4096_mem", "attn_seqnorm_n16384", "attn_seqnorm_n16384_mem",
            "attn_hyena_n16384", "attn_mamba_n4096", "vit_train_step", "dgvit_train_step",
            "sfree_softmax_r1024", "sfree_seqnorm_r2048", "ctx_attn_p8", "ctx_hyena_p4",
            "ctx_mamba_p8"]
NOTE = ("speedup = PyTorch time / lumen time (> 1: lumen is faster); for \"MB peak\" entries "
        "PyTorch MB / lumen MB (> 1: lumen needs less). Times are medians over repeats after "
        "warm-up (the best over rounds); MB peak = growth of the process's peak RSS during the "
        "first forward + backward in a fresh process, the lumen allocator's peak beside it.")
NOTE_CUDA = ("speedup = PyTorch time / lumen time (> 1: lumen is faster); for \"MB peak\" "
             "entries PyTorch MB / lumen MB (> 1: lumen needs less). Times are medians over "
             "repeats after warm-up, each run waiting for the GPU (the best over rounds); "
             "MB peak = the GPU allocator's peak of live bytes during the first forward + "
             "backward in a fresh process over those allocated before it (lumen's caching "
             "allocator; PyTorch's max_memory_allocated). FP32 on both sides (TF32 off).")


def table(results):
    lines = ["| workload | lumen | PyTorch | speedup |", "|---|---|---|---|"]
    for r in results:
        if r["unit"] == "parameters":
            continue
        speedup = f"{r['speedup']:.2f}" if r["speedup"] is not None else "n/a"
        theirs = cell(r, "pytorch")
        if r.get("pytorch_skipped") and r["pytorch_skipped"] == r.get("lumen_skipped"):
            theirs = "skipped (same)"
        lines.append(f"| {r['name']} | {cell(r, 'lumen')} | {theirs} | {speedup} |")
    return lines


# PyTorch's side of these is a Python loop over the tokens (no CPU kernel): left out of the
# second geometric mean.
PYTHON_LOOP_REFERENCES = ("attn_mamba_", "ctx_mamba_", "selective_scan_")


def geometric_mean_speedup(results):
    def mean(rows):
        speedups = [r["speedup"] for r in rows
                    if r["speedup"] and not is_memory(r) and r["unit"] != "parameters"]
        if not speedups:
            return float("nan"), 0
        return math.exp(sum(map(math.log, speedups)) / len(speedups)), len(speedups)

    if not any(r["speedup"] for r in results):
        return "no entry ran on both sides"
    everything, count = mean(results)
    kernels, _ = mean([r for r in results if not r["name"].startswith(PYTHON_LOOP_REFERENCES)
                       and "_mamba" not in r["name"]])
    return (f"Geometric mean of the time speedups over {count} entries: {everything:.2f} "
            f"({kernels:.2f} without the Mamba scans, whose PyTorch side is a Python loop)")


def context_table(results):
    """Context paper, Table 2: time of attention / time of Hyena or Mamba, per patch size."""
    by_name = {r["name"]: r for r in results}
    patches = [p for p in (32, 16, 8, 4) if f"ctx_attn_p{p}" in by_name]
    lines = ["| mixer | side | " + " | ".join(f"p{p}" for p in patches) + " |",
             "|---|---|" + "---|" * len(patches)]
    for mixer in ("hyena", "mamba"):
        for side in ("lumen", "pytorch"):
            cells = []
            for p in patches:
                attn, other = by_name[f"ctx_attn_p{p}"], by_name.get(f"ctx_{mixer}_p{p}", {})
                if attn[side] is None or other.get(side) is None:
                    cells.append("attention skipped" if attn[side] is None else "skipped")
                else:
                    cells.append(f"{attn[side] / other[side]:.2f}x")
            lines.append(f"| {mixer} | {side} | " + " | ".join(cells) + " |")
    return lines if patches else []


def model_table(results):
    """Issue 21's per-model table (bench/bench_models.cpp): step time, peak memory and the
    activation memory that checkpointing saves, with the targets met or missed. Activation
    memory (_act) = what the first forward keeps for the backward; saved = 1 - checkpointed /
    plain."""
    by_name = {r["name"]: r for r in results}
    models = [r["name"][len("step_"):-len("_params")] for r in results
              if r["unit"] == "parameters" and r["name"].startswith("step_")]
    if not models:
        return []

    def value(name, side):
        return by_name.get(name, {}).get(side)

    def fmt(x, spec=".0f"):
        return "n/a" if x is None else format(x, spec)

    lines = ["| model | parameters | step ms lumen | PyTorch | speedup | peak MB lumen | PyTorch | "
             "ckpt ms lumen | PyTorch | ckpt peak MB lumen | PyTorch | activation saved lumen | "
             "PyTorch |", "|---|" + "---|" * 12]
    met = {"speed": [0, 0], "memory": [0, 0], "saving": [0, 0]}
    for m in models:
        step, ckpt = "step_" + m, "ckpt_" + m
        params = value(step + "_params", "lumen")
        theirs = value(step + "_params", "pytorch")
        count = f"{params / 1e6:.2f} M" if params else "n/a"
        if params and theirs and theirs != params:
            count += f" (PyTorch {theirs / 1e6:.2f} M)"
        saved = {}
        for side in ("lumen", "pytorch"):
            plain, recomputed = value(step + "_act", side), value(ckpt + "_act", side)
            if plain is not None and recomputed is not None and plain > 0:
                saved[side] = 1 - recomputed / plain
        speedup = by_name.get(step, {}).get("speedup")
        mem = (value(step + "_mem", "lumen"), value(step + "_mem", "pytorch"))
        for key, ok in (("speed", None if speedup is None else speedup >= 1.2),
                        ("memory", None if None in mem else mem[0] <= mem[1]),
                        ("saving", None if "lumen" not in saved else saved["lumen"] >= 0.4)):
            if ok is not None:
                met[key][0] += ok
                met[key][1] += 1
        lines.append(" | ".join([
            f"| {m}", count, fmt(value(step, "lumen")), fmt(value(step, "pytorch")),
            fmt(speedup, ".2f"), fmt(mem[0]), fmt(mem[1]), fmt(value(ckpt, "lumen")),
            fmt(value(ckpt, "pytorch")), fmt(value(ckpt + "_mem", "lumen")),
            fmt(value(ckpt + "_mem", "pytorch")),
            "n/a" if "lumen" not in saved else f"{saved['lumen']:.0%}",
            "n/a" if "pytorch" not in saved else f"{saved['pytorch']:.0%}"]) + " |")
    lines += ["", "Targets met (issue 21): speed >= 1.2x PyTorch in {}/{} models, peak memory <= "
              "PyTorch's in {}/{}, checkpointing saving >= 40% of the activation memory in "
              "{}/{}.".format(*met["speed"], *met["memory"], *met["saving"])]
    return lines


def markdown(results, title, note=NOTE):
    lines = [title, ""]
    headline = [r for name in HEADLINE for r in results if r["name"] == name]
    if headline:
        lines += ["## Headline", ""] + table(headline) + [""]
    lines += [geometric_mean_speedup(results) + ".", ""]
    context = context_table(results)
    if context:
        lines += ["## Context-length paper, Table 2: attention time / mixer time (> 1: the mixer "
                  "is faster)", ""] + context + [""]
    models = model_table(results)
    if models:
        lines += ["## Paper models: one training step (bench/models.json)", ""] + models + [
            "", "Activation memory = what the first forward keeps for the backward (lumen: tensor "
            "bytes live at the loss over those at the start of the forward; PyTorch: growth of the "
            "resident memory over the same span); saved = 1 - checkpointed / plain. Peak MB = the "
            "whole first step's peak RSS growth (gradients and AdamW moments included). ckpt: "
            "grad_checkpointing 1 (lumen), torch.utils.checkpoint around the same blocks "
            "(PyTorch).", ""]
    lines += ["## All results", ""] + table(results) + ["", note]
    return "\n".join(lines) + "\n"


def main():
    lumen_file, torch_file, stem, threads, wall = sys.argv[1:6]
    loadavg = [round(x, 2) for x in os.getloadavg()]
    lumen = load(lumen_file)
    torch_rows = load(torch_file) if os.path.exists(torch_file) else {}
    python = os.environ.get("PYTHON", "/usr/bin/python3")
    torch_version = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    host = os.environ.get("MACHINE") or socket.gethostname()
    device = os.environ.get("BENCH_DEVICE", "cpu")
    machine = f"{host}: {cpu_model()}, {os.cpu_count()} cores"
    if device != "cpu":
        machine += f", {os.environ.get('BENCH_GPU', 'GPU')} ({device})"
    date = datetime.date.today().isoformat()
    results = [entry(name, row, torch_rows.get(name)) for name, row in lumen.items()]
    before = os.environ.get("BENCH_LOAD_BEFORE", "?")
    title = (f"# lumen vs PyTorch {torch_version} ({machine}, {threads} threads, {date})\n\n"
             f"Wall time {int(wall) / 60:.1f} min. Load average (1, 5, 15 min) before the run "
             f"{before}, at its end {' '.join(map(str, loadavg))}; the run itself adds about "
             f"{threads}.")
    text = markdown(results, title, NOTE if device == "cpu" else NOTE_CUDA)
    print(text)
    open(stem + ".md", "w").write(text)
    with open(stem + ".json", "w") as f:
        json.dump({"machine": machine, "date": date, "threads": int(threads),
                   "pytorch_version": torch_version, "device": device, "wall_seconds": int(wall),
                   "load_before": before, "load_after": loadavg, "results": results}, f,
                  indent=1)
    print(f"wrote {stem}.md and {stem}.json", file=sys.stderr)


if __name__ == "__main__":
    main()
