"""Case builders (random_op_cases.py): index and layout ops, losses."""
import torch
import torch.nn.functional as F

from oracle_record import Skip
from random_values import Case, absmax as _absmax, maybe as _maybe


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
        if op == "nll_loss":
            # The reduced loss -sum w_t x_t cancels when the picked inputs have both signs
            # (50 w_1 - 100 w_0 + 100 w_0 - 50 w_1 = 0 up to float rounding): its terms are the
            # same loss of |x|.
            rest = {k: v for k, v in inputs.items() if k not in ("input", "target")}
            magnitude = fn(inputs["input"].abs(), inputs["target"], **rest, **config)
            return {"out.y": _absmax(magnitude)}
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
