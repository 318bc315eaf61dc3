"""The case builders of gen_random_ops.py: one per `op.*` module that check-vectors knows
(conformance/op_vectors.cpp, conformance/ops/*.cpp), each drawing shapes, kwargs and values
from an R (random_values.py). Keyword names and defaults are PyTorch 1.13's; a kwarg is
sometimes left out so that the adapter's default is exercised too. A builder raises Skip
for a draw it cannot use; record() raises it for a draw PyTorch rejects.

ulps (see oracle_record.py): 16 for ops that only move, add or multiply a few values, 32
for convolutions and pooling (longer sums), 64 for transcendental functions, reductions
and normalizations. linear=True where the op is linear in each floating input (the
absolute-value evaluation then bounds every summation's rounding)."""
import math

import torch
import torch.nn.functional as F

from oracle_record import Skip
from random_values import INF, Case

NAN = math.nan


def _absmax(x):
    return float(x.abs().max()) if x.numel() else 0.0


def _maybe(r, config, key, value, p=0.7):
    """Puts key=value into config with probability p (else the default applies)."""
    if r.chance(p):
        config[key] = value


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
        # GELU's x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 cancels in its left tail (1 + erf ~ 1e-6
        # at x = -5): the result is a difference of terms of size |x| / 2; its gradient likewise.
        x = inputs["input"][torch.isfinite(inputs["input"])]
        d = douts["y"][torch.isfinite(inputs["input"])].abs()
        return {"out.y": _absmax(x), "grad.in.input": 1.25 * _absmax(d)}
    return Case(lambda input, **kw: fn(input, **kw), {"input": x}, config, ulps=64,
                terms=terms if op == "gelu" else None, note=f"{op} {shape}")


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


# ---- convolutions ----

