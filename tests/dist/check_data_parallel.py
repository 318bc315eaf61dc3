#!/usr/bin/env python3
"""Data-parallel `lumen train` under mpirun (ctest `data_parallel`, registered when MPI is built).

1. Equivalence: 2 ranks with batch 8 end (after 20 steps, float32, with dropout, attention
   dropout, drop path and random flips) with the weights of one process with batch 16, within
   1e-5 relative (per tensor: max |a - b| / max |b|), and their sharded evaluation gives the
   same test accuracy and loss; only rank 0 writes a run directory.
2. Resume with another number of ranks: 2 ranks stop after epoch 1 of 2, one process resumes
   with batch 16 and ends with the weights of the one-process run; the same from inside an
   epoch, 2 ranks resumed by one process and one process by 2 ranks; a batch size that does
   not divide the examples already used is refused.
3. Faults: a config that differs across ranks is refused at the start naming the rank; a rank
   that fails (a config file it cannot read), a rank killed by SIGKILL and a rank stopped by
   SIGSTOP (the others give up after LUMEN_DIST_TIMEOUT) end the job within a timeout instead
   of leaving the others waiting.
4. Synchronized batch norm (train.sync_batchnorm): a model with batch norms (SimA-ViT's conv
   stem) on 2 ranks with batch 8 ends with the weights and running statistics of one process
   with batch 16, within 1e-5 relative; without it they differ.
Runs in a temporary folder; exits non-zero on the first failure.

usage: check_data_parallel.py LUMEN_BINARY MPIRUN
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
import safetensors_io  # noqa: E402

CONFIG = {
    "name": "dp",
    "seed": 3,
    # 160 images: 10 steps of 16 (or 2 x 8) per epoch, no padding of the shards.
    # Random flips: drawn per example from (seed, epoch, index), whichever rank loads it.
    "data": {"dataset": "synthetic", "batch_size": 16, "train_subset": 160, "test_subset": 64,
             "num_workers": 1, "hflip": 0.5},
    # Dropout masks are keyed per sample (core/sample_shard.h): each rank draws its rows of the
    # one-process batch's masks, so the runs agree with every kind of dropout on.
    "model": {"name": "dgvit", "embed_dim": 16, "depth": 1, "num_heads": 2, "patch_size": 7,
              "drop": 0.1, "attn_drop": 0.1, "drop_path": 0.1},
    "optim": {"lr": 0.003},
    "schedule": {"name": "cosine", "interval": "step", "warmup": 3},
    "train": {"epochs": 2, "log_every": 2, "threads": 1},
    "output": {"progress": "lines"},
}
TIMEOUT = 120  # seconds a run may take before it counts as a hang


def run(cmd, cwd, expect_ok=True):
    try:
        result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        sys.exit(f"FAIL (hung for {TIMEOUT} s): {' '.join(cmd)}")
    output = result.stdout + result.stderr
    if (result.returncode == 0) != expect_ok:
        sys.exit(f"FAIL (exit status {result.returncode}): {' '.join(cmd)}\n{output[-3000:]}")
    return output


def max_relative_difference(path_a, path_b):
    a, b = safetensors_io.load(path_a), safetensors_io.load(path_b)
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    worst = 0.0
    for name in a:
        scale = max(float(np.abs(b[name]).max()), 1e-30)
        diff = float(np.abs(a[name].astype(np.float64) - b[name].astype(np.float64)).max())
        worst = max(worst, diff / scale)
    return worst


def check_like_one(cwd, name, what):
    """The run `name`/dp ends with the one-process run's weights, within 1e-5 relative."""
    difference = max_relative_difference(os.path.join(cwd, name, "dp/model.safetensors"),
                                         os.path.join(cwd, "one/dp/model.safetensors"))
    print(f"{what}: max relative difference {difference:.2e}")
    assert difference <= 1e-5, difference


