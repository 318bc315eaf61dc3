"""The PyTorch side of bench/bench_diff_attention.cpp: forward and forward + backward of the
reference attentions of spec diff (shared/oracle/ref_diff.py: timm-layout Attention,
MultiheadDiffAttn, MultiheadDGSA) at C = 256, 8 heads, N = 196 (B = 8) and N = 4096 (B = 1).
Usage: /usr/bin/python3 bench/torch_diff_attention.py [--threads N] [--repeats R], or
SUITES=diff_attention bash bench/run.sh"""
import os
import sys

from torch_util import median_seconds, parse_args, report

args = parse_args(__doc__)
import torch  # noqa: E402  (after parse_args fixed the thread count)

# The reference modules: shared/oracle next to the checkout (/work/shared beside /work/<tree>).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                                "oracle"))
import ref_diff as R  # noqa: E402

torch.set_num_threads(args.threads)
MAKERS = {
    "mhsa": lambda: R.Attention(256, 8),
    "diff": lambda: R.MultiheadDiffAttn(256, 0, 8),
    "dgsa": lambda: R.MultiheadDGSA(256, 8),
}

for name, make in MAKERS.items():
    for batch, n in ((8, 196), (1, 4096)):
        torch.manual_seed(0)
        attn = make().float()
        x = torch.randn(batch, n, 256, requires_grad=True)
        w = torch.randn(batch, n, 256)
        repeats = args.repeats if n < 1000 else max(1, args.repeats // 3)

        def forward():
            with torch.no_grad():
                attn(x)

        def both():
            attn.zero_grad()
            (attn(x) * w).sum().backward()

        tag = f"{name}_B{batch}_N{n}"
        t = median_seconds(forward, 1, repeats)
        report(tag + "_fwd", "tokens/s", batch * n / t, t)
        t = median_seconds(both, 1, repeats)
        report(tag + "_fwd_bwd", "tokens/s", batch * n / t, t)
