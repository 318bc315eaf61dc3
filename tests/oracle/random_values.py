"""Random draws for gen_random_ops.py: sizes (0 and 1 included), shapes, magnitudes from 1e-4
to 1e4, and value patterns (ties, signed zeros, mixed magnitudes, infinities)."""
import math

import numpy as np
import torch

INF = math.inf
NAN = math.nan


class Case:
    """One op call: fn(**inputs, **config), plus how record() should treat it."""

    def __init__(self, fn, inputs, config=None, *, ulps=64, linear=False, no_grad=(), terms=None,
                 note=""):
        self.fn, self.inputs, self.config = fn, inputs, dict(config or {})
        self.ulps, self.linear, self.no_grad, self.note = ulps, linear, tuple(no_grad), note
        self.terms = terms


class R:
    """A seeded random source with the draws the builders share."""

    def __init__(self, seed_sequence):
        self.g = np.random.default_rng(seed_sequence)

    def int(self, lo, hi):  # inclusive
        return int(self.g.integers(lo, hi + 1))

    def pick(self, seq):
        return seq[int(self.g.integers(len(seq)))]

    def chance(self, p):
        return bool(self.g.random() < p)

    def perm(self, n):
        return [int(i) for i in self.g.permutation(n)]

    def size(self, zero=0.06, hi=4):
        """0 (rarely), 1 (often: broadcast and degenerate dims), else 2..hi."""
        u = self.g.random()
        if u < zero:
            return 0
        if u < zero + 0.22:
            return 1
        return self.int(2, hi)

    def shape(self, rank, zero=0.06, hi=4, max_numel=64):
        while True:
            s = [self.size(zero, hi) for _ in range(rank)]
            if int(np.prod(s)) <= max_numel:
                return s

    def scale(self):
        """The magnitude of one tensor: 1 half of the time, else 10^k for k in -4..4."""
        return 1.0 if self.chance(0.5) else 10.0 ** self.int(-4, 4)

    def values(self, shape, scale=None, kind=None, specials=(), special_p=0.0):
        """float64 values: normal, ties (few levels, exact zeros), signed zeros, mixed
        magnitudes, uniform; with probability special_p each entry becomes one of specials."""
        scale = self.scale() if scale is None else scale
        kind = kind or self.pick(["normal"] * 9 + ["ties"] * 4 + ["zeros"] * 3 + ["wide"] * 2 +
                                 ["uniform"] * 2)
        n = int(np.prod(shape)) if len(shape) else 1
        if kind == "ties":
            v = self.g.integers(-2, 3, n) * 0.5
        elif kind == "wide":
            v = 10.0 ** self.g.uniform(-4, 4, n) * self.g.choice([-1.0, 1.0], n) / scale
        elif kind == "uniform":
            v = self.g.uniform(-1, 1, n)
        else:
            v = self.g.standard_normal(n)
        if kind == "zeros":
            mask = self.g.random(n) < 0.35
            v[mask] = self.g.choice([0.0, -0.0], int(mask.sum()))
        v = v * scale
        if specials and special_p > 0:
            mask = self.g.random(n) < special_p
            v[mask] = self.g.choice(list(specials), int(mask.sum()))
        return torch.tensor(v, dtype=torch.float64).reshape(shape)

    def positive(self, shape, lo=0.1, hi=2.0):
        return torch.tensor(self.g.uniform(lo, hi, int(np.prod(shape))),
                            dtype=torch.float64).reshape(shape)

    def indices(self, shape, hi):
        """int64 in [0, hi)."""
        n = int(np.prod(shape)) if len(shape) else 1
        return torch.tensor(self.g.integers(0, max(hi, 1), n), dtype=torch.int64).reshape(shape)

    def broadcast_to(self, shape):
        """A shape that broadcasts to `shape`: a suffix of it, each size kept or made 1."""
        keep = self.int(0, len(shape))
        tail = shape[len(shape) - keep:]
        return [d if self.chance(0.5) else 1 for d in tail]

    def ints_or_list(self, values):
        """PyTorch's `int | tuple`: one int when all equal (sometimes), else a list."""
        if len(set(values)) == 1 and self.chance(0.4):
            return values[0]
        return list(values)

    def dim(self, rank):
        d = self.int(0, rank - 1)
        return d - rank if self.chance(0.4) else d


def absmax(x):
    return float(x.abs().max()) if x.numel() else 0.0


def maybe(r, config, key, value, p=0.7):
    """Puts key=value into config with probability p (else the default applies)."""
    if r.chance(p):
        config[key] = value
