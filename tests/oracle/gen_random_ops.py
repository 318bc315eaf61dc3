"""Randomized differential vectors: every `op.*` module that `lumen check-vectors` knows,
drawn at random and recorded with PyTorch (float64 reference, float32 inputs), with
per-tensor tolerances sized to the values' magnitude and the op's conditioning
(oracle_record.py says how). PyTorch is needed only to regenerate; the vectors are committed
and checked by ctest (`lumen check-vectors tests/data/oracle`).

  /usr/bin/python3 tests/oracle/gen_random_ops.py            # the committed set (seed 0)
  /usr/bin/python3 tests/oracle/gen_random_ops.py --seed 7 --cases 200 --out /tmp/r7 \\
      --check build/lumen                                     # a bug hunt: write, run, triage
  /usr/bin/python3 tests/oracle/gen_random_ops.py --ops matmul,var --seed 3 --out /tmp/r3
  /usr/bin/python3 tests/oracle/gen_random_ops.py --pinned   # the regression vectors below

What the draws cover (random_cases_*.py, random_values.py): ranks 1-5, sizes 0 and 1,
broadcasting (matmul batch dims, loss weights and targets), negative dims, odd convolution
and pooling geometry (stride above the kernel, dilation, ceil_mode, padding up to half the
kernel, output padding, groups, depthwise, unbatched inputs), magnitudes 1e-4 to 1e4 (per
tensor and mixed inside one), ties (few value levels, exact branch points of the piecewise
ops, +0 and -0), infinities and NaN where PyTorch defines the result, large logits.

Each case is reproducible from its note ("seed S attempt A"): --seed S --ops OP regenerates
it. Draws PyTorch rejects, and the exclusions documented where they are made (a PyTorch bug,
an ill-conditioned float32 problem), are skipped and counted in the summary. The PyTorch
1.13 bugs kept out of the references (each reproduced with a minimal input):
  - interpolate, nearest modes: the backward with a scale factor that leaves a size
    unchanged routes gradients to inputs the forward never read;
  - max_pool: a window of padding taps only (dilation) gets index -1 and its backward
    writes out of bounds (heap corruption in the generator);
  - scatter_add: the src gradient has index's shape when index is smaller than src (the
    reference scatters src's index-shaped block, the same function);
  - elu and hardtanh: the gradient at NaN depends on the element's position (vectorized
    loop vs scalar tail), so no NaN inputs;
  - smooth_l1_loss with beta = 0: gradient -1 at d = 0 (l1_loss, which it is documented to
    equal, gives 0);
  - var: a finite gradient for a NaN result with fewer values than the correction, and inf
    over all dims with as many; group_norm: a NaN weight gradient on empty groups;
  - binary_cross_entropy: the target gradient without the forward's -100 clamp of the logs
    (+-inf at x = 0 or 1).
"""
import argparse
import collections
import glob
import math
import os
import re
import subprocess
import sys
import warnings
import zlib

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

from oracle_record import Skip, record  # noqa: E402
from random_op_cases import BUILDERS  # noqa: E402
from random_values import R  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
import safetensors_io  # noqa: E402

torch.set_num_threads(1)
warnings.filterwarnings("ignore")  # PyTorch's broadcasting and padding='same' notices


def registered_ops():
    """The op.* modules registered with check-vectors (VectorAdapterRegistration lines)."""
    names = set()
    for path in glob.glob(os.path.join(ROOT, "conformance", "**", "*.cpp"), recursive=True):
        with open(path) as f:
            names.update(re.findall(r'VectorAdapterRegistration\s+\w+\(\s*"op\.(\w+)"', f.read()))
    return sorted(names)


def reason_key(reason):
    """A skip reason with its numbers replaced by #, so that the summary counts alike ones."""
    text = reason.replace("PyTorch 1.13", "PyTorch@")
    text = re.sub(r"(?<![A-Za-z_\d.])-?\d[\d.]*(e[+-]?\d+)?", "#", text)
    return text.replace("PyTorch@", "PyTorch 1.13")[:100]


