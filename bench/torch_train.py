"""bench/bench_train.cpp's workload in PyTorch: one training step (zero_grad, forward,
cross-entropy, backward, AdamW step) of the DGSA paper's Table 3 ViT and DGViT (D 256, 8 layers,
8 heads, patch 4, dropout 0.05) on 28x28x1 input, batch 128 (BATCH overrides), built from the
PyTorch reference modules ref_diff.py (not part of this repository; LUMEN_ORACLE points
to them). --device cuda
trains on the GPU.
Usage: python3 bench/torch_train.py [--threads N] [--repeats R] [--only NAMES] [--list]
[--device cpu|cuda]"""
import os
import sys

from torch_util import import_references, median_seconds, parse_args, report, selected, start_device

args = parse_args(__doc__)
if args.list:
    print("vit_train_step\ndgvit_train_step")
    sys.exit(0)
torch = start_device("torch_train")  # after parse_args fixed the thread count
(ref_diff,) = import_references("torch_train", "ref_diff")

torch.set_num_threads(args.threads)
BATCH = int(os.environ.get("BATCH", "128"))
REPEATS = min(args.repeats, 5)


def time_model(name, model):
    torch.manual_seed(0)
    model.train()
    model.to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    images = torch.randn(BATCH, 1, 28, 28).to(args.device)
    labels = torch.randint(0, 10, (BATCH,)).to(args.device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()

    seconds = median_seconds(step, 2, REPEATS)
    params = sum(p.numel() for p in model.parameters())
    print(f"# {name}: {params} parameters, batch {BATCH}")
    report(name, "images/s", BATCH / seconds, seconds)


print(f"# torch {torch.__version__} train step, {torch.get_num_threads()} threads, "
      f"median of {REPEATS} repeats", flush=True)
shape = dict(img_size=(28, 28), patch_size=4, in_chans=1, num_classes=10, embed_dim=256,
             depth=8, num_heads=8, drop=0.05)
if selected(args, "vit_train_step"):
    time_model("vit_train_step", ref_diff.vit(**shape))
if selected(args, "dgvit_train_step"):
    time_model("dgvit_train_step", ref_diff.dgvit(**shape))