def children(pid):
    """The processes whose parent is `pid` (mpirun's ranks on this machine)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(pid):
            found.append(int(entry))
    return found


def check_stopped_rank(mpi, train, cwd):
    """A rank stopped (alive, never answering): the other must give up after the timeout."""
    cmd = mpi + ["-x", "LUMEN_DIST_TIMEOUT=3", "-np", "2"] + train + [
        "--set", "output.runs_dir=stopped", "--set", "train.epochs=1000"]
    process = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    time.sleep(2)
    ranks = children(process.pid)
    assert len(ranks) == 2 and process.poll() is None, (ranks, process.poll())
    os.kill(ranks[-1], signal.SIGSTOP)
    try:
        output, _ = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        for rank in ranks:
            os.kill(rank, signal.SIGKILL)
        sys.exit("FAIL: a stopped rank left the job hanging")
    assert process.returncode != 0 and "did not complete within 3 s" in output, output[-2000:]


def check_sync_batchnorm(mpi, lumen, cwd):
    """2 ranks x batch 8 with synchronized batch norm train like 1 x batch 16."""
    config = json.loads(json.dumps(CONFIG))
    config["name"] = "bn"
    config["data"]["resize"] = [32, 32]
    config["model"] = {"name": "sima_vit", "embed_dim": 16, "depth": 1, "num_heads": 2,
                       "patch_size": 8, "in_chans": 1, "num_classes": 10, "cls_attn_layers": 1}
    config["train"]["sync_batchnorm"] = True
    with open(os.path.join(cwd, "bn.json"), "w") as f:
        json.dump(config, f)
    train = [lumen, "train", "bn.json"]
    two = ["--set", "data.batch_size=8"]
    run(train + ["--set", "output.runs_dir=bn_one"], cwd)
    run(mpi + ["-np", "2"] + train + two + ["--set", "output.runs_dir=bn_two"], cwd)
    run(mpi + ["-np", "2"] + train + two + ["--set", "output.runs_dir=bn_local",
                                            "--set", "train.sync_batchnorm=false"], cwd)
    one = os.path.join(cwd, "bn_one/bn/model.safetensors")
    synced = max_relative_difference(os.path.join(cwd, "bn_two/bn/model.safetensors"), one)
    local = max_relative_difference(os.path.join(cwd, "bn_local/bn/model.safetensors"), one)
    print(f"batch norm, 2 ranks x batch 8 vs 1 x batch 16 after 20 steps: max relative "
          f"difference {synced:.2e} synchronized, {local:.2e} per rank")
    assert synced <= 1e-5 and local > 1e-3, (synced, local)


def main():
    lumen, mpirun = os.path.abspath(sys.argv[1]), sys.argv[2]
    mpi = [mpirun, "--allow-run-as-root", "--oversubscribe"]
    with tempfile.TemporaryDirectory(prefix="lumen_dp_") as cwd:
        with open(os.path.join(cwd, "dp.json"), "w") as f:
            json.dump(CONFIG, f)
        train = [lumen, "train", "dp.json"]

        run(train + ["--set", "output.runs_dir=one"], cwd)
        run(mpi + ["-np", "2"] + train + ["--set", "output.runs_dir=two",
                                          "--set", "data.batch_size=8"], cwd)
        assert os.listdir(os.path.join(cwd, "two")) == ["dp"], os.listdir(os.path.join(cwd, "two"))
        check_like_one(cwd, "two", "2 ranks x batch 8 vs 1 x batch 16 after 20 steps")
        # The evaluation is sharded too (each rank a block of the test set, metrics gathered).
        one, two = (json.load(open(os.path.join(cwd, d, "dp/summary.json"))) for d in ("one", "two"))
        assert one["test_accuracy"] == two["test_accuracy"], (one, two)
        assert abs(one["test_loss"] - two["test_loss"]) <= 1e-5 * abs(one["test_loss"]), (one, two)
        print(f"test accuracy {two['test_accuracy']} and loss {two['test_loss']:.6f} "
              f"(one process: {one['test_loss']:.6f})")

        # lumen eval under mpirun: each rank a block of the test set, the same files as one
        # process writes (rank 0 writes them).
        run([lumen, "eval", "one/dp"], cwd)
        single = {ext: open(os.path.join(cwd, "one/dp/eval_test." + ext)).read()
                  for ext in ("json", "csv")}
        run(mpi + ["-np", "2", lumen, "eval", "one/dp"], cwd)
        sharded = json.load(open(os.path.join(cwd, "one/dp/eval_test.json")))
        alone = json.loads(single["json"])
        for key in ("count", "metrics", "confusion_matrix"):
            assert sharded.get(key) == alone.get(key), (key, sharded, alone)
        assert abs(sharded["loss"] - alone["loss"]) <= 1e-6 * abs(alone["loss"]), (sharded, alone)
        rows = [line.split(",") for line in open(os.path.join(cwd, "one/dp/eval_test.csv"))]
        rows_alone = [line.split(",") for line in single["csv"].splitlines(True)]
        assert len(rows) == len(rows_alone) == alone["count"] + 1, (len(rows), len(rows_alone))
        for a, b in zip(rows, rows_alone):  # names and classes equal, probabilities to 1e-6
            assert len(a) == len(b), (a, b)
            for x, y in zip(a, b):
                try:
                    assert abs(float(x) - float(y)) <= 1e-6, (a, b)
                except ValueError:
                    assert x == y, (a, b)
        print(f"lumen eval on 2 ranks: {sharded['metrics']}, the per-case rows of one process")
        output = run(mpi + ["-np", "2", lumen, "predict", "one/dp", "dp.json", "--out", "p"], cwd,
                     False)
        assert "predict runs as one process" in output, output[-2000:]

        run(mpi + ["-np", "2"] + train + ["--set", "output.runs_dir=resume",
                                          "--set", "data.batch_size=8",
                                          "--set", "train.max_steps=10"], cwd)
        run([lumen, "train", "--resume", "resume/dp", "--set", "data.batch_size=16",
             "--set", "train.max_steps=0"], cwd)
        check_like_one(cwd, "resume", "2 ranks for epoch 1, one process for epoch 2")

        # Inside an epoch (step 5 of 10), either way: the position in the epoch's order is what
        # carries over, so 2 x 8 and 1 x 16 resume each other.
        run(mpi + ["-np", "2"] + train + ["--set", "output.runs_dir=mid2",
                                          "--set", "data.batch_size=8",
                                          "--set", "train.max_steps=5"], cwd)
        run([lumen, "train", "--resume", "mid2/dp", "--set", "data.batch_size=16",
             "--set", "train.max_steps=0"], cwd)
        run(train + ["--set", "output.runs_dir=mid1", "--set", "train.max_steps=3"], cwd)
        run(mpi + ["-np", "2", lumen, "train", "--resume", "mid1/dp", "--set",
                   "data.batch_size=8", "--set", "train.max_steps=0"], cwd)
        for name in ("mid2", "mid1"):
            check_like_one(cwd, name, f"{name}: stopped inside epoch 1, resumed with the other "
                           "number of ranks")
        # 80 examples were used; 1 x 24 does not divide that.
        run(mpi + ["-np", "2"] + train + ["--set", "output.runs_dir=mid3",
                                          "--set", "data.batch_size=8",
                                          "--set", "train.max_steps=5"], cwd)
        output = run([lumen, "train", "--resume", "mid3/dp", "--set", "data.batch_size=24"], cwd,
                     False)
        assert "after 80 examples" in output and "= 24 examples per batch" in output, output

        check_sync_batchnorm(mpi, lumen, cwd)

        rank = ["-np", "1"] + train + ["--set", "output.runs_dir=bad"]
        output = run(mpi + rank + [":"] + rank + ["--set", "optim.lr=0.004"], cwd, False)
        assert "rank(s) 1 differs from rank 0's" in output, output[-2000:]
        output = run(mpi + rank + [":", "-np", "1", lumen, "train", "missing.json"], cwd, False)
        assert "error: rank 1 of 2:" in output and "missing.json" in output, output[-2000:]
        # Rank 0 killed while writing its second metrics record; rank 1 must not wait forever.
        killed = ["-np", "1", "-x", "LUMEN_FAULT_INJECT=run_log.mid_record@2:kill"] + rank[2:]
        run(mpi + killed + [":"] + rank, cwd, False)
        check_stopped_rank(mpi, train, cwd)
        print("mismatched configs, a failing, a killed and a stopped rank end the job")
    print("data parallel: passed")


if __name__ == "__main__":
    main()
