"""Case builders (random_op_cases.py): elementwise activations, softmax, matmul, var,
cumsum and the normalizations."""
import math

import torch
import torch.nn.functional as F

from oracle_record import Skip
from random_values import INF, NAN, Case, absmax as _absmax, maybe as _maybe


# ---- elementwise activations ----

def _boundary(r, x, points):
    """Replaces a few entries with exact branch points (ties of a piecewise formula)."""
    flat = x.reshape(-1)
    for i in range(flat.numel()):
        if r.chance(0.25):
            flat[i] = r.pick(points)
    return flat.reshape(x.shape)


def activation(r, op):
    rank = r.int(1, 5)
    shape = r.shape(rank, max_numel=48)
    specials = (INF, -INF, NAN) if r.chance(0.1) else ()
    if op in ("elu", "hardtanh"):
        # PyTorch 1.13 bug: the backward of ELU (NaN in its vectorized loop, the incoming
        # gradient in its scalar tail) and of hardtanh (0, resp. the gradient) at a NaN input
        # depends on the element's position; lumen gives NaN, resp. 0, everywhere.
        specials = tuple(v for v in specials if not math.isnan(v))
    x = r.values(shape, specials=specials, special_p=0.15)
    config, points = {}, [0.0, -0.0]
    if op == "gelu":
        _maybe(r, config, "approximate", r.pick(["none", "tanh"]))
        fn = F.gelu
    elif op == "silu":
        _maybe(r, config, "inplace", False, 0.2)
        fn = F.silu
    elif op == "elu":
        _maybe(r, config, "alpha", r.pick([1.0, 0.5, 2.0, 0.1, 1.5]))
        _maybe(r, config, "inplace", False, 0.2)
        fn = F.elu
    elif op == "sigmoid":
        fn = torch.sigmoid
    elif op == "tanh":
        fn = torch.tanh
    elif op == "relu":
        _maybe(r, config, "inplace", False, 0.2)
        fn = F.relu
    elif op == "softplus":
        beta, threshold = r.pick([1.0, 2.0, 0.5, 10.0]), r.pick([20.0, 5.0, 1.0, 0.5])
        _maybe(r, config, "beta", beta)
        _maybe(r, config, "threshold", threshold)
        b, t = config.get("beta", 1.0), config.get("threshold", 20.0)
        points += [t / b, -t / b]
        fn = F.softplus
    elif op == "leaky_relu":
        _maybe(r, config, "negative_slope", r.pick([0.01, 0.2, 0.0, 1.5]))
        _maybe(r, config, "inplace", False, 0.2)
        fn = F.leaky_relu
    elif op == "hardtanh":
        lo, hi = r.pick([(-1.0, 1.0), (-2.0, 0.5), (0.0, 6.0), (-0.25, 0.25)])
        _maybe(r, config, "min_val", lo)
        _maybe(r, config, "max_val", hi)
        _maybe(r, config, "inplace", False, 0.2)
        points += [config.get("min_val", -1.0), config.get("max_val", 1.0)]
        fn = F.hardtanh
    else:
        raise KeyError(op)
    x = _boundary(r, x, points)

    def terms(inputs, config, douts):
        x = inputs["input"][torch.isfinite(inputs["input"])]
        if op == "elu":
            # alpha (e^x - 1) below 0, computed so by PyTorch's vectorized CPU kernel and by
            # lumen's: near 0 it is a difference of terms of size alpha (an absolute error of
            # about alpha ulp(1), 2e-5 relative at x = -0.0036).
            return {"out.y": abs(config.get("alpha", 1.0))} if bool((x < 0).any()) else {}
        # GELU's x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 cancels in its left tail (1 + erf ~ 1e-6
        # at x = -5): the result is a difference of terms of size |x| / 2; its gradient likewise.
        d = douts["y"][torch.isfinite(inputs["input"])].abs()
        return {"out.y": _absmax(x), "grad.in.input": 1.25 * _absmax(d)}
    return Case(lambda input, **kw: fn(input, **kw), {"input": x}, config, ulps=64,
                terms=terms if op in ("gelu", "elu") else None, note=f"{op} {shape}")


