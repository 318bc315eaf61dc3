// CPU/CUDA parity of the convolutions: outputs and the gradients of input, weight and bias for
// conv1d/2d/3d (stride, padding, "same", dilation, groups, 1x1), depthwise 3x3 / 3x3x3 (the
// fast path) and other depthwise kernels (Mamba's causal k = 4), conv_transpose2d/3d, with and
// without bias, batch > 1, unbatched and non-contiguous inputs, float32 and float64; the
// chunked im2col paths under a lowered scratch limit; mixed-device errors.
#include <string>
#include <vector>

#include "core/cuda_guard.h"
#include "ops/conv_kernels.h"
#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

using Ints = std::vector<int64_t>;

struct ConvCase {
    std::string name;
    int nd;
    Shape x, w;
    Ints stride = {1}, padding = {0}, dilation = {1};
    int64_t groups = 1;
    std::string mode = "";  // "same" / "valid" instead of numeric padding
    bool transposed = false;
    Ints output_padding = {0};
};

int64_t out_channels(const ConvCase& c) { return c.transposed ? c.w[1] * c.groups : c.w[0]; }

Tensor run_conv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
    if (c.transposed) {
        if (c.nd == 2)
            return conv_transpose2d(x, w, b, c.stride, c.padding, c.output_padding, c.groups,
                                    c.dilation);
        return conv_transpose3d(x, w, b, c.stride, c.padding, c.output_padding, c.groups,
                                c.dilation);
    }
    if (!c.mode.empty()) {
        ConvPadding mode(c.mode);
        if (c.nd == 1) return conv1d(x, w, b, c.stride, mode, c.dilation, c.groups);
        if (c.nd == 2) return conv2d(x, w, b, c.stride, mode, c.dilation, c.groups);
        return conv3d(x, w, b, c.stride, mode, c.dilation, c.groups);
    }
    if (c.nd == 1) return conv1d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
    if (c.nd == 2) return conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
    return conv3d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
}

std::vector<ConvCase> conv_cases() {
    return {
        {"conv1d strided", 1, {2, 3, 17}, {4, 3, 3}, {2}, {1}},
        {"conv1d unbatched dilated", 1, {3, 20}, {5, 3, 3}, {1}, {2}, {3}},
        {"conv1d causal depthwise (Mamba)", 1, {2, 6, 19}, {6, 1, 4}, {1}, {3}, {1}, 6},
        {"conv1d depthwise strided dilated", 1, {2, 4, 23}, {4, 1, 3}, {2}, {2}, {2}, 4},
        {"conv2d 3x3", 2, {2, 5, 11, 13}, {7, 5, 3, 3}, {1}, {1}},
        {"conv2d grouped strided dilated",
         2,
         {3, 6, 15, 14},
         {4, 3, 3, 2},
         {2, 1},
         {1, 2},
         {2, 1},
         2},
        {"conv2d 1x1 (x is the column matrix)", 2, {2, 8, 9, 7}, {5, 8, 1, 1}},
        {"conv2d 1x1 strided", 2, {2, 4, 9, 7}, {3, 4, 1, 1}, {2}},
        {"conv2d same, even kernel", 2, {2, 3, 10, 9}, {4, 3, 4, 3}, {1}, {0}, {1, 2}, 1, "same"},
        {"conv2d valid", 2, {2, 3, 10, 9}, {4, 3, 3, 3}, {1}, {0}, {1}, 1, "valid"},
        {"conv2d patch embedding", 2, {2, 3, 16, 16}, {8, 3, 4, 4}, {4}},
        {"conv2d many channels", 2, {5, 16, 20, 20}, {32, 16, 3, 3}, {1}, {1}},
        {"conv2d channel multiplier (dense path)", 2, {2, 3, 8, 8}, {6, 1, 3, 3}, {1}, {1}, {1}, 3},
        {"depthwise 3x3 pad 1", 2, {2, 6, 13, 11}, {6, 1, 3, 3}, {1}, {1}, {1}, 6},
        {"depthwise 3x3 pad 0", 2, {2, 3, 9, 10}, {3, 1, 3, 3}, {1}, {0}, {1}, 3},
        {"depthwise 3x3 pad 2", 2, {1, 3, 6, 5}, {3, 1, 3, 3}, {1}, {2}, {1}, 3},
        {"depthwise 3x3 same", 2, {2, 4, 7, 33}, {4, 1, 3, 3}, {1}, {0}, {1}, 4, "same"},
        {"depthwise 3x3 stride 2", 2, {2, 5, 12, 11}, {5, 1, 3, 3}, {2}, {1}, {1}, 5},
        {"depthwise 5x5 dilated", 2, {2, 3, 14, 13}, {3, 1, 5, 5}, {1}, {4}, {2}, 3},
        {"depthwise 7x7", 2, {2, 4, 9, 9}, {4, 1, 7, 7}, {1}, {3}, {1}, 4},
        {"conv3d", 3, {2, 3, 5, 6, 7}, {4, 3, 3, 3, 3}, {1, 2, 1}, {1}},
        {"conv3d grouped dilated", 3, {1, 4, 6, 7, 8}, {6, 2, 2, 3, 2}, {2}, {1}, {2, 1, 1}, 2},
        {"depthwise 3x3x3", 3, {2, 4, 5, 6, 7}, {4, 1, 3, 3, 3}, {1}, {1}, {1}, 4},
        {"depthwise 1x3x3 in 3-D", 3, {2, 3, 4, 6, 5}, {3, 1, 1, 3, 3}, {1}, {0, 1, 1}, {1}, 3},
        {"depthwise 3x3x3 stride 2", 3, {1, 2, 6, 7, 5}, {2, 1, 3, 3, 3}, {2}, {1}, {1}, 2},
    };
}

