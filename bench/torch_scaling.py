"""bench/bench_scaling.cpp's workloads in PyTorch (the PyTorch references, LUMEN_ORACLE):
ref_sfree_utnet.ViT training step vs resolution (sfree_<attn>_r<R>), ref_context.ViT forward +
backward vs patch size (ctx_<mixer>_p<p>), at the same reduced depth and image size. The Python
loop of ref_context's Mamba scan runs up to 4096 tokens only on the CPU (16384: over 15 min in a
trial). --device cuda runs them on the GPU.
Usage: python3 bench/torch_scaling.py [--threads N] [--repeats R] [--only names] [--list]
[--device cpu|cuda]"""
from torch_util import (SLOW_SCAN, import_references, measure_workload, parse_args,
                        python_scan_max_tokens, selected, start_device)

args = parse_args(__doc__)
torch = start_device("torch_scaling")  # after parse_args fixed the thread count
ref_context, ref_sfree_utnet = import_references("torch_scaling", "ref_context",
                                                 "ref_sfree_utnet")

torch.set_num_threads(args.threads)
SFREE = dict(depth=1, dim=1024, heads=8, dim_head=64, mlp_dim=1024, patch=16,
             attns=("softmax", "seqnorm", "sima"), resolutions=(224, 512, 1024, 2048))
CONTEXT = dict(depth=1, hidden=384, heads=6, mlp_dim=1536, image=512,
               mixers=("attn", "hyena", "mamba"), patches=(32, 16, 8, 4))


def attention_maps_gb(tokens, heads, depth):
    """bench_scaling.cpp's lower bound: (depth + 2) N x N float32 maps per head."""
    return (depth + 2) * 4 * tokens * tokens * heads / 1e9


def measure(name, need_gb, step, why=None):
    measure_workload(name, need_gb, "N x N attention maps", lambda: step, args.repeats, why)


def run_sfree(attn, resolution):
    c = SFREE
    torch.manual_seed(0)
    model = ref_sfree_utnet.ViT(num_classes=2, dim=c["dim"], depth=c["depth"], heads=c["heads"],
                                mlp_dim=c["mlp_dim"], attn=attn, dim_head=c["dim_head"],
                                channels=3, image_size=resolution, patch_size=c["patch"])
    model.to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    image = torch.randn(1, 3, resolution, resolution).to(args.device)
    label = torch.zeros(1, dtype=torch.long).to(args.device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(image), label).backward()
        optimizer.step()

    tokens = (resolution // c["patch"]) ** 2 + 1  # with the class token
    need_gb = attention_maps_gb(tokens, c["heads"], c["depth"]) if attn == "softmax" else 0
    measure(f"sfree_{attn}_r{resolution}", need_gb, step)


def run_context(mixer, patch):
    c = CONTEXT
    torch.manual_seed(0)
    model = ref_context.ViT(1, (c["image"], c["image"]), patch, hidden_size=c["hidden"],
                            mlp_dim=c["mlp_dim"], num_layers=c["depth"], num_heads=c["heads"],
                            mixer=mixer)
    model.to(args.device)
    image = torch.randn(1, 1, c["image"], c["image"]).to(args.device)
    tokens = (c["image"] // patch) ** 2
    grad = torch.randn(1, tokens, c["hidden"]).to(args.device)

    def step():
        model.zero_grad(set_to_none=True)
        model(image)[-1].backward(grad)

    need_gb = attention_maps_gb(tokens, c["heads"], c["depth"]) if mixer == "attn" else 0
    slow = mixer == "mamba" and tokens > python_scan_max_tokens()
    measure(f"ctx_{mixer}_p{patch}", need_gb, step, SLOW_SCAN if slow else None)


for attn in SFREE["attns"]:
    for resolution in SFREE["resolutions"]:
        name = f"sfree_{attn}_r{resolution}"
        if not selected(args, name):
            continue
        if args.list:
            print(name)
        else:
            run_sfree(attn, resolution)
for mixer in CONTEXT["mixers"]:
    for patch in CONTEXT["patches"]:
        name = f"ctx_{mixer}_p{patch}"
        if not selected(args, name):
            continue
        if args.list:
            print(name)
        else:
            run_context(mixer, patch)