def generate(out, seed, cases, ops, skipped, verbose=False):
    """Writes `cases` vectors per op; returns the number written."""
    written = 0
    for op in ops:
        made = attempt = 0
        while made < cases and attempt < cases * 6:
            r = R([seed, zlib.crc32(op.encode()), attempt])
            attempt += 1
            try:
                case = BUILDERS[op](r, op)
                path = os.path.join(out, f"{op}_{made:03d}.safetensors")
                record(path, "op." + op, case.fn, case.inputs, case.config, ulps=case.ulps,
                       linear=case.linear, no_grad=case.no_grad, terms=case.terms,
                       seed=seed * 100003 + attempt,
                       note=f"seed {seed} attempt {attempt - 1}: {case.note}")
            except Skip as e:
                if verbose:
                    print(f"  skip {op} seed {seed} attempt {attempt - 1}: {e}")
                skipped[(op, reason_key(str(e)))] += 1
                continue
            made += 1
        if made < cases:
            print(f"warning: {op}: only {made} of {cases} cases after {attempt} draws")
        written += made
    return written


def check(binary, out):
    """Runs check-vectors on `out`; prints the failures grouped by op."""
    run = subprocess.run([binary, "check-vectors", out], capture_output=True, text=True)
    lines = [l for l in run.stdout.splitlines() if l.startswith("FAIL")]
    by_op = collections.defaultdict(list)
    for line in lines:
        by_op[line.split("module=op.")[1].split()[0] if "module=op." in line else "?"].append(line)
    for op, failures in sorted(by_op.items()):
        print(f"{op}: {len(failures)} failed")
        for line in failures:
            path = os.path.join(out, line.split()[1])
            note = safetensors_io.load_metadata(path).get("note", "") if os.path.exists(path) \
                else ""
            print("   ", line[6:], "|", note)
    print(run.stdout.splitlines()[-1] if run.stdout else run.stderr)
    return len(lines)


# ---- the regression vectors of the four issue cases (tests/data/oracle/ops) ----