# ---- softmax, log_softmax ----

def softmax(r, op):
    rank = r.int(1, 5)
    shape = r.shape(rank, max_numel=48)
    x = r.values(shape, specials=(-INF,) if r.chance(0.2) else (), special_p=0.3)
    if r.chance(0.2):  # logits near a large offset: only differences matter
        x = x + r.pick([1e3, -1e4, 300.0])
    dim = r.dim(rank)
    fn = F.softmax if op == "softmax" else F.log_softmax
    return Case(lambda input, dim: fn(input, dim=dim), {"input": x}, {"dim": dim}, ulps=64,
                note=f"{op} {shape} dim {dim}")


# ---- matmul ----

def matmul(r, op):
    ra, rb = r.int(1, 4), r.int(1, 4)
    n, k, m = r.size(hi=4), r.size(hi=5), r.size(hi=4)
    batch = [r.size(zero=0.04, hi=3) for _ in range(max(ra, rb) - 2)]

    def batch_of(rank):
        own = batch[len(batch) - (rank - 2):] if rank > 2 else []
        return [d if r.chance(0.7) else 1 for d in own]

    a_shape = [k] if ra == 1 else batch_of(ra) + [n, k]
    b_shape = [k] if rb == 1 else batch_of(rb) + [k, m]
    if torch.Size(a_shape).numel() > 64 or torch.Size(b_shape).numel() > 64:
        raise Skip("too large")
    a, b = r.values(a_shape), r.values(b_shape)
    return Case(lambda input, other: torch.matmul(input, other), {"input": a, "other": b},
                ulps=16, linear=True, note=f"matmul {a_shape} @ {b_shape}")


# ---- var, cumsum ----

def var(r, op):
    rank = r.int(1, 5)
    shape = r.shape(rank, max_numel=48)
    x = r.values(shape)
    if r.chance(0.25):  # an offset much larger than the spread: the two-pass formula's case
        x = x + r.pick([10.0, 1e3, -1e2]) * (_absmax(x) + 1)
    config = {}
    form = r.pick(["all", "int", "list", "none"])
    if form == "int":
        config["dim"] = r.dim(rank)
    elif form == "list":
        config["dim"] = sorted({r.dim(rank) for _ in range(r.int(1, rank))},
                               key=lambda d: d % rank)
        if len({d % rank for d in config["dim"]}) != len(config["dim"]):
            raise Skip("repeated dim")
    elif form == "none":
        config["dim"] = None
    correction = r.pick(["unbiased", "unbiased", "correction", "default"])
    if correction == "unbiased":
        config["unbiased"] = r.chance(0.6)
    elif correction == "correction":
        config["correction"] = r.pick([0, 1, 2])
    _maybe(r, config, "keepdim", r.chance(0.5))
    # PyTorch 1.13 bug: with fewer values than the correction its forward divides by
    # max(0, n - correction) (NaN) but its backward by n - correction (a finite gradient of a
    # NaN result); lumen's gradient is NaN there too.
    dims = config.get("dim")
    dims = list(range(rank)) if dims is None or dims == [] else (
        [dims] if isinstance(dims, int) else dims)
    n = int(torch.Size([shape[d] for d in dims]).numel())
    correction = config.get("correction", 0 if config.get("unbiased") is False else 1)
    if 0 < n < correction:
        raise Skip("PyTorch 1.13 bug: var backward with fewer values than the correction")
    # PyTorch 1.13 bug: over all dims (dim None) with as many values as the correction its
    # backward is inf for the NaN result (0 / 0); with dim given it is NaN, as lumen's.
    if n == correction and config.get("dim") in (None, []):
        raise Skip("PyTorch 1.13 bug: var backward over all dims with n == correction")
    return Case(lambda input, **kw: torch.var(input, **kw), {"input": x}, config, ulps=64,
                note=f"var {shape}")


def cumsum(r, op):
    rank = r.int(1, 5)
    shape = r.shape(rank, max_numel=48)
    dim = r.dim(rank)
    return Case(lambda input, dim: torch.cumsum(input, dim=dim), {"input": r.values(shape)},
                {"dim": dim}, ulps=16, linear=True, note=f"cumsum {shape} dim {dim}")


