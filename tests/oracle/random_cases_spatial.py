"""Case builders (random_op_cases.py): convolutions, pooling, interpolation, padding."""
import math

import torch
import torch.nn.functional as F

from oracle_record import Skip
from random_values import INF, NAN, Case, maybe as _maybe


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