def pinned(out_ops, out_rejected):
    D = torch.float64
    inf = math.inf
    made = []

    def put(name, module, fn, inputs, config=None, **kw):
        path = os.path.join(out_ops, name + ".safetensors")
        made.append(path)
        return record(path, module, fn, inputs, config, **kw)
    # 1. elu's gradient at +0 with alpha != 1 (PyTorch: x <= 0 ? alpha e^x : 1).
    put("elu_zero_alpha", "op.elu", lambda input, **kw: F.elu(input, **kw),
        {"input": torch.tensor([0.0, -0.0, 0.5, -0.5], dtype=D)}, {"alpha": 0.5}, seed=1,
        note="elu'(+0) = alpha (PyTorch's x <= 0 branch), alpha != 1")
    # 2. cross_entropy's gradient at large logits, class index and class probability targets.
    put("cross_entropy_large_logits", "op.cross_entropy",
        lambda input, target, **kw: F.cross_entropy(input, target, **kw),
        {"input": torch.tensor([[10000.0, 10003.0]], dtype=D), "target": torch.tensor([1])},
        {"reduction": "sum"}, seed=2, note="softmax from max and log-sum kept apart")
    put("cross_entropy_probs_large_logits", "op.cross_entropy",
        lambda input, target, **kw: F.cross_entropy(input, target, **kw),
        {"input": torch.tensor([[10000.0, 10003.0, 9999.0], [-300.0, -302.5, -301.0]], dtype=D),
         "target": torch.tensor([[0.1, 0.8, 0.1], [0.0, 0.25, 0.75]], dtype=D)},
        {"reduction": "sum"}, seed=6, note="probability targets at large logits")
    # 3. infinities and NaN must match exactly: log_softmax of rows with -inf (a row of only
    #    -inf gives NaN, as in PyTorch).
    rows = put("log_softmax_inf", "op.log_softmax", lambda input, **kw: F.log_softmax(input, **kw),
               {"input": torch.tensor([[-inf, 0.5, 1.0], [2.0, -inf, -1.0], [-inf, -inf, -inf]],
                                      dtype=D)}, {"dim": 1}, seed=3,
               note="-inf and NaN results, compared exactly")
    # 4. 0-d results (stored as [1]): matmul of two vectors, var over all dims.
    put("matmul_dot", "op.matmul", lambda input, other: torch.matmul(input, other),
        {"input": torch.tensor([1.0, -2.0, 0.5], dtype=D),
         "other": torch.tensor([0.25, 3.0, -1.0], dtype=D)}, seed=4, linear=True,
        note="vector @ vector: a 0-d result")
    put("var_all", "op.var", lambda input, **kw: torch.var(input, **kw),
        {"input": torch.tensor([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]], dtype=D)},
        {"unbiased": True}, seed=5, note="var over all dims: a 0-d result")
    # 5. Found by the hunt after the merge (seed 307): a float32 var whose mean lies far above
    #    the spread (10.001 +- 1e-4); the mean's rounding to float, unless taken off x - mean,
    #    adds n ulp^2 / 4 to the sum (2e-5 relative error).
    put("var_mean_far_above_spread", "op.var", lambda input, **kw: torch.var(input, **kw),
        {"input": torch.tensor([[10.001058, 10.0008955, 10.001094],
                                [10.000904, 10.001078, 10.000931],
                                [10.001093, 10.000988, 10.00091]], dtype=D).unsqueeze(-1)},
        {"dim": 1, "keepdim": False, "unbiased": True}, seed=7,
        note="float32 var at a mean far above the spread")
    # The vectors check-vectors must reject (ctest check_vectors_rejects): log_softmax_inf
    # with a stored value replaced by an infinity or NaN where lumen's is finite. Before the
    # runner compared non-finite values exactly, all three passed.
    _, meta = safetensors_io.load(made[3]), safetensors_io.load_metadata(made[3])
    os.makedirs(out_rejected, exist_ok=True)
    for name, tensor, index, value in [("want_minus_inf", "out.y", (0, 1), -inf),
                                       ("want_nan", "out.y", (1, 0), math.nan),
                                       ("want_inf_grad", "grad.in.input", (0, 2), inf)]:
        arrays = {k: v.copy() for k, v in rows.items()}
        arrays[tensor][index] = value
        meta_bad = dict(meta, note=f"deliberately wrong: {tensor}{list(index)} = {value}")
        path = os.path.join(out_rejected, name + ".safetensors")
        safetensors_io.save(path, arrays, meta_bad)
        made.append(path)
    for path in made:
        print("wrote", os.path.relpath(path, ROOT))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", type=int, default=56, help="vectors per op")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "oracle", "random"))
    ap.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    ap.add_argument("--check", default="", help="a lumen binary: run check-vectors on --out")
    ap.add_argument("--verbose", action="store_true", help="print every skipped draw")
    ap.add_argument("--pinned", action="store_true", help="write the regression vectors only")
    a = ap.parse_args()
    if a.pinned:
        pinned(os.path.join(ROOT, "tests", "data", "oracle", "ops"),
               os.path.join(ROOT, "tests", "data", "oracle_rejected"))
        return
    ops = registered_ops()
    missing = sorted(set(ops) - set(BUILDERS))
    if missing:
        sys.exit(f"no builder for the registered ops: {missing}")
    if a.ops:
        ops = [o for o in a.ops.split(",") if o]
        unknown = sorted(set(ops) - set(BUILDERS))
        if unknown:
            sys.exit(f"unknown ops: {unknown}")
    os.makedirs(a.out, exist_ok=True)
    for old in glob.glob(os.path.join(a.out, "*.safetensors")):
        if not a.ops or os.path.basename(old).rsplit("_", 1)[0] in ops:
            os.remove(old)
    skipped = collections.Counter()
    written = generate(a.out, a.seed, a.cases, ops, skipped, a.verbose)
    print(f"seed {a.seed}: wrote {written} vectors for {len(ops)} ops to {a.out}")
    for (op, reason), n in sorted(skipped.items()):
        print(f"  skipped {n:4d}  {op}: {reason}")
    if a.check:
        failed = check(a.check, a.out)
        sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