def conv(r, op):
    spatial = {"conv1d": 1, "conv2d": 2, "conv3d": 3}[op]
    groups = r.pick([1, 1, 1, 2, 3])
    cin, cout = groups * r.int(1, 2), groups * r.int(1, 2)
    if groups > 1 and r.chance(0.3):  # depthwise
        cin = cout = groups
    kernel = [r.int(1, 3) for _ in range(spatial)]
    dilation = [r.pick([1, 1, 2]) for _ in range(spatial)]
    mode = r.pick(["ints"] * 6 + ["same", "valid"])
    stride = [1] * spatial if mode == "same" else [r.pick([1, 1, 2, 3]) for _ in range(spatial)]
    padding = [r.int(0, kernel[i] * dilation[i] // 2 + 1) for i in range(spatial)]
    hi = {1: 7, 2: 5, 3: 4}[spatial]
    size = []
    for i in range(spatial):
        need = dilation[i] * (kernel[i] - 1) + 1 - (2 * padding[i] if mode == "ints" else 0)
        size.append(r.int(max(need, 1), max(need, 1) + hi - 1))
    batch = [] if r.chance(0.2) else [r.size(zero=0.05, hi=2)]
    x_shape = batch + [cin] + size
    w_shape = [cout, cin // groups] + kernel
    if torch.Size(x_shape).numel() > 96 or torch.Size(w_shape).numel() > 64:
        raise Skip("too large")
    inputs = {"input": r.values(x_shape), "weight": r.values(w_shape)}
    if r.chance(0.7):
        inputs["bias"] = r.values([cout])
    config = {}
    _maybe(r, config, "stride", r.ints_or_list(stride), 1.0 if max(stride) > 1 else 0.5)
    if mode == "ints":
        _maybe(r, config, "padding", r.ints_or_list(padding), 1.0 if max(padding) else 0.5)
    else:
        config["padding"] = mode
    _maybe(r, config, "dilation", r.ints_or_list(dilation), 1.0 if max(dilation) > 1 else 0.5)
    _maybe(r, config, "groups", groups, 1.0 if groups > 1 else 0.5)
    fn = getattr(F, op)
    return Case(lambda input, weight, bias=None, **kw: fn(input, weight, bias, **kw), inputs,
                config, ulps=32, linear=True, note=f"{op} {x_shape} * {w_shape}")


def conv_transpose(r, op):
    spatial = {"conv_transpose2d": 2, "conv_transpose3d": 3}[op]
    groups = r.pick([1, 1, 2])
    cin, cout = groups * r.int(1, 2), groups * r.int(1, 2)
    kernel = [r.int(1, 3) for _ in range(spatial)]
    stride = [r.pick([1, 2, 3]) for _ in range(spatial)]
    dilation = [r.pick([1, 1, 2]) for _ in range(spatial)]
    padding = [r.int(0, dilation[i] * (kernel[i] - 1)) for i in range(spatial)]
    output_padding = [r.int(0, max(stride[i], dilation[i]) - 1) if r.chance(0.4) else 0
                      for i in range(spatial)]
    size = [r.int(1, 3 if spatial == 3 else 4) for _ in range(spatial)]
    for i in range(spatial):
        out = ((size[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) +
               output_padding[i] + 1)
        if out < 1:
            raise Skip("empty output")
    batch = [] if r.chance(0.2) else [r.size(zero=0.05, hi=2)]
    x_shape = batch + [cin] + size
    w_shape = [cin, cout // groups] + kernel
    if torch.Size(x_shape).numel() > 64 or torch.Size(w_shape).numel() > 64:
        raise Skip("too large")
    inputs = {"input": r.values(x_shape), "weight": r.values(w_shape)}
    if r.chance(0.7):
        inputs["bias"] = r.values([cout])
    config = {}
    _maybe(r, config, "stride", r.ints_or_list(stride), 1.0 if max(stride) > 1 else 0.5)
    _maybe(r, config, "padding", r.ints_or_list(padding), 1.0 if max(padding) else 0.5)
    _maybe(r, config, "output_padding", r.ints_or_list(output_padding),
           1.0 if max(output_padding) else 0.3)
    _maybe(r, config, "groups", groups, 1.0 if groups > 1 else 0.5)
    _maybe(r, config, "dilation", r.ints_or_list(dilation), 1.0 if max(dilation) > 1 else 0.5)
    fn = getattr(F, op)
    return Case(lambda input, weight, bias=None, **kw: fn(input, weight, bias, **kw), inputs,
                config, ulps=32, linear=True, note=f"{op} {x_shape} * {w_shape}")


# ---- pooling, interpolation, padding ----

def _pool_input(r, spatial, lo=1, hi=5, specials=()):
    batch = [] if r.chance(0.25) else [r.size(zero=0.05, hi=2)]
    size = [r.int(lo, hi if spatial == 2 else hi - 1) for _ in range(spatial)]
    shape = batch + [r.int(1, 3)] + size
    if torch.Size(shape).numel() > 96:
        raise Skip("too large")
    kind = r.pick(["ties", "ties", None])
    return r.values(shape, kind=kind, specials=specials, special_p=0.2), size


def _empty_window(size, kernel, stride, padding, dilation, ceil_mode):
    """Whether some pooling window holds no input element (only padding taps)."""
    for n, k, s, p, d in zip(size, kernel, stride, padding, dilation):
        # PyTorch's pooling_output_shape (floor division)
        out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (out - 1) * s >= n + p:
            out -= 1
        for o in range(out):
            if not any(0 <= o * s - p + t * d < n for t in range(k)):
                return True
    return False


def max_pool(r, op):
    spatial = 2 if op == "max_pool2d" else 3
    specials = r.pick([(), (), (-INF,), (INF, -INF), (NAN,)])
    x, size = _pool_input(r, spatial, specials=specials)
    kernel = [r.int(1, 3) for _ in range(spatial)]
    dilation = [r.pick([1, 1, 2]) for _ in range(spatial)]
    padding = [r.int(0, kernel[i] // 2) for i in range(spatial)]
    stride = [r.int(1, 3) for _ in range(spatial)]
    config = {"kernel_size": r.ints_or_list(kernel)}
    if r.chance(0.7):
        config["stride"] = r.ints_or_list(stride)
    _maybe(r, config, "padding", r.ints_or_list(padding), 1.0 if max(padding) else 0.4)
    _maybe(r, config, "dilation", r.ints_or_list(dilation), 1.0 if max(dilation) > 1 else 0.4)
    _maybe(r, config, "ceil_mode", r.chance(0.5))
    _maybe(r, config, "return_indices", r.chance(0.5))
    # PyTorch 1.13 bug: a window of padding taps only (dilation can step over the whole input)
    # gets index -1, and the backward writes through it out of bounds (heap corruption).
    used_stride = stride if "stride" in config else kernel
    if _empty_window(size, kernel, used_stride, padding if "padding" in config else [0] * spatial,
                     dilation if "dilation" in config else [1] * spatial,
                     config.get("ceil_mode", False)):
        raise Skip("PyTorch 1.13 bug: max_pool window with no input element")
    fn = getattr(F, op)
    return Case(lambda input, **kw: fn(input, **kw), {"input": x}, config, ulps=16,
                note=f"{op} {list(x.shape)}")


def avg_pool(r, op):
    spatial = 2 if op == "avg_pool2d" else 3
    x, size = _pool_input(r, spatial)
    kernel = [r.int(1, 3) for _ in range(spatial)]
    padding = [r.int(0, kernel[i] // 2) for i in range(spatial)]
    stride = [r.int(1, 3) for _ in range(spatial)]
    config = {"kernel_size": r.ints_or_list(kernel)}
    if r.chance(0.7):
        config["stride"] = r.ints_or_list(stride)
    _maybe(r, config, "padding", r.ints_or_list(padding), 1.0 if max(padding) else 0.4)
    _maybe(r, config, "ceil_mode", r.chance(0.5))
    _maybe(r, config, "count_include_pad", r.chance(0.5))
    if r.chance(0.25):
        config["divisor_override"] = r.pick([1, 2, 3, 7])
    fn = getattr(F, op)
    return Case(lambda input, **kw: fn(input, **kw), {"input": x}, config, ulps=32, linear=True,
                note=f"{op} {list(x.shape)}")


def _output_size(r, size):
    out = [r.int(1, s + 2) for s in size]
    if r.chance(0.2):
        return out[0]
    return [None if r.chance(0.2) else o for o in out]


def adaptive_pool(r, op):
    spatial = 2 if op.endswith("2d") else 3
    is_max = "max" in op
    specials = r.pick([(), (), (-INF,), (NAN,)]) if is_max else ()
    x, size = _pool_input(r, spatial, specials=specials)
    config = {"output_size": _output_size(r, size)}
    if is_max:
        _maybe(r, config, "return_indices", r.chance(0.5))
    fn = getattr(F, op)
    return Case(lambda input, **kw: fn(input, **kw), {"input": x}, config,
                ulps=16 if is_max else 32, linear=not is_max, note=f"{op} {list(x.shape)}")


def interpolate(r, op):
    spatial = r.int(1, 3)
    mode = r.pick(["nearest", "nearest-exact", "linear", "linear", "area"])
    if mode == "linear":
        mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[spatial]
    batch = r.int(1, 2)
    size = [r.int(1, 5 if spatial < 3 else 3) for _ in range(spatial)]
    shape = [batch, r.int(1, 2)] + size
    x = r.values(shape)
    config = {}
    if mode != "nearest" or r.chance(0.8):
        config["mode"] = mode
    scale_factors = None
    if r.chance(0.5):
        config["size"] = r.ints_or_list([r.int(1, 6 if spatial < 3 else 4) for _ in size])
        if isinstance(config["size"], int):
            config["size"] = [config["size"]] * spatial if r.chance(0.5) else config["size"]
    else:
        scale_factors = [r.pick([0.5, 1.0, 1.5, 2.0, 3.0, 0.7, 1.3, 2.5]) for _ in size]
        config["scale_factor"] = (scale_factors[0] if r.chance(0.3) else scale_factors)
        if isinstance(config["scale_factor"], float):
            scale_factors = [config["scale_factor"]] * spatial
        _maybe(r, config, "recompute_scale_factor", r.pick([True, False, None]), 0.5)
        if any(math.floor(s * f) < 1 for s, f in zip(size, scale_factors)):
            raise Skip("empty output")
        # PyTorch 1.13 bug, not lumen's: the nearest modes' backward is wrong when a scale
        # factor leaves a size unchanged (without recompute_scale_factor); lumen follows the
        # forward's index map there.
        if (mode.startswith("nearest") and not config.get("recompute_scale_factor") and
                any(math.floor(s * f) == s and f != 1.0 for s, f in zip(size, scale_factors))):
            raise Skip("PyTorch 1.13 nearest backward bug (scale factor, unchanged size)")
    if mode in ("linear", "bilinear", "trilinear") and r.chance(0.7):
        config["align_corners"] = r.chance(0.5)
    _maybe(r, config, "antialias", False, 0.1)
    return Case(lambda input, **kw: F.interpolate(input, **kw), {"input": x}, config, ulps=32,
                linear=True, note=f"interpolate {shape} {mode}")


def pad(r, op):
    mode = r.pick(["constant", "constant", "reflect", "replicate", "circular"])
    if mode == "constant":
        rank = r.int(1, 5)
        shape = r.shape(rank, max_numel=48)
        k = r.int(1, rank)
        pads = []
        for d in range(k):
            size = shape[rank - 1 - d]
            before = r.int(-size, 2) if r.chance(0.3) else r.int(0, 2)
            after = r.int(-(size + before), 2) if r.chance(0.3) else r.int(0, 2)
            pads += [before, after]
        config = {"pad": pads}
        _maybe(r, config, "mode", "constant", 0.5)
        if r.chance(0.5):
            config["value"] = r.pick([0.0, 1.5, -2.0, 1e4])
    else:
        k = r.int(1, 3)
        rank = k + r.int(1, 2)
        shape = r.shape(rank, zero=0.0, hi=4, max_numel=64)
        shape = [s if i < rank - k else max(s, 1) for i, s in enumerate(shape)]
        pads = []
        for d in range(k):
            size = shape[rank - 1 - d]
            limit = size - 1 if mode == "reflect" else (size if mode == "circular" else 3)
            pads += [r.int(0, limit), r.int(0, limit)]
        config = {"pad": pads, "mode": mode}
    x = r.values(shape)
    if torch.Size(shape).numel() > 64:
        raise Skip("too large")
    return Case(lambda input, **kw: F.pad(input, **kw), {"input": x}, config, ulps=16,
                linear=True, note=f"pad {shape} {mode}")


# ---- index and layout ----

def embedding(r, op):
    vocab, width = r.int(1, 6), r.size(zero=0.05, hi=4)
    idx_shape = r.shape(r.int(1, 3), hi=4, max_numel=16)
    inputs = {"input": r.indices(idx_shape, vocab), "weight": r.values([vocab, width])}
    config = {}
    if r.chance(0.4):
        config["padding_idx"] = r.int(-vocab, vocab - 1)
    elif r.chance(0.2):
        config["padding_idx"] = None
    if r.chance(0.2):
        config.update({"max_norm": None, "norm_type": 2.0, "scale_grad_by_freq": False,
                       "sparse": False})
    return Case(lambda input, weight, **kw: F.embedding(input, weight, **kw), inputs, config,
                ulps=16, linear=True, note=f"embedding {vocab}x{width} at {idx_shape}")


def gather(r, op):
    rank = r.int(1, 4)
    shape = r.shape(rank, max_numel=48)
    dim = r.dim(rank)
    if shape[dim] == 0:
        shape[dim] = r.int(1, 3)
    idx_shape = [r.int(0, s) if i != dim % rank else r.size(hi=5)
                 for i, s in enumerate(shape)]
    config = {"dim": dim}
    _maybe(r, config, "sparse_grad", False, 0.2)
    return Case(lambda input, dim, index, **kw: torch.gather(input, dim, index, **kw),
                {"input": r.values(shape), "index": r.indices(idx_shape, shape[dim])}, config,
                ulps=16, linear=True, note=f"gather {shape} dim {dim} index {idx_shape}")


def index_select(r, op):
    rank = r.int(1, 4)
    shape = r.shape(rank, max_numel=48)
    dim = r.dim(rank)
    if shape[dim] == 0:
        shape[dim] = r.int(1, 3)
    n = r.size(hi=5)
    return Case(lambda input, dim, index: torch.index_select(input, dim, index),
                {"input": r.values(shape), "index": r.indices([n], shape[dim])}, {"dim": dim},
                ulps=16, linear=True, note=f"index_select {shape} dim {dim} n {n}")


def scatter_add(r, op):
    rank = r.int(1, 4)
    shape = r.shape(rank, max_numel=48)
    dim = r.dim(rank)
    if shape[dim] == 0:
        shape[dim] = r.int(1, 3)
    src_shape = [r.int(s, s + 1) if i != dim % rank else r.size(hi=5)
                 for i, s in enumerate(shape)]
    idx_shape = [r.int(0, min(s, t) if i != dim % rank else t)
                 for i, (s, t) in enumerate(zip(shape, src_shape))]
    inputs = {"input": r.values(shape), "index": r.indices(idx_shape, shape[dim]),
              "src": r.values(src_shape)}

    def fn(input, dim, index, src):
        # PyTorch 1.13's backward for src returns a gradient of index's shape ("invalid
        # gradient") when index is smaller than src. scatter_add reads only src's leading
        # index-shaped block, so scattering that block is the same function, and its gradient
        # (zero elsewhere) is the documented one.
        return torch.scatter_add(input, dim, index, src[tuple(slice(0, n) for n in index.shape)])
    return Case(fn, inputs, {"dim": dim}, ulps=16, linear=True,
                note=f"scatter_add {shape} dim {dim} index {idx_shape} src {src_shape}")


def index_add(r, op):
    rank = r.int(1, 4)
    shape = r.shape(rank, max_numel=48)
    dim = r.dim(rank)
    if shape[dim] == 0:
        shape[dim] = r.int(1, 3)
    n = r.size(hi=5)
    src_shape = list(shape)
    src_shape[dim] = n
    inputs = {"input": r.values(shape), "index": r.indices([n], shape[dim]),
              "source": r.values(src_shape)}
    config = {"dim": dim}
    _maybe(r, config, "alpha", r.pick([1.0, -0.5, 2.0, 3]))
    return Case(lambda input, dim, index, source, **kw: torch.index_add(input, dim, index,
                                                                          source, **kw),
                inputs, config, ulps=16, linear=True, note=f"index_add {shape} dim {dim} n {n}")


def triangle(r, op):
    rank = r.int(2, 4)
    shape = r.shape(rank, hi=5, max_numel=64)
    config = {}
    _maybe(r, config, "diagonal", r.int(-4, 4))
    fn = torch.tril if op == "tril" else torch.triu
    return Case(lambda input, **kw: fn(input, **kw), {"input": r.values(shape)}, config,
                ulps=16, linear=True, note=f"{op} {shape}")


def roll(r, op):
    rank = r.int(1, 4)
    shape = r.shape(rank, max_numel=48)
    if r.chance(0.2):
        config = {"shifts": r.int(-7, 7)}
        if r.chance(0.5):
            config["dims"] = None
    else:
        count = r.int(1, rank)
        dims = [r.dim(rank) for _ in range(count)]
        shifts = [r.int(-7, 7) for _ in dims]
        config = {"shifts": r.ints_or_list(shifts) if count == 1 else shifts,
                  "dims": dims[0] if count == 1 and r.chance(0.5) else dims}
    return Case(lambda input, **kw: torch.roll(input, **kw), {"input": r.values(shape)}, config,
                ulps=16, linear=True, note=f"roll {shape}")


def flip(r, op):
    rank = r.int(1, 4)
    shape = r.shape(rank, max_numel=48)
    dims = [d - rank if r.chance(0.4) else d for d in r.perm(rank)[:r.int(0, rank)]]
    return Case(lambda input, dims: torch.flip(input, dims), {"input": r.values(shape)},
                {"dims": dims}, ulps=16, linear=True, note=f"flip {shape} {dims}")


def repeat_interleave(r, op):
    rank = r.int(1, 3)
    shape = r.shape(rank, max_numel=24)
    config, inputs = {}, {"input": r.values(shape)}
    dim = r.dim(rank) if r.chance(0.7) else None
    if dim is not None or r.chance(0.5):
        config["dim"] = dim
    n = shape[dim] if dim is not None else int(torch.Size(shape).numel())
    if r.chance(0.5):
        config["repeats"] = r.int(0, 3)
        total = n * config["repeats"]
    else:
        count = n if r.chance(0.8) or n == 0 else 1
        repeats = r.indices([count], 4)
        inputs["repeats"] = repeats
        total = int(repeats.sum()) * (n if count == 1 else 1)
    if r.chance(0.3):
        config["output_size"] = total

    def fn(input, repeats, dim=None, output_size=None):  # repeats: an input or a kwarg
        return torch.repeat_interleave(input, repeats, dim=dim, output_size=output_size)
    return Case(fn, inputs, config, ulps=16, linear=True, note=f"repeat_interleave {shape}")


def one_hot(r, op):
    shape = r.shape(r.int(1, 3), hi=4, max_numel=16)
    classes = r.int(1, 5)
    config = {}
    if r.chance(0.5) or not torch.Size(shape).numel():
        config["num_classes"] = classes + r.int(0, 2)
    elif r.chance(0.3):
        config["num_classes"] = -1
    return Case(lambda input, **kw: F.one_hot(input, **kw), {"input": r.indices(shape, classes)},
                config, ulps=0, note=f"one_hot {shape}")


# ---- losses ----

def _reduction(r, config):
    _maybe(r, config, "reduction", r.pick(["mean", "sum", "none"]), 0.8)


def _class_input(r, op):
    form = r.pick(["unbatched", "rows", "rows", "positions"])
    classes = r.int(1, 5)
    if form == "unbatched":
        shape = [classes]
    elif form == "rows":
        shape = [r.size(zero=0.05, hi=4), classes]
    else:
        shape = [r.size(zero=0.05, hi=2), classes] + r.shape(r.int(1, 2), zero=0.05, hi=3)
    x = r.values(shape, kind=r.pick(["normal", "ties", "wide", None]))
    if r.chance(0.3):  # large logits: the softmax's precision (issue 2)
        x = x * r.pick([1.0, 10.0, 100.0]) + r.pick([300.0, 1e3, -1e4, 1e4])
    return x, shape, classes


def class_loss(r, op):
    x, shape, classes = _class_input(r, op)
    target_shape = shape[:1] + shape[2:] if len(shape) > 1 else []
    config, inputs = {}, {"input": x}
    probabilities = op == "cross_entropy" and r.chance(0.3)
    if probabilities:
        kind = r.pick(["softmax", "onehot", "free"])
        if kind == "softmax":
            t = torch.softmax(r.values(shape, scale=2.0), dim=0 if len(shape) == 1 else 1)
        elif kind == "onehot":
            t = F.one_hot(r.indices(target_shape, classes), classes).double()
            t = t.movedim(-1, 0 if len(shape) == 1 else 1)
        else:
            t = r.positive(shape, 0.0, 1.0)
        inputs["target"] = t
    else:
        t = r.indices(target_shape, classes)
        if r.chance(0.4):
            ignore = r.pick([-100, -1, r.int(0, classes - 1)])
            config["ignore_index"] = ignore
            flat = t.reshape(-1)
            for i in range(flat.numel()):
                if r.chance(0.3):
                    flat[i] = ignore
            t = flat.reshape(t.shape)
        inputs["target"] = t
    if r.chance(0.4):
        inputs["weight"] = r.positive([classes], 0.1, 2.0)
    _reduction(r, config)
    if op == "cross_entropy":
        _maybe(r, config, "label_smoothing", r.pick([0.0, 0.1, 0.5, 1.0]), 0.5)
    fn = getattr(F, op)

    def terms(inputs, config, douts):
        # The input gradient g (softmax a - b w - [c == t] (1 - ls) w_t) cancels to ~0 for a
        # confident or single-class sample: its terms are at most g (2 max w max(sum q, 1)).
        if op != "cross_entropy" or not inputs["input"].numel():
            return {}
        w = inputs.get("weight")
        w_max = _absmax(w) if w is not None else 1.0
        g = _absmax(douts["y"])
        reduction = config.get("reduction", "mean")
        if reduction == "mean":
            t = inputs["target"]
            if t.is_floating_point():
                divisor = t.numel() / classes
            else:
                kept = t[t != config.get("ignore_index", -100)]
                divisor = float(w[kept].sum()) if w is not None else kept.numel()
            g = g / divisor if divisor else 0.0
        q = inputs["target"].sum(0 if len(shape) == 1 else 1) if probabilities else None
        q_max = max(_absmax(q), 1.0) if q is not None else 1.0
        return {"grad.in.input": g * 2 * w_max * q_max}
    return Case(lambda input, target, **kw: fn(input, target, **kw), inputs, config, ulps=64,
                terms=terms, note=f"{op} {shape} probabilities {probabilities}")


def bce_with_logits(r, op):
    shape = r.shape(r.int(1, 4), max_numel=32)
    x = r.values(shape)
    if r.chance(0.2):
        x = x * r.pick([30.0, 1e3])
    target = r.positive(shape, 0.0, 1.0) if r.chance(0.5) else r.indices(shape, 2).double()
    inputs = {"input": x, "target": target}
    if r.chance(0.5):
        inputs["weight"] = r.positive(r.broadcast_to(shape), 0.1, 2.0)
    if r.chance(0.5):
        inputs["pos_weight"] = r.positive(r.broadcast_to(shape), 0.1, 3.0)
    config = {}
    _reduction(r, config)

    def terms(inputs, config, douts):
        # Each result is a difference of terms that can cancel (the target gradient
        # (pw - 1) softplus(-x) - x at x ~ -0.7, pw ~ 0.36 is 0.009 from terms of 0.7): the
        # terms' magnitudes, per element times |dout| and the weights, summed as reduced.
        x, y = inputs["input"], inputs["target"]
        w = inputs.get("weight", torch.ones(()))
        pw = inputs.get("pos_weight", torch.ones(()))
        d = douts["y"].abs()
        if config.get("reduction", "mean") == "mean" and x.numel():
            d = d / x.numel()
        # (+ 2^-52 / (64 eps32), so that U eps S covers 2^-52: PyTorch 1.13 forms
        # log(1 + e^-|x|) with log, not log1p, so its float64 reference is 0 where the value is
        # below double's epsilon, e.g. 1e-17 at x = 38.6.)
        t_out = w * ((1 - y) * x.abs() +
                     (1 + (pw - 1) * y).abs() * (F.softplus(-x) + 2.0 ** -52 / (64 * 2.0 ** -24)))
        t_in = w * ((1 + (pw - 1) * y).abs() * torch.sigmoid(x) + pw * y) * d
        t_target = w * ((pw - 1).abs() * F.softplus(-x) + x.abs()) * d
        reduction = config.get("reduction", "mean")
        total = float(t_out.sum()) / (max(x.numel(), 1) if reduction == "mean" else 1)
        return {"out.y": _absmax(t_out) if reduction == "none" else total,
                "grad.in.input": _absmax(t_in), "grad.in.target": _absmax(t_target)}
    return Case(lambda input, target, **kw: F.binary_cross_entropy_with_logits(input, target,
                                                                                **kw),
                inputs, config, ulps=64, terms=terms, note=f"bce_with_logits {shape}")


def bce(r, op):
    shape = r.shape(r.int(1, 4), max_numel=32)
    x = r.positive(shape, 0.0, 1.0)
    flat = x.reshape(-1)
    for i in range(flat.numel()):
        if r.chance(0.15):
            flat[i] = r.pick([0.0, 1.0, 1e-30, 1 - 2 ** -24])
    x = flat.reshape(shape)
    target = r.positive(shape, 0.0, 1.0) if r.chance(0.5) else r.indices(shape, 2).double()
    inputs = {"input": x, "target": target}
    if r.chance(0.5):
        inputs["weight"] = r.positive(r.broadcast_to(shape), 0.1, 2.0)
    config = {}
    _reduction(r, config)
    # PyTorch 1.13's target gradient is w (log(1 - x) - log(x)) without the forward's clamp of
    # each log at -100, so it is +-inf at x = 0 or 1; lumen differentiates the clamped forward
    # (ops/loss.h). The target takes no gradient in those cases.
    edge = bool(((x == 0) | (x == 1)).any())
    return Case(lambda input, target, **kw: F.binary_cross_entropy(input, target, **kw), inputs,
                config, ulps=64, no_grad=("target",) if edge else (), note=f"bce {shape}")


def regression_loss(r, op):
    shape = r.shape(r.int(1, 4), max_numel=32)
    other = shape if r.chance(0.7) else r.broadcast_to(shape)
    if r.chance(0.5):
        shape, other = other, shape  # the input broadcasts instead
    scale = r.scale()
    x, y = r.values(shape, scale=scale), r.values(other, scale=scale)
    config = {}
    param = None
    if op == "smooth_l1_loss":
        param = r.pick([1.0, 0.5, 0.0, 2.0])
        _maybe(r, config, "beta", param)
        param = config.get("beta", 1.0)
    elif op == "huber_loss":
        param = r.pick([1.0, 0.5, 2.0])
        _maybe(r, config, "delta", param)
        param = config.get("delta", 1.0)
    if r.chance(0.3) and x.numel() and y.numel():  # ties: d exactly 0 or at the kink
        xb, yb = torch.broadcast_tensors(x, y)
        if list(xb.shape) == list(x.shape):
            offsets = [0.0] + ([param, -param] if param else [])
            flat = x.reshape(-1)
            ybf = yb.reshape(-1)
            for i in range(flat.numel()):
                if r.chance(0.4):
                    flat[i] = ybf[i] + r.pick(offsets)
            x = flat.reshape(x.shape)
    _reduction(r, config)
    def terms(inputs, config, douts):
        # A broadcast input's gradient sums the elementwise gradients over the broadcast dims,
        # which can cancel: its terms are the sum of their magnitudes.
        xb, yb = (t.detach().clone().requires_grad_(True)
                  for t in torch.broadcast_tensors(inputs["input"], inputs["target"]))
        if not xb.numel():
            return {}
        getattr(F, op)(xb, yb, **config).backward(douts["y"].abs().reshape(
            [] if config.get("reduction", "mean") != "none" else xb.shape))
        found = {}
        for name, grad in (("input", xb.grad), ("target", yb.grad)):
            shape = inputs[name].shape
            lead = grad.dim() - len(shape)
            dims = list(range(lead)) + [lead + i for i, n in enumerate(shape) if n == 1]
            summed = grad.abs().sum(dims, keepdim=True) if dims else grad.abs()
            found["grad.in." + name] = _absmax(summed)
        return found

    # PyTorch 1.13 bug: smooth_l1_loss with beta = 0 (documented as l1_loss) takes its
    # x <= -beta branch at d = 0, a gradient of -1 where l1_loss's (and lumen's) is 0.
    if op == "smooth_l1_loss" and param == 0.0 and bool((x - y == 0).any()):
        raise Skip("PyTorch 1.13 bug: smooth_l1_loss beta=0 gradient at d = 0")
    fn = getattr(F, op)
    return Case(lambda input, target, **kw: fn(input, target, **kw), {"input": x, "target": y},
                config, ulps=64, terms=terms, note=f"{op} {shape} vs {other}")


BUILDERS = {
    "gelu": activation, "silu": activation, "elu": activation, "sigmoid": activation,
    "tanh": activation, "relu": activation, "softplus": activation,
    "leaky_relu": activation, "hardtanh": activation,
    "softmax": softmax, "log_softmax": softmax,
    "matmul": matmul, "var": var, "cumsum": cumsum,
    "layer_norm": layer_norm, "rms_norm": rms_norm, "group_norm": group_norm,
    "instance_norm": instance_norm, "batch_norm": batch_norm, "normalize": normalize,
    "conv1d": conv, "conv2d": conv, "conv3d": conv,
    "conv_transpose2d": conv_transpose, "conv_transpose3d": conv_transpose,
    "max_pool2d": max_pool, "max_pool3d": max_pool,
    "avg_pool2d": avg_pool, "avg_pool3d": avg_pool,
    "adaptive_avg_pool2d": adaptive_pool, "adaptive_avg_pool3d": adaptive_pool,
    "adaptive_max_pool2d": adaptive_pool, "adaptive_max_pool3d": adaptive_pool,
    "interpolate": interpolate, "pad": pad,
    "embedding": embedding, "gather": gather, "index_select": index_select,
    "scatter_add": scatter_add, "index_add": index_add, "tril": triangle, "triu": triangle,
    "roll": roll, "flip": flip, "repeat_interleave": repeat_interleave, "one_hot": one_hot,
    "cross_entropy": class_loss, "nll_loss": class_loss,
    "binary_cross_entropy_with_logits": bce_with_logits, "binary_cross_entropy": bce,
    "mse_loss": regression_loss, "l1_loss": regression_loss,
    "smooth_l1_loss": regression_loss, "huber_loss": regression_loss,
}
