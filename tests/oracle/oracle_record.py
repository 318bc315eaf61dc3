"""Recording one op vector for `lumen check-vectors` (used by gen_random_ops.py).

A case is a PyTorch function, its inputs by PyTorch's argument names and its keyword
arguments (`config`). `record` runs it twice with PyTorch:
  - in float64 on the float32-exact inputs: the reference, stored as float32 in out.* and
    grad.in.* (grad = d loss / d input with loss = sum_k <out_k, dout_k>, dout random);
  - in float32 on the same inputs and dout: what one float32 evaluation actually achieves,
    used only to size the tolerance (see `tolerance`).
File layout (the conventions of the other oracle vectors): in.<name>, out.<name> ("y", or
"y"/"indices"), dout.<name>, grad.in.<name>; metadata module = "op.<name>", config (JSON),
note, rtol/atol (the loosest of the per-tensor pairs, for readers that know no more) and
`tolerance`: JSON {tensor name: [rtol, atol]} that check-vectors applies per tensor. A 0-d
result is stored with shape [1], as every scalar in the vectors.

Tolerance of one float tensor T (reference r, PyTorch float32 result p, both float64 here),
checked per element as |got - r| <= atol_T + rtol_T |r|:
  rtol_T = U eps                                  eps = 2^-24, the float32 unit roundoff
  atol_T = max(U eps S_T, K max_i max(|p_i - r_i| - rtol_T |r_i|, 0))
  S_T    = max_i |r_i|, or for (multi)linear ops max_i of the same op evaluated on |inputs|
           and |dout| (the sum of the absolute values of the terms behind each element, which
           bounds the rounding error of any summation order), or where a builder knows the
           terms of a result that can cancel to ~0 (a normalize gradient, a loss that is a
           difference of softplus terms), at least their magnitude.
U (ulps, per op family: how many roundings and how accurate the primitives are) scales with
the values' magnitude; the second term is the op's conditioning at these very values, as
one float32 evaluation shows it (cancellation in a variance, large logits, ...), with
K = 8 for a different but equally sound summation order or formula. A case is dropped
(`Skip`, counted with its reason by the generator) when it is meaningless for a float32
engine: a reference beyond float32's range, a float32 evaluation that overflows, non-finite
values where float64 and float32 PyTorch disagree, or atol_T above 1e-2 S_T (and above
float32's smallest normal number): PyTorch's own float32 result is then off by more than 1%
of the tensor's scale (a branch taken differently, as softplus at its threshold; a
normalization of values that differ in their last bits), too ill-conditioned for any
float32 engine to be held to the reference. Infinities and NaNs of the reference must
match exactly (check-vectors compares them position by position).
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
import safetensors_io  # noqa: E402

EPS32 = 2.0 ** -24
FLT_MAX = float(np.finfo(np.float32).max)
FLT_MIN = float(np.finfo(np.float32).tiny)  # below it float32 keeps no relative precision
K_MEASURED = 8.0
ILL_CONDITIONED = 1e-2


class Skip(Exception):
    """The case is not a fair test for a float32 engine (or PyTorch rejects it)."""


def f32_exact(t):
    return t.float().double() if t.is_floating_point() else t


def _as_dict(out):
    if torch.is_tensor(out):
        return {"y": out}
    if isinstance(out, (tuple, list)):
        names = ["y", "indices"]
        return {names[i]: o for i, o in enumerate(out)}
    return dict(out)


def _run(fn, inputs, config, dtype, grad_names, douts, absolute=False):
    """Outputs and gradients of fn in `dtype`; douts: name -> float64 tensor or None to draw."""
    leaves = {}
    for name, v in inputs.items():
        if v.is_floating_point():
            v = v.abs() if absolute else v
            v = v.to(dtype).detach().clone().requires_grad_(name in grad_names)
        else:
            v = v.clone()  # batch_norm in training updates its running statistics in place
        leaves[name] = v
    outs = _as_dict(fn(**leaves, **config))
    loss = None
    for name, o in outs.items():
        if not o.is_floating_point() or not o.requires_grad:
            continue
        d = douts[name].to(dtype)
        d = d.abs() if absolute else d
        term = (o * d.reshape(o.shape)).sum()
        loss = term if loss is None else loss + term
    grads = {}
    wrt = [n for n in grad_names]
    if wrt:
        if loss is None:
            got = [None] * len(wrt)
        else:
            got = torch.autograd.grad(loss, [leaves[n] for n in wrt], allow_unused=True)
        for n, g in zip(wrt, got):
            grads[n] = torch.zeros_like(leaves[n]) if g is None else g
    return ({k: v.detach() for k, v in outs.items()}, {k: v.detach() for k, v in grads.items()})


def _grad_names(fn, inputs, config, no_grad):
    """The floating inputs PyTorch can differentiate (some derivatives are not implemented)."""
    names = [n for n, v in inputs.items() if v.is_floating_point() and n not in no_grad]
    ok = []
    for n in names:
        try:
            _, g = _run(fn, inputs, config, torch.float64, [n], _ones_douts(fn, inputs, config))
            ok.append(n)
        except RuntimeError as e:
            if not any(m in str(e) for m in ("not implemented", "not differentiable")):
                raise
    return ok


def _ones_douts(fn, inputs, config):
    with torch.no_grad():
        outs = _as_dict(fn(**{k: v.clone() for k, v in inputs.items()}, **config))
    return {k: torch.ones(v.shape, dtype=torch.float64) for k, v in outs.items()}


def _tensor_tolerance(name, ref, p32, absolute, ulps, terms=0.0):
    """[rtol, atol] for one tensor (see the module comment); raises Skip."""
    r = ref.detach().double().numpy().reshape(-1)
    p = p32.detach().double().numpy().reshape(-1)
    finite = np.isfinite(r)
    if not finite.all():
        same = (r[~finite] == p[~finite]) | (np.isnan(r[~finite]) & np.isnan(p[~finite]))
        if not same.all():
            raise Skip(f"{name}: float32 PyTorch differs from float64 at a non-finite value")
    r, p = r[finite], p[finite]
    if r.size and np.abs(r).max() > FLT_MAX:
        raise Skip(f"{name}: the reference overflows float32")
    if not np.isfinite(p).all():
        raise Skip(f"{name}: float32 PyTorch overflows where float64 is finite")
    scale = float(np.abs(r).max()) if r.size else 0.0
    if absolute is not None:
        a = absolute.detach().double().numpy().reshape(-1)[finite]
        a = a[np.isfinite(a)]
        if a.size:
            scale = max(scale, float(np.abs(a).max()))
    scale = max(scale, terms)
    rtol = ulps * EPS32
    excess = float(np.max(np.abs(p - r) - rtol * np.abs(r), initial=0.0))
    atol = max(ulps * EPS32 * scale, K_MEASURED * excess)
    if atol > ILL_CONDITIONED * scale and atol > FLT_MIN:
        raise Skip(f"{name}: ill-conditioned in float32 (float32 PyTorch off by "
                   f"{excess:.2e} at scale {scale:.2e})")
    return [float(f"{rtol:.3g}"), float(f"{atol * 1.0001:.3g}") if atol else 0.0]


def record(path, module, fn, inputs, config=None, *, ulps=64, linear=False, no_grad=(),
           terms=None, dout_scale=1.0, seed=0, note=""):
    """Writes one vector; returns the tensors written. Raises Skip (nothing written).

    inputs: name -> tensor (floating ones are rounded to float32 first; integer ones kept).
    config: the keyword arguments (JSON-serializable) passed to fn and stored.
    linear: fn is linear in each floating input, so |fn|(|inputs|) bounds the terms (S_T).
    no_grad: floating inputs that take no gradient (running statistics).
    terms: for an op whose result can cancel to ~0 while its terms do not (a gradient that is
    0 by symmetry), terms(inputs, config, douts) -> {tensor name: magnitude of the terms},
    a floor under S_T."""
    config = dict(config or {})
    inputs = {k: f32_exact(v.detach().clone()) for k, v in inputs.items()}
    try:
        grad_names = _grad_names(fn, inputs, config, set(no_grad))
        gen = torch.Generator().manual_seed(seed + 7919)
        douts = {k: f32_exact(torch.randn(v.shape, generator=gen, dtype=torch.float64) *
                              dout_scale)
                 for k, v in _ones_douts(fn, inputs, config).items()}
        outs, grads = _run(fn, inputs, config, torch.float64, grad_names, douts)
        outs32, grads32 = _run(fn, inputs, config, torch.float32, grad_names, douts)
        abs_outs = abs_grads = {}
        if linear:
            abs_outs, abs_grads = _run(fn, inputs, config, torch.float64, grad_names, douts,
                                       absolute=True)
    except (RuntimeError, ValueError, IndexError, TypeError) as e:
        raise Skip("PyTorch rejects it: " + str(e).split("\n")[0][:120])
    floors = terms(inputs, config, douts) if terms else {}
    tensors, tolerance = {}, {}
    for k, v in inputs.items():
        tensors["in." + k] = v
    for k, v in outs.items():
        tensors["out." + k] = v
        if v.is_floating_point():
            tensors["dout." + k] = douts[k]
            tolerance["out." + k] = _tensor_tolerance("out." + k, v, outs32[k],
                                                      abs_outs.get(k), ulps,
                                                      floors.get("out." + k, 0.0))
        else:
            tolerance["out." + k] = [0.0, 0.0]
    for k, g in grads.items():
        tensors["grad.in." + k] = g
        tolerance["grad.in." + k] = _tensor_tolerance("grad.in." + k, g, grads32[k],
                                                      abs_grads.get(k), ulps,
                                                      floors.get("grad.in." + k, 0.0))
    arrays = {}
    for k, v in tensors.items():
        a = v.cpu().numpy()
        if a.ndim == 0:
            a = a.reshape(1)  # scalars are stored as [1]
        arrays[k] = a.astype(np.float32) if a.dtype == np.float64 else a
    meta = {"module": module, "config": json.dumps(config, sort_keys=True), "note": note,
            "rtol": max(t[0] for t in tolerance.values()),
            "atol": max(t[1] for t in tolerance.values()),
            "tolerance": json.dumps(tolerance, sort_keys=True, separators=(",", ":"))}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    safetensors_io.save(path, arrays, meta)
    return arrays