# ---- normalizations ----

def _offset(r, x):
    """Sometimes a mean far from 0 relative to the spread (conditioning of the variance)."""
    if r.chance(0.2):
        return x + r.pick([5.0, -50.0, 1e3]) * (_absmax(x) + 1e-3)
    return x


def _norm_terms(x, dims, eps, weight, dout, center=True, stats=None):
    """The terms of a normalization's gradients over the statistic's dims (or with the given
    (mean, var), running statistics, whose input gradient does not cancel):
      input:  rstd |w| (|g| + mean |g| + |xhat| mean |g xhat|), ~0 when every entry is equal or
              the statistic holds one or two entries (1 - xhat^2 cancels);
      weight: sum |g xhat|, bias: sum |g| (sums whose result can be ~0),
    where PyTorch's float32 can be exact by luck."""
    if not x.numel() or not dims:
        return {}
    if stats is None:
        m = x.mean(dims, keepdim=True) if center else 0.0
        var = ((x - m) ** 2).mean(dims, keepdim=True)
    else:
        m, var = stats
    rstd = torch.rsqrt(var + eps)
    xhat, g = ((x - m) * rstd).abs(), dout.abs()
    w = _absmax(weight) if weight is not None else 1.0
    found = {"grad.in.weight": float((g * xhat).sum()), "grad.in.bias": float(g.sum())}
    if stats is None:
        t = rstd * w * (g + g.mean(dims, keepdim=True) +
                        xhat * (g * xhat).mean(dims, keepdim=True))
        found["grad.in.input"] = _absmax(t)
    return found


def _channel_fold(x, mean, var, eps, w):
    """The terms of lumen's channel-norm forward (batch_norm, instance_norm with running
    statistics): y = x scale + (b - mean scale) with scale = rstd w, the mean folded into the
    shift as in PyTorch's CPU kernel, cancels to eps |x| scale when the mean lies far above
    the spread, and the batch mean reaches it rounded to float32. The magnitude /32, so
    that U eps S = ulp(x) scale: that bound, not more (PyTorch's float32 is up to 10x closer;
    computing (x - mean) scale instead flipped a near-tie in the UTNet model vector)."""
    return _absmax((x.abs() + mean.abs()) * torch.rsqrt(var + eps) * w) / 32


def layer_norm(r, op):
    rank = r.int(1, 4)
    shape = r.shape(rank, max_numel=48)
    k = r.int(1, min(3, rank))
    normalized = shape[rank - k:]
    inputs = {"input": _offset(r, r.values(shape))}
    if r.chance(0.7):
        inputs["weight"] = r.values(normalized, scale=1.0)
    if r.chance(0.6):
        inputs["bias"] = r.values(normalized, scale=1.0)
    eps = r.pick([1e-5, 1e-6, 1e-3, 0.1])
    config = {"normalized_shape": normalized}
    _maybe(r, config, "eps", eps)

    def fn(input, normalized_shape, weight=None, bias=None, eps=1e-5):
        return F.layer_norm(input, normalized_shape, weight, bias, eps)

    def terms(inputs, config, douts):
        dims = list(range(rank - k, rank))
        return _norm_terms(inputs["input"], dims, config.get("eps", 1e-5), inputs.get("weight"),
                           douts["y"])
    return Case(fn, inputs, config, ulps=64, terms=terms,
                note=f"layer_norm {shape} over {normalized}")