std::vector<ConvCase> transpose_cases() {
    std::vector<ConvCase> cases = {
        {"conv_transpose2d", 2, {2, 4, 5, 6}, {4, 3, 3, 3}, {2}, {1}},
        {"conv_transpose2d grouped dilated", 2, {2, 4, 5, 5}, {4, 2, 3, 3}, {2}, {0}, {2}, 2},
        {"conv_transpose2d depthwise", 2, {2, 4, 6, 6}, {4, 1, 3, 3}, {1}, {1}, {1}, 4},
        {"conv_transpose2d depthwise strided", 2, {2, 3, 5, 4}, {3, 1, 3, 3}, {2}, {1}, {1}, 3},
        {"conv_transpose3d", 3, {1, 4, 3, 4, 5}, {4, 2, 3, 3, 3}, {2}, {1}},
        {"conv_transpose2d 1x1 output_padding", 2, {2, 3, 4, 5}, {3, 2, 1, 1}, {1}, {0}, {2}},
    };
    for (ConvCase& c : cases) c.transposed = true;
    cases[0].output_padding = {1};
    cases[4].output_padding = {1, 0, 1};
    cases[5].output_padding = {1};  // allowed as it is below the dilation
    return cases;
}

// The same convolution on the CPU and the GPU: output and the gradients of every operand for
// the same upstream gradient. `strided` makes the input a non-contiguous leaf.
void require_conv_parity(const ConvCase& c, DType dtype, bool with_bias, bool strided) {
    INFO(c.name << ": x " << text(c.x) << ", w " << text(c.w) << ", " << dtype_name(dtype)
                << (with_bias ? ", bias" : ", no bias") << (strided ? ", non-contiguous x" : ""));
    Tensor x = random_input(c.x, 1).to(dtype), w = random_input(c.w, 2).to(dtype);
    Tensor b = with_bias ? random_input({out_channels(c)}, 3).to(dtype) : Tensor();
    Function f = [&](const std::vector<Tensor>& in) { return run_conv(c, in[0], in[1], in[2]); };
    std::vector<Tensor> want = output_and_grads(f, {x, w, b}, Device::cpu(), strided);
    std::vector<Tensor> got = output_and_grads(f, {x, w, b}, Device::cuda(), strided);
    REQUIRE(got.size() == want.size());
    double rtol = dtype == DType::float64 ? 1e-10 : 1e-4;
    double atol = dtype == DType::float64 ? 1e-10 : 5e-4;
    const char* names[] = {"output", "grad input", "grad weight", "grad bias"};
    for (size_t i = 0; i < got.size(); ++i) {
        INFO(names[i]);
        require_close(got[i], want[i], rtol, atol);
    }
}

// Sets the CUDA convolution scratch limit and returns the previous one (only called once a
// case found a CUDA device, so the backend is linked).
int64_t exchange_scratch_limit(int64_t bytes) { return cuda::set_conv_scratch_limit(bytes); }

// Lowers the limit for one scope.
struct ScratchLimit {
    int64_t previous;
    explicit ScratchLimit(int64_t bytes) : previous(exchange_scratch_limit(bytes)) {}
    ~ScratchLimit() { exchange_scratch_limit(previous); }
};

}  // namespace

