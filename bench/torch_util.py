"""Timing and reporting shared by the bench/torch_*.py scripts, in the JSON-lines format of
bench/bench_util.h, with its workload selection (--only, --list), device (--device cpu|cuda:
every timed run waits for the GPU), timing policy and peak memory, and the pieces several of
them run (GPU timing, forward + backward bodies, the long-sequence
references). Import it before torch: parse_args fixes the thread count first; the functions
that need torch import it when called."""
import argparse
import json
import os
import statistics
import sys
import time

# The device of this run (--device, set by parse_args): "cpu" or "cuda[:i]".
DEVICE = "cpu"


def parse_args(doc):
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--only", type=lambda names: names.split(","), default=[],
                        help="run only these workloads (a name or a name prefix before '_')")
    parser.add_argument("--list", action="store_true", help="print the workload names and exit")
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:i]")
    args = parser.parse_args()
    global DEVICE
    DEVICE = args.device
    # PyTorch's BLAS (OpenBLAS here) reads its thread count when it loads: set it before import.
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    return args


def selected(args, name):
    """bench_util.h's selected: every workload without --only; with it, those named or whose
    name continues with '_' ('--only sgemm' runs sgemm_256 ... sgemm_2048)."""
    return not args.only or any(name == o or name.startswith(o + "_") for o in args.only)


def import_references(name, *modules):
    """The PyTorch reference modules (ref_*.py, not in this repository) that `name` runs,
    imported from LUMEN_ORACLE (default ../shared/oracle beside the checkout, else the copy that
    scripts/gpu-deps.sh leaves in .devdeps/oracle); without them the script says so and exits 0
    (the lumen side then stands alone)."""
    import importlib
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    oracle = os.environ.get("LUMEN_ORACLE", os.path.join(root, "..", "shared", "oracle"))
    if "LUMEN_ORACLE" not in os.environ and not os.path.isdir(oracle):
        oracle = os.path.join(root, ".devdeps", "oracle")
    if not all(os.path.exists(os.path.join(oracle, m + ".py")) for m in modules):
        print(f"# {name}: no reference modules at {oracle} (set LUMEN_ORACLE)")
        sys.exit(0)
    sys.path.insert(0, oracle)
    return [importlib.import_module(m) for m in modules]


def on_gpu():
    return DEVICE.startswith("cuda")


def start_device(name):
    """torch, imported now (after parse_args), checked against --device: asking for CUDA where
    PyTorch has none ends the process with a message (exit 1), as bench_util.h does. On CUDA,
    TF32 is off for convolutions too (PyTorch allows it there by default; lumen computes FP32,
    bench_cuda_blas times TF32 on its own)."""
    import torch
    if on_gpu():
        if not torch.cuda.is_available():
            sys.exit(f"{name}: --device {DEVICE}, but PyTorch {torch.__version__} sees no CUDA "
                     "device")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return torch


def sync_device():
    """Waits for the GPU when the workloads run on one (bench_util.h's sync_device)."""
    if on_gpu():
        import torch
        torch.cuda.synchronize()


def seconds_of(body):
    sync_device()
    start = time.perf_counter()
    body()
    sync_device()
    return time.perf_counter() - start


def median_seconds(body, warmup, repeats):
    for _ in range(warmup):
        body()
    return statistics.median([seconds_of(body) for _ in range(repeats)])


def report(name, unit, value, seconds):
    print(json.dumps({"name": name, "unit": unit, "value": round(value, 3),
                      "ms": round(seconds * 1e3, 4)}), flush=True)