def rms_norm(r, op):
    # PyTorch 1.13 has no F.rms_norm: its later definition, x rsqrt(mean(x^2) + eps) weight,
    # with eps=None meaning finfo(float32).eps (the engine's dtype, as the adapter does).
    rank = r.int(1, 4)
    shape = r.shape(rank, max_numel=48)
    k = r.int(1, min(2, rank))
    normalized = shape[rank - k:]
    inputs = {"input": r.values(shape)}
    if r.chance(0.7):
        inputs["weight"] = r.values(normalized, scale=1.0)
    config = {"normalized_shape": normalized}
    if r.chance(0.8):
        config["eps"] = r.pick([1e-6, 1e-5, None, 0.1])

    def fn(input, normalized_shape, weight=None, eps=None):
        e = torch.finfo(torch.float32).eps if eps is None else eps
        dims = tuple(range(-len(normalized_shape), 0))
        y = input * torch.rsqrt(input.pow(2).mean(dims, keepdim=True) + e)
        return y if weight is None else y * weight

    def terms(inputs, config, douts):
        eps = config.get("eps")
        eps = torch.finfo(torch.float32).eps if eps is None else eps
        dims = list(range(rank - k, rank))
        return _norm_terms(inputs["input"], dims, eps, inputs.get("weight"), douts["y"],
                           center=False)
    return Case(fn, inputs, config, ulps=64, terms=terms,
                note=f"rms_norm {shape} over {normalized}")


def group_norm(r, op):
    groups = r.int(1, 3)
    channels = groups * r.int(1, 2)
    spatial = r.shape(r.int(0, 3), zero=0.04, hi=3)
    shape = [r.size(zero=0.05, hi=2), channels] + spatial
    if torch.Size(shape).numel() > 64:
        raise Skip("too large")
    inputs = {"input": _offset(r, r.values(shape))}
    if r.chance(0.7):
        inputs["weight"] = r.values([channels], scale=1.0)
    if r.chance(0.6):
        inputs["bias"] = r.values([channels], scale=1.0)
    config = {"num_groups": groups}
    _maybe(r, config, "eps", r.pick([1e-5, 1e-3, 0.1]))

    def fn(input, num_groups, weight=None, bias=None, eps=1e-5):
        return F.group_norm(input, num_groups, weight, bias, eps)
    # PyTorch 1.13 bug: with an empty spatial dim group_norm's weight gradient is NaN (0 / 0
    # inside), where its instance_norm and batch_norm give 0, the gradient of a result that does
    # not depend on weight; lumen gives 0. The weight takes no gradient in those cases.
    empty = torch.Size(spatial).numel() == 0

    def terms(inputs, config, douts):
        x = inputs["input"]
        if not x.numel():
            return {}
        per_group = [x.shape[0], groups, -1]
        return _norm_terms(x.reshape(per_group), [2], config.get("eps", 1e-5),
                           inputs.get("weight"), douts["y"].reshape(per_group))
    return Case(fn, inputs, config, ulps=64, no_grad=("weight",) if empty else (), terms=terms,
                note=f"group_norm {shape} groups {groups}")


def _running(r, channels):
    return r.values([channels], scale=1.0), r.positive([channels], 0.2, 3.0)


def instance_norm(r, op):
    channels = r.int(1, 3)
    shape = [r.size(zero=0.04, hi=2), channels] + r.shape(r.int(1, 3), zero=0.04, hi=4)
    if torch.Size(shape).numel() > 64:
        raise Skip("too large")
    inputs = {"input": _offset(r, r.values(shape))}
    config = {}
    use_input_stats = r.chance(0.75)
    _maybe(r, config, "use_input_stats", use_input_stats, 0.8 if use_input_stats else 1.0)
    if not use_input_stats or r.chance(0.4):
        inputs["running_mean"], inputs["running_var"] = _running(r, channels)
    if r.chance(0.6):
        inputs["weight"] = r.values([channels], scale=1.0)
    if r.chance(0.5):
        inputs["bias"] = r.values([channels], scale=1.0)
    _maybe(r, config, "momentum", r.pick([0.1, 0.5]), 0.3)
    _maybe(r, config, "eps", r.pick([1e-5, 1e-3, 0.1]))

    def fn(input, running_mean=None, running_var=None, weight=None, bias=None, **kw):
        return F.instance_norm(input, running_mean, running_var, weight, bias, **kw)

    def terms(inputs, config, douts):
        if not use_input_stats:
            view = [1, -1] + [1] * (len(shape) - 2)
            w = inputs.get("weight")
            w = w.abs().reshape(view) if w is not None else 1.0
            mean = inputs["running_mean"].reshape(view)
            var = inputs["running_var"].reshape(view)
            found = _norm_terms(inputs["input"], [0], config.get("eps", 1e-5), inputs.get("weight"),
                                douts["y"], stats=(mean, var))
            found["out.y"] = _channel_fold(inputs["input"], mean, var, config.get("eps", 1e-5), w)
            return found
        dims = list(range(2, len(shape)))
        return _norm_terms(inputs["input"], dims, config.get("eps", 1e-5), inputs.get("weight"),
                           douts["y"])
    return Case(fn, inputs, config, ulps=64, no_grad=("running_mean", "running_var"),
                terms=terms, note=f"instance_norm {shape}")