TEST_CASE("conv1d/2d/3d on the GPU match the CPU, outputs and gradients", "[cuda][ops][conv]") {
    if (!have_gpu()) return;
    for (const ConvCase& c : conv_cases())
        for (DType dtype : {DType::float32, DType::float64})
            for (bool with_bias : {true, false}) require_conv_parity(c, dtype, with_bias, false);
}

TEST_CASE("conv_transpose2d/3d on the GPU match the CPU, outputs and gradients",
          "[cuda][ops][conv]") {
    if (!have_gpu()) return;
    for (const ConvCase& c : transpose_cases())
        for (DType dtype : {DType::float32, DType::float64})
            for (bool with_bias : {true, false}) require_conv_parity(c, dtype, with_bias, false);
}

TEST_CASE("convolutions on the GPU read non-contiguous inputs", "[cuda][ops][conv]") {
    if (!have_gpu()) return;
    std::vector<ConvCase> cases = conv_cases(), transposed = transpose_cases();
    cases.insert(cases.end(), transposed.begin(), transposed.end());
    for (const ConvCase& c : cases) require_conv_parity(c, DType::float32, true, true);
}

// With a scratch limit of a few KiB the dense kernels cut the batch into chunks of samples,
// or one sample's output positions into column chunks (col2im then accumulates), and the
// weight gradient goes through batched partials or accumulates GEMM by GEMM.
TEST_CASE("dense convolutions on the GPU give the same results in small scratch chunks",
          "[cuda][ops][conv]") {
    if (!have_gpu()) return;
    std::vector<ConvCase> cases = {
        {"conv2d 3x3", 2, {5, 4, 9, 10}, {6, 4, 3, 3}, {1}, {1}},
        {"conv2d grouped strided", 2, {3, 4, 11, 9}, {6, 2, 3, 3}, {2}, {1}, {1}, 2},
        {"conv3d", 3, {3, 2, 4, 5, 6}, {3, 2, 3, 3, 3}, {1}, {1}},
        {"conv_transpose2d", 2, {3, 4, 6, 5}, {4, 3, 3, 3}, {2}, {1}},
    };
    cases.back().transposed = true;
    // 32 KiB: two samples per chunk of the first case in float32 (and two-sample weight
    // partials), one in float64; 4 KiB and 512 bytes: column chunks of one sample.
    for (int64_t limit : {int64_t(32) << 10, int64_t(4) << 10, int64_t(512)}) {
        INFO("scratch limit " << limit << " bytes");
        ScratchLimit scratch(limit);
        for (const ConvCase& c : cases)
            for (DType dtype : {DType::float32, DType::float64})
                require_conv_parity(c, dtype, true, false);
    }
}

TEST_CASE("convolutions on the GPU refuse operands on different devices", "[cuda][ops][conv]") {
    if (!have_gpu()) return;
    Tensor x = random_input({1, 2, 5, 5}, 1), w = random_input({3, 2, 3, 3}, 2);
    Tensor b = random_input({3}, 3);
    require_error([&] { conv2d(x.cuda(), w); }, {"[conv2d]", "different devices"});
    require_error([&] { conv2d(x.cuda(), w.cuda(), b); }, {"[conv2d]", "different devices"});
    require_error([&] { conv_transpose2d(x, w.transpose(0, 1).contiguous().cuda()); },
                  {"[conv_transpose2d]", "different devices"});
}

// A transposed 1x1 convolution at stride 1 with output_padding has one more row and column
// than its input, which only the bias reaches; x is then not its own column matrix.
TEST_CASE("conv_transpose2d 1x1 with output_padding leaves the padded edge to the bias",
          "[ops][conv]") {
    Tensor x = random_input({1, 2, 3, 3}, 1), w = random_input({2, 1, 1, 1}, 2);
    Tensor bias = random_input({1}, 3);
    Tensor y = conv_transpose2d(x, w, bias, {1}, {0}, {1}, 1, {2});
    REQUIRE(y.shape() == Shape{1, 1, 4, 4});
    std::vector<double> xs = x.to_vector<double>(), ws = w.to_vector<double>();
    std::vector<double> want(16, bias.to_vector<double>()[0]);
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 3; ++j)
            want[i * 4 + j] += ws[0] * xs[i * 3 + j] + ws[1] * xs[9 + i * 3 + j];
    require_close(y, want, 1e-12, 1e-12);
}