def timed_median(body, first_seconds, repeats):
    """bench_util.h's timing policy: two more untimed runs after a first one under 0.1 s, then
    `repeats` timed runs (3 when a run takes over 1 s, 1 over 4 s); the upper median."""
    if first_seconds < 0.1:
        body()
        body()
    if first_seconds > 4:
        repeats = 1
    elif first_seconds > 1:
        repeats = min(repeats, 3)
    times = [seconds_of(body) for _ in range(repeats)]
    return sorted(times)[len(times) // 2]


def proc_status_mb(field):
    """A field of /proc/self/status in MiB ("VmRSS": resident now, "VmHWM": the peak)."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def first_run(body):
    """(seconds, peak RSS growth in MiB) of the first run of a workload in a fresh process: the
    peak is reset to the current RSS first (Linux >= 4.0: "5" to /proc/self/clear_refs). On
    CUDA the figure is max_memory_allocated over the bytes allocated before instead."""
    if on_gpu():
        import torch
        sync_device()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        seconds = seconds_of(body)
        return seconds, (torch.cuda.max_memory_allocated() - before) / 2 ** 20
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    before = proc_status_mb("VmRSS")
    start = time.perf_counter()
    body()
    seconds = time.perf_counter() - start
    return seconds, proc_status_mb("VmHWM") - before


def report_memory(name, rss_mb):
    print(json.dumps({"name": name + "_mem", "unit": "MB peak", "value": round(rss_mb, 1),
                      "ms": 0}), flush=True)


def report_skip(name, unit, why):
    print(json.dumps({"name": name, "unit": unit, "value": None, "ms": None, "skipped": why}),
          flush=True)


def measure_workload(name, need_gb, maps, setup, repeats, why=None):
    """bench_util.h's measure_workload: "<name>" (ms) and "<name>_mem" of the step that `setup`
    returns, timed after a first run that gives the memory figure; both skipped with the reason
    `why`, when need_gb exceeds memory_limit_gb() ("would need >= X GB (maps)"), or when the
    GPU runs out of memory."""
    import torch
    if need_gb > memory_limit_gb():
        why = f"would need >= {need_gb:.0f} GB ({maps})"
    oom = getattr(torch.cuda, "OutOfMemoryError", MemoryError)
    if not why:
        try:
            step = setup()
            first_seconds, peak_mb = first_run(step)
            s = timed_median(step, first_seconds, repeats)
            report(name, "ms", s * 1e3, s)
            report_memory(name, peak_mb)
            return
        except oom as error:
            why = "ran out of memory"
            print(f"{name}: {error}", file=sys.stderr)
    report_skip(name, "ms", why)
    report_skip(name + "_mem", "MB peak", why)


def python_scan_max_tokens():
    """The reference Mamba scans (ref_context.selective_scan, selective_scan below) loop over
    the tokens in Python: minutes per CPU step beyond 4096 tokens (16384: over 15 min in a
    trial); on a GPU each token costs a few kernel launches, so up to 16384 run."""
    return 16384 if on_gpu() else 4096


SLOW_SCAN = "the reference's Python loop over the tokens would take many minutes"


def memory_limit_gb():
    """bench_util.h's memory_limit_gb: BENCH_MEMORY_LIMIT_GB, default 8."""
    return float(os.environ.get("BENCH_MEMORY_LIMIT_GB", "8"))


def start_cuda_bench(name, args, note=""):
    """torch, imported now, after parse_args, with the bench's opening line printed. Without
    PyTorch or without a CUDA device it says so and exits 0, as the lumen benches do."""
    try:
        import torch
    except ImportError:
        print(f"# {name}: PyTorch is not installed")
        raise SystemExit(0)
    if not torch.cuda.is_available():
        print(f"# {name}: no CUDA device")
        raise SystemExit(0)
    print(f"# torch {torch.__version__} {name}, median of {args.repeats} repeats{note}",
          flush=True)
    return torch


def gpu_seconds(body, repeats, warmup=3):
    """Median seconds of a GPU workload: every run, warm-ups included, waits for the device."""
    import torch

    def synced():
        body()
        torch.cuda.synchronize()
    return median_seconds(synced, warmup, repeats)


def fwd_bwd(make_output, inputs):
    """A body that clears the inputs' gradients, runs the forward and back-propagates a fixed
    random gradient (drawn on the first run, so that every run does the same work)."""
    import torch
    grad = []

    def body():
        for t in inputs:
            t.grad = None
        y = make_output()
        if not grad:
            grad.append(torch.randn_like(y))
        y.backward(grad[0])
    return body


def selective_scan(u, delta, A, Bm, Cm, D):
    """The sequential Mamba scan of the reference ref_context.py with delta_softplus=True and no
    delta_bias (PyTorch has no fused kernel; reimplemented so that bench/ needs no other file)."""
    import torch
    delta = torch.nn.functional.softplus(delta)
    h = u.new_zeros(u.shape[0], u.shape[1], A.shape[1])
    ys = []
    for t in range(u.shape[2]):
        dt = delta[:, :, t, None]
        h = torch.exp(dt * A) * h + dt * Bm[:, None, :, t] * u[:, :, t, None]
        ys.append((h * Cm[:, None, :, t]).sum(-1))
    return torch.stack(ys, dim=-1) + u * D[:, None]


def causal_fft_conv(u, k, D):
    """ref_context.causal_fft_conv, the Hyena long convolution: FFT size 2L, no wrap-around."""
    import torch
    n = 2 * u.shape[-1]
    y = torch.fft.irfft(torch.fft.rfft(u, n=n) * torch.fft.rfft(k, n=n), n=n)[..., :u.shape[-1]]
    return y + u * D[:, None]