def batch_norm(r, op):
    channels = r.int(1, 3)
    shape = [r.size(zero=0.04, hi=3), channels] + r.shape(r.int(0, 3), zero=0.03, hi=3)
    if torch.Size(shape).numel() > 64:
        raise Skip("too large")
    training = r.chance(0.6)
    inputs = {"input": _offset(r, r.values(shape))}
    if not training or r.chance(0.5):
        inputs["running_mean"], inputs["running_var"] = _running(r, channels)
    if r.chance(0.6):
        inputs["weight"] = r.values([channels], scale=1.0)
    if r.chance(0.5):
        inputs["bias"] = r.values([channels], scale=1.0)
    config = {}
    _maybe(r, config, "training", training, 1.0 if training else 0.7)
    _maybe(r, config, "momentum", r.pick([0.1, 0.5]), 0.3)
    _maybe(r, config, "eps", r.pick([1e-5, 1e-3, 0.1]))

    def fn(input, running_mean=None, running_var=None, weight=None, bias=None, **kw):
        return F.batch_norm(input, running_mean, running_var, weight, bias, **kw)

    def terms(inputs, config, douts):
        x, eps = inputs["input"], config.get("eps", 1e-5)
        if not x.numel():
            return {}
        dims = [0] + list(range(2, len(shape)))
        if training:
            mean = x.mean(dims, keepdim=True)
            var = ((x - mean) ** 2).mean(dims, keepdim=True)
        else:
            mean = inputs["running_mean"].reshape([1, -1] + [1] * (len(shape) - 2))
            var = inputs["running_var"].reshape(mean.shape)
        w = inputs.get("weight")
        w = w.abs().reshape(mean.shape) if w is not None else 1.0
        found = _norm_terms(x, dims, eps, inputs.get("weight"), douts["y"],
                            stats=None if training else (mean, var))
        found["out.y"] = _channel_fold(x, mean, var, eps, w)
        return found
    return Case(fn, inputs, config, ulps=64, no_grad=("running_mean", "running_var"),
                terms=terms, note=f"batch_norm {shape} training {training}")


def normalize(r, op):
    rank = r.int(1, 4)
    shape = r.shape(rank, max_numel=48)
    x = r.values(shape)
    dim = r.dim(rank)
    if r.chance(0.3) and x.numel():  # a zero line along dim: the norm is clamped to eps
        lines = x.movedim(dim, -1).contiguous()
        rows = lines.view(-1, lines.shape[-1])
        rows[r.int(0, rows.shape[0] - 1)] = 0.0
        x = lines.movedim(-1, dim)
    config = {"dim": dim}
    _maybe(r, config, "p", r.pick([1.0, 2.0, 3.0, 1.5]))
    _maybe(r, config, "eps", r.pick([1e-12, 1e-6, 0.5]))
    def terms(inputs, config, douts):
        # The gradient is (dout - y <y, dout>-like terms) / max(||x||, eps): ~0 by cancellation
        # along a line of one element, whose terms are |dout| / max(||x||, eps).
        x, p, eps = inputs["input"], config.get("p", 2.0), config.get("eps", 1e-12)
        if not x.numel():
            return {}
        norms = x.abs().pow(p).sum(config["dim"], keepdim=True).pow(1 / p).clamp_min(eps)
        return {"grad.in.input": float((douts["y"].abs() / norms).max())}
    return Case(lambda input, **kw: F.normalize(input, **kw), {"input": x}, config, ulps=64,
                terms=terms, note=f"normalize {shape}")
