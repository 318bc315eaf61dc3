#!/usr/bin/env python3
"""Every tiny config of configs/ through the CLI, a few steps each (ctest `tiny_configs`).

For each configs/*/*_tiny.json: `lumen train` for 3 optimizer steps (the demo dataset is made
on first use, as data.make_demo says), then `lumen eval` (which must write eval_test.json and a
per-case eval_test.csv with one row per test case), then, for the tasks that predict files,
`lumen predict` on two test inputs, whose outputs are opened with Pillow (PNG: the input
image's size, class ids within the model's classes) and nibabel (NIfTI: the input volume's
shape and affine, also when the config reorients or resamples), or read from predictions.csv
(classifiers of volumes, bags and text: one row per input, probabilities summing to 1; a text
run keeps its vocabulary in vocab.txt). Runs in a temporary folder; exits non-zero on the
first failure.

usage: check_tasks.py LUMEN_BINARY CONFIGS_DIR [NAME_FILTER]
"""
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile

import nibabel
import numpy as np
from PIL import Image


def run(cmd, cwd):
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def check_predictions(lumen, cwd, run_dir, config, out):
    data = config["data"]
    layout, root = data["dataset"], os.path.join(cwd, data.get("dir", ""))
    if layout == "image_mask":
        inputs = sorted(glob.glob(os.path.join(root, "test", "images", "*.png")))[:2]
    elif layout == "decathlon":
        inputs = sorted(glob.glob(os.path.join(root, "imagesTs", "*.nii.gz")))[:2]
    elif layout == "volume_folder":
        inputs = sorted(glob.glob(os.path.join(root, "test", "*", "*.nii.gz")))[:2]
    elif layout == "bags":
        inputs = sorted(glob.glob(os.path.join(root, "bags", "*.npy")))[:2]
    elif layout == "text_csv":
        inputs = [os.path.join(root, "test.csv")]
        assert os.path.isfile(os.path.join(run_dir, "vocab.txt")), "no vocab.txt in the run"
    else:
        return 0
    pred_dir = os.path.join(cwd, "pred_" + config["name"])
    run([lumen, "predict", run_dir, *inputs, "--out", pred_dir], cwd)
    if layout in ("volume_folder", "bags", "text_csv"):
        rows = list(csv.reader(open(os.path.join(pred_dir, "predictions.csv"))))
        expected = len(inputs) if layout != "text_csv" else \
            len(list(csv.reader(open(inputs[0])))) - 1
        assert len(rows) - 1 == expected, (len(rows), expected)
        for row in rows[1:]:
            p = [float(v) for v in row[2:]]
            assert abs(sum(p) - 1) < 1e-4 and row[1] == rows[0][2 + int(np.argmax(p))][2:], row
        out.write(f"  predict: predictions.csv with {expected} rows\n")
        return expected
    classes = config["model"].get("n_classes", config["model"].get("num_classes",
                                   config["model"].get("out_channels")))
    for path in inputs:
        stem = os.path.basename(path).split(".")[0]
        if path.endswith(".png"):
            pred = Image.open(os.path.join(pred_dir, stem + "_seg.png"))
            image = Image.open(path)
            assert pred.size == image.size, (pred.size, image.size)
            values = np.asarray(pred)
            assert values.max() < classes, (values.max(), classes)
        else:
            pred = nibabel.load(os.path.join(pred_dir, stem + "_seg.nii.gz"))
            image = nibabel.load(path)
            assert pred.shape == image.shape[:3], (pred.shape, image.shape)
            assert np.allclose(pred.affine, image.affine, atol=1e-5), (pred.affine, image.affine)
            assert np.asarray(pred.dataobj).max() < classes
    out.write(f"  predict: {len(inputs)} files open in "
              f"{'Pillow' if inputs[0].endswith('.png') else 'nibabel'} with the input's geometry\n")
    return len(inputs)


def main():
    lumen, configs = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    name_filter = sys.argv[3] if len(sys.argv) > 3 else ""
    paths = sorted(glob.glob(os.path.join(configs, "*", "*_tiny.json")))
    paths = [p for p in paths if name_filter in p]
    if not paths:
        sys.exit(f"FAIL: no *_tiny.json under {configs}")
    with tempfile.TemporaryDirectory() as cwd:
        for path in paths:
            config = json.load(open(path))
            out = run([lumen, "train", path, "--set", "train.max_steps=3", "--set",
                       "output.runs_dir=runs", "--set", "output.progress=lines"], cwd)
            run_dir = os.path.join(cwd, "runs", config["name"])
            summary = json.load(open(os.path.join(run_dir, "summary.json")))
            assert summary["steps"] == 3, summary
            run([lumen, "eval", run_dir], cwd)
            metrics = json.load(open(os.path.join(run_dir, "eval_test.json")))
            rows = list(csv.reader(open(os.path.join(run_dir, "eval_test.csv"))))
            assert rows[0][0] == "case" and len(rows) - 1 == metrics["count"], (rows[0], metrics)
            sys.stdout.write(f"{os.path.relpath(path, configs)}: 3 steps, {summary['task']}, "
                             f"eval {metrics['count']} cases: " +
                             ", ".join(f"{k} {v:.3f}" for k, v in sorted(metrics["metrics"].items())
                                       if v is not None and not k.startswith(("dice_", "iou_",
                                                                              "hd95_")))
                             + "\n")
            check_predictions(lumen, cwd, run_dir, config, sys.stdout)
    print(f"{len(paths)} tiny configs trained, evaluated and predicted")


if __name__ == "__main__":
    main()
