"""bench/bench_attention.cpp's workloads in PyTorch: forward + backward of the reference
attention modules ref_diff.py, ref_sfree_utnet.py, ref_gdla.py and
ref_context.py (float32) at C = 256, 8 heads of width 32, batch 1, N = 196, 1024, 4096 and 16384
tokens (attn_<variant>_n<N>, ms), and the peak RSS growth of the first forward + backward
(attn_<variant>_n<N>_mem; run one workload per process, as run.sh does). The reference code
lives outside the repository: LUMEN_ORACLE (default ../shared/oracle beside the checkout) points
to it. ref_context's MambaVisionMixer scans with a Python loop over the tokens (the official
selective-scan kernel is CUDA-only), so its timings are the reference's, not a tuned CPU Mamba's;
it runs up to 4096 tokens on the CPU (16384 on a GPU; python_scan_max_tokens) and is skipped
beyond, with that reason. --device cuda runs everything on the GPU (memory: PyTorch's
max_memory_allocated).
Usage: python3 bench/torch_attention.py [--threads N] [--repeats R] [--only attn_mhsa_n196,...]
[--list] [--device cpu|cuda]"""
import math

from torch_util import (SLOW_SCAN, import_references, measure_workload, parse_args,
                        python_scan_max_tokens, selected, start_device)

args = parse_args(__doc__)
torch = start_device("torch_attention")  # after parse_args fixed the thread count
ref_context, ref_diff, ref_gdla, ref_su = import_references(
    "torch_attention", "ref_context", "ref_diff", "ref_gdla", "ref_sfree_utnet")

torch.set_num_threads(args.threads)
DIM, HEADS = 256, 8
TOKENS = (196, 1024, 4096, 16384)
QUADRATIC = {"mhsa", "diff", "dgsa", "vitpt_softmax"}  # keep N x N maps


class OnGrid(torch.nn.Module):
    """A token mixer that takes (x, H, W), called as module(x) on a square grid."""

    def __init__(self, module, side):
        super().__init__()
        self.module, self.side = module, side

    def forward(self, x):
        return self.module(x, self.side, self.side)


class SwinWindowStep(torch.nn.Module):
    """Swin's unshifted window attention on a square token grid: partition into windows,
    ref_context.WindowAttention, reverse (lumen's "swin_window" variant)."""

    def __init__(self, side, window):
        super().__init__()
        self.side, self.window = side, (window, window)
        self.attn = ref_context.WindowAttention(DIM, HEADS, self.window)

    def forward(self, x):
        grid = x.view(x.shape[0], self.side, self.side, DIM)
        windows = ref_context.window_partition(grid, self.window)
        dims = (x.shape[0], self.side, self.side)
        return ref_context.window_reverse(self.attn(windows), self.window, dims).reshape(x.shape)


def build(name, tokens):
    """(module, input) for a variant; UTNet's attention takes a square map."""
    if name == "mhsa":
        return ref_diff.Attention(DIM, HEADS, qkv_bias=True), (1, tokens, DIM)
    if name == "diff":
        return ref_diff.MultiheadDiffAttn(DIM, 0, HEADS), (1, tokens, DIM)
    if name == "dgsa":
        return ref_diff.MultiheadDGSA(DIM, HEADS), (1, tokens, DIM)
    if name == "vitpt_softmax":
        return ref_su.SoftmaxAttention(DIM, heads=HEADS, dim_head=DIM // HEADS), (1, tokens, DIM)
    if name == "seqnorm":
        return ref_su.SeqNormAttention(DIM, heads=HEADS, dim_head=DIM // HEADS), (1, tokens, DIM)
    if name == "vitpt_sima":
        return ref_su.SimAAttention(DIM, heads=HEADS, dim_head=DIM // HEADS), (1, tokens, DIM)
    if name == "sima":
        return ref_su.SimA(DIM, num_heads=HEADS, qkv_bias=False), (1, tokens, DIM)
    if name == "utnet":
        side = round(math.sqrt(tokens))
        module = ref_su.LinearAttention(DIM, heads=HEADS, dim_head=DIM // HEADS,
                                        reduce_size=8 if side % 8 == 0 else 7)
        return module, (1, DIM, side, side)
    if name in ("pvt_sra", "pvt_sra_li"):
        # keys reduced to a 7x7 or 8x8 grid as in PVTv2's stages; "_li" pools them to 7x7
        side = round(math.sqrt(tokens))
        sr_ratio = side // 7 if side % 7 == 0 else side // 8
        module = ref_gdla.SRAttention(DIM, HEADS, sr_ratio, linear_attn=name == "pvt_sra_li")
        return OnGrid(module, side), (1, tokens, DIM)
    if name == "swin_window":
        side = round(math.sqrt(tokens))
        return SwinWindowStep(side, 8 if side % 8 == 0 else 7), (1, tokens, DIM)
    if name == "hyena":
        return ref_context.HyenaOperator(DIM, 66000, 64, HEADS, 5), (1, tokens, DIM)
    if name == "mamba":
        return ref_context.MambaVisionMixer(DIM, d_state=8, d_conv=3, expand=1), (1, tokens, DIM)
    if name == "linear":
        return ref_gdla.MultiHeadLinearAttn(DIM, HEADS), (1, tokens, DIM)
    if name == "gdla":
        side = round(math.sqrt(tokens))
        return OnGrid(ref_gdla.GatedDiffLinearAttn(DIM, HEADS), side), (1, tokens, DIM)
    raise ValueError(name)


def run(module, x, grad):
    for p in module.parameters():
        p.grad = None
    x.grad = None
    y = module(x)
    y = y[0] if isinstance(y, tuple) else y
    y.backward(grad)


NAMES = ["mhsa", "diff", "dgsa", "vitpt_softmax", "seqnorm", "vitpt_sima", "sima", "utnet", "pvt_sra",
         "pvt_sra_li", "hyena", "mamba", "linear", "gdla", "swin_window"]


def attention_maps_gb(tokens):
    """bench_attention.cpp's lower bound: scores, probabilities and their gradient per head."""
    return 3 * 4 * tokens * tokens * HEADS / 1e9


def run_workload(name, tokens):
    need_gb = attention_maps_gb(tokens) if name in QUADRATIC else 0
    why = SLOW_SCAN if name == "mamba" and tokens > python_scan_max_tokens() else None

    def setup():
        torch.manual_seed(1)
        module, shape = build(name, tokens)
        module.to(args.device)
        x = torch.randn(*shape).to(args.device).requires_grad_()
        grad = torch.randn(*shape).to(args.device)  # every variant keeps its input's shape
        return lambda: run(module, x, grad)
    measure_workload(f"attn_{name}_n{tokens}", need_gb, "3 N x N maps per head", setup,
                     args.repeats, why)


for name in NAMES:
    for tokens in TOKENS:
        if not selected(args, f"attn_{name}_n{tokens}"):
            continue
        if args.list:
            print(f"attn_{name}_n{tokens}")
        else:
            run_workload(name, tokens)
