// bench_ops: issue 3's speed goals, the workloads of bench/torch_ops.py in lumen. Every
// workload is forward + backward through autograd with a fixed upstream gradient, as in
// training: dense and depthwise 3x3 conv2d, a dense 3x3x3 conv3d; layer_norm, softmax and the
// activations on (64, 1024, 256); the Mamba selective scan and the Hyena FFT long convolution for L
// = 1k..16k tokens (the figures per token show how time grows with L). One JSON object per line
// (bench/run.sh); entries conv3x3_b8_c64_56, conv3x3x3_b1_c32_32x64x64, dwconv3x3_b8_c256_56,
// <op>_64x1024x256 (op: layer_norm, softmax and the activations), selective_scan_l<L>,
// fftconv_l<L>. --device cuda runs them on the GPU. Usage:
// bench_ops [--threads N] [--repeats R] [--only names] [--device cpu|cuda]
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

// An input of the run's device that gradients flow to.
Tensor leaf(const Tensor& t) { return t.to(run_device()).requires_grad_(); }

void bench_conv(const Options& options) {
    int repeats = options.repeats;
    Generator generator(0);
    Tensor x = leaf(randn({8, 64, 56, 56}, DType::float32, &generator));
    Tensor w = leaf(randn({64, 64, 3, 3}, DType::float32, &generator));
    if (selected(options, "conv3x3_b8_c64_56")) {
        double s = median_seconds(fwd_bwd([=] { return conv2d(x, w, Tensor(), {1}, {1}); }, {x, w}),
                                  2, repeats);
        report("conv3x3_b8_c64_56", "GFLOP/s", 3.0 * 2 * 8 * 64 * 64 * 9 * 56 * 56 / s / 1e9, s);
    }
    if (selected(options, "conv3x3x3_b1_c32_32x64x64")) {
        // The full-resolution 3x3x3 convolutions of the UNETR head on a 32x64x64 volume
        // (feature_size 32): most of a ctx ViT 3-D step (bench_models --profile).
        Tensor x3 = leaf(randn({1, 32, 32, 64, 64}, DType::float32, &generator));
        Tensor w3 = leaf(randn({32, 32, 3, 3, 3}, DType::float32, &generator));
        double s = median_seconds(
            fwd_bwd([=] { return conv3d(x3, w3, Tensor(), {1}, {1}); }, {x3, w3}), 2, repeats);
        report("conv3x3x3_b1_c32_32x64x64", "GFLOP/s",
               3.0 * 2 * 32 * 32 * 27 * 32 * 64 * 64 / s / 1e9, s);
    }
    if (!selected(options, "dwconv3x3_b8_c256_56")) return;
    Tensor xd = leaf(randn({8, 256, 56, 56}, DType::float32, &generator));
    Tensor wd = leaf(randn({256, 1, 3, 3}, DType::float32, &generator));
    double s = median_seconds(
        fwd_bwd([=] { return conv2d(xd, wd, Tensor(), {1}, {1}, {1}, 256); }, {xd, wd}), 2,
        repeats);
    report("dwconv3x3_b8_c256_56", "GFLOP/s", 3.0 * 2 * 8 * 256 * 9 * 56 * 56 / s / 1e9, s);
}

void bench_rowwise(const Options& options) {
    Generator generator(0);
    Tensor x = leaf(randn({64, 1024, 256}, DType::float32, &generator));
    Tensor w = leaf(randn({256}, DType::float32, &generator));
    Tensor b = leaf(randn({256}, DType::float32, &generator));
    // Minimum traffic: forward reads x, writes y; backward reads x (or y) and dy, writes dx.
    double traffic = 5.0 * 4 * double(x.numel());
    struct Case {
        const char* name;
        std::function<Tensor()> forward;
        std::vector<Tensor> inputs;
    };
    std::vector<Case> cases = {
        {"layer_norm", [=] { return layer_norm(x, {256}, w, b); }, {x, w, b}},
        {"softmax", [=] { return softmax(x, -1); }, {x}},
        {"gelu", [=] { return gelu(x); }, {x}},
        // The other activations of the papers' models: UNETR's leaky ReLU, the gates' sigmoid,
        // Mamba's and Hyena's SiLU, Mamba's softplus, the GELU tanh form, tanh.
        {"leaky_relu", [=] { return leaky_relu(x, 0.01); }, {x}},
        {"sigmoid", [=] { return sigmoid(x); }, {x}},
        {"silu", [=] { return silu(x); }, {x}},
        {"softplus", [=] { return softplus(x); }, {x}},
        {"gelu_tanh", [=] { return gelu(x, "tanh"); }, {x}},
        {"tanh", [=] { return tanh(x); }, {x}},
    };
    for (const Case& c : cases) {
        std::string name = std::string(c.name) + "_64x1024x256";
        if (!selected(options, name)) continue;
        double s = median_seconds(fwd_bwd(c.forward, c.inputs), 2, options.repeats);
        report(name, "GB/s", traffic / s / 1e9, s);
    }
}

void bench_long(const Options& options) {
    int repeats = options.repeats;
    Generator generator(0);
    const int64_t channels = 64, state = 16;
    const std::vector<int64_t> lengths = {1024, 2048, 4096, 8192, 16384};
    for (int64_t length : lengths) {
        if (!selected(options, "selective_scan_l" + std::to_string(length))) continue;
        Tensor u = leaf(randn({1, channels, length}, DType::float32, &generator));
        Tensor delta = leaf(randn({1, channels, length}, DType::float32, &generator));
        Tensor A = leaf(neg(rand({channels, state}, DType::float32, &generator)));
        Tensor Bm = leaf(randn({1, state, length}, DType::float32, &generator));
        Tensor Cm = leaf(randn({1, state, length}, DType::float32, &generator));
        Tensor D = leaf(randn({channels}, DType::float32, &generator));
        double s = median_seconds(
            fwd_bwd(
                [=] { return selective_scan(u, delta, A, Bm, Cm, D, Tensor(), Tensor(), true); },
                {u, delta, A, Bm, Cm, D}),
            1, repeats);
        report("selective_scan_l" + std::to_string(length), "ktok/s", double(length) / s / 1e3, s);
    }
    for (int64_t length : lengths) {
        if (!selected(options, "fftconv_l" + std::to_string(length))) continue;
        Tensor u = leaf(randn({2, channels, length}, DType::float32, &generator));
        Tensor k = leaf(randn({channels, length}, DType::float32, &generator));
        Tensor D = leaf(randn({channels}, DType::float32, &generator));
        double s = median_seconds(fwd_bwd([=] { return fftconv(u, k, D); }, {u, k, D}), 1, repeats);
        report("fftconv_l" + std::to_string(length), "Mtok/s", 2.0 * double(length) / s / 1e6, s);
    }
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (options.threads > 0) set_num_threads(options.threads);
    std::printf("# lumen bench_ops on %s, %d threads, median of %d repeats\n",
                options.device.str().c_str(), get_num_threads(), options.repeats);
    bench_conv(options);
    bench_rowwise(options);
    bench_long(options);
    return 0;
}
