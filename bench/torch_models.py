"""bench/bench_models.cpp's workloads in PyTorch: one training step (zero_grad, forward, the
deep-supervised cross-entropy, backward, AdamW step) of every paper model of bench/models.json,
built from the PyTorch reference modules (ref_diff.py, ref_sfree_utnet.py, ref_gdla.py,
ref_context.py; not part of this repository, LUMEN_ORACLE points to them) with the registry
options of models.json mapped onto their constructors. "ckpt_<name>" wraps the same blocks
that lumen's grad_checkpointing recomputes in torch.utils.checkpoint (non-reentrant; dropout
replayed). "_act": the MiB the first forward keeps for the backward (growth of the resident
memory from the start of the forward to the loss; on a GPU, of the allocator's live bytes). Usage: python3 bench/torch_models.py [--threads N] [--repeats R] [--only NAMES]
[--list] [--device cpu|cuda]"""
import json
import os
import sys
import types

from torch_util import (import_references, measure_workload, parse_args, proc_status_mb,
                        python_scan_max_tokens, selected, start_device, SLOW_SCAN)

args = parse_args(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = json.load(open(os.path.join(HERE, "models.json")))["workloads"]


def names():
    for w in WORKLOADS:
        for prefix in ("step_", "ckpt_"):
            if selected(args, prefix + w["name"]):
                yield w, prefix + w["name"]


if args.list:
    print("\n".join(name for _, name in names()))
    sys.exit(0)
torch = start_device("torch_models")  # after parse_args fixed the thread count
ref_diff, ref_sfree, ref_gdla, ref_context = import_references(
    "torch_models", "ref_diff", "ref_sfree_utnet", "ref_gdla", "ref_context")
torch.set_num_threads(args.threads)


def build(model, o):
    """The reference model for registry `model` with options `o` (models.json's keys)."""
    o = dict(o)
    if model in ("vit", "dgvit"):
        o["img_size"] = tuple(o["img_size"])
        return (ref_diff.vit if model == "vit" else ref_diff.dgvit)(**o)
    if model in ("transformer", "diff_transformer", "dgt"):
        o.pop("max_len")  # the reference's sinusoidal positions take any length
        return {"transformer": ref_diff.transformer_cls, "diff_transformer":
                ref_diff.difftransformer_cls, "dgt": ref_diff.dgt}[model](**o)
    if model == "sfree_vit":
        return ref_sfree.ViT(**o)
    if model == "sima_vit":
        return ref_sfree.SimAVisionTransformer(**o)
    if model == "pvt_segnet":
        o["encoder"] = dict(ref_gdla.PVT_V2_CONFIGS[o["encoder"]])
        return ref_gdla.PVTSegNet(**o)
    if model == "utnet":
        return ref_sfree.UTNet(**o)
    spatial_dims = len(o["img_size"])
    if model == "context_vit":
        return ref_context.build_vit_model(spatial_dims=spatial_dims, **o)
    if model == "context_swin":
        o["window_size"] = o["window_size"][0] if len(o["window_size"]) == 1 else tuple(
            o["window_size"])
        return ref_context.build_swin_model(spatial_dims=spatial_dims, **o)
    raise ValueError(f"torch_models: no reference for model '{model}'")


# The blocks lumen's grad_checkpointing recomputes, by reference class name (models/*.cpp).
CHECKPOINTED = {
    "vit": ["Block"], "dgvit": ["Block"], "transformer": ["Block"],
    "diff_transformer": ["Block"], "dgt": ["Block"],
    "sima_vit": ["SimABlock", "ClassAttentionBlock"],
    "pvt_segnet": ["PVTBlock", "GDLAM", "PreNormBlock"],
    "utnet": ["BasicBlock", "BasicTransBlock", "BasicTransDecoderBlock"],
    "context_vit": ["TransformerBlock", "UnetrBasicBlock", "UnetrPrUpBlock", "UnetrUpBlock"],
    "context_swin": ["SwinTransformerBlock"],
}


def checkpoint_blocks(model_name, model):
    """Wraps every block of the model in a non-reentrant torch.utils.checkpoint."""
    from torch.utils.checkpoint import checkpoint
    count = 0
    if model_name == "sfree_vit":  # its Transformer holds (attention, feed-forward) pairs
        def forward(self, x):
            for attn, ff in self.layers:
                x = checkpoint(lambda t, a=attn, f=ff: (lambda u: f(u) + u)(a(t) + t), x,
                               use_reentrant=False)
            return self.norm(x)
        for m in model.modules():
            if type(m).__name__ == "Transformer":
                m.forward = types.MethodType(forward, m)
                count += 1
    for m in model.modules():
        if type(m).__name__ in CHECKPOINTED.get(model_name, []):
            inner = m.forward
            m.forward = lambda *a, _f=inner, **k: checkpoint(_f, *a, use_reentrant=False, **k)
            count += 1
    if count == 0:
        raise RuntimeError(f"torch_models: no block of {model_name} to checkpoint")


def live_mb():
    """MiB in use: the GPU allocator's live bytes, or on the CPU the process's resident memory
    (PyTorch's CPU allocator keeps no count), so that a forward's growth is its activations."""
    if args.device != "cpu":
        return torch.cuda.memory_allocated() / 2 ** 20
    return proc_status_mb("VmRSS")


def setup(w, checkpointed):
    torch.manual_seed(0)
    model = build(w["model"], w["options"])
    if checkpointed:
        checkpoint_blocks(w["model"], model)
    model.train().to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    shape, o = w["input"], w["options"]
    if w["kind"] == "tokens":
        x = torch.randint(1, o["vocab_size"], shape)
    else:
        x = torch.randn(*shape)
    classes = next(o[k] for k in ("num_classes", "n_classes", "out_channels") if k in o)
    target_shape = shape[:1] + (shape[2:] if w["target"] == "dense" else [])
    target = torch.randint(0, classes, target_shape)
    if w["model"].startswith("context_") and len(o["img_size"]) == 2:
        # the reference's context models take 2-D images as (B, C, 1, H, W) and give
        # (B, classes, 1, H, W); lumen's take (B, C, H, W)
        x, target = x.unsqueeze(2), target.unsqueeze(1)
    x, target = x.to(args.device), target.to(args.device)
    weights = w.get("loss_weights", [1.0])
    ce = torch.nn.functional.cross_entropy
    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"name": f"{'ckpt' if checkpointed else 'step'}_{w['name']}_params",
                      "unit": "parameters", "value": params, "ms": 0}), flush=True)

    reported = []

    def step():
        optimizer.zero_grad(set_to_none=True)
        before = live_mb()
        out = model(x)
        outputs = list(out) if isinstance(out, (list, tuple)) else [out]
        loss = sum(ce(y, target) * wt for y, wt in zip(outputs, weights))
        if not reported:  # the first step: what the forward keeps for the backward
            reported.append(True)
            print(json.dumps({"name": f"{'ckpt' if checkpointed else 'step'}_{w['name']}_act",
                              "unit": "MB activations", "value": round(live_mb() - before, 1),
                              "ms": 0}), flush=True)
        loss.backward()
        optimizer.step()

    return step


def scan_tokens(w):
    """Tokens of one sequential scan of the reference Mamba (Python loop): the whole token grid
    for the ViT, a window for Swin."""
    o = w["options"]
    if o.get("mixer") != "mamba":
        return 0
    if w["model"] == "context_vit":
        n = 1
        for s in o["img_size"]:
            n *= s // o["patch_size"]
        return n
    return o["window_size"][0] ** len(o["img_size"])


print(f"# torch {torch.__version__} model training steps, {torch.get_num_threads()} threads, "
      f"median of up to {args.repeats} repeats", flush=True)
for w, name in names():
    why = SLOW_SCAN if scan_tokens(w) > python_scan_max_tokens() else None
    measure_workload(name, 0, "", lambda: setup(w, name.startswith("ckpt_")), args.repeats, why)
