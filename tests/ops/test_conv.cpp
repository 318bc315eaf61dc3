// Convolution: forward and both backward products against a naive float64 loop over every
// (sample, output, input channel, tap) for dense, grouped, depthwise, strided, dilated, "same"
// and transposed problems in 1-D, 2-D and 3-D; float64 gradcheck; non-contiguous and
// unbatched inputs; argument errors; the PyTorch oracle vectors.
#include <string>
#include <vector>

#include "conformance/check_vectors.h"
#include "ops/conv_kernels.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

using Ints = std::vector<int64_t>;

// One convolution x (B, C_in, S...) * w (C_out, C_in / groups, K...), spatial lists per dim.
struct Problem {
    Shape x, w;
    Ints stride, before, after, dilation;
    int64_t groups = 1;

    size_t nd() const { return x.size() - 2; }
    Shape y() const {
        Shape shape = {x[0], w[0]};
        for (size_t d = 0; d < nd(); ++d)
            shape.push_back((x[d + 2] + before[d] + after[d] - dilation[d] * (w[d + 2] - 1) - 1) /
                                stride[d] +
                            1);
        return shape;
    }
};

Problem problem(Shape x, Shape w, Ints stride, Ints padding, Ints dilation, int64_t groups) {
    return {x, w, stride, padding, padding, dilation, groups};
}

// Calls fn(y_index, x_index, w_index) for every multiply-add of the convolution (row-major
// flat indices), skipping taps in the padding.
template <typename Fn>
void visit(const Problem& p, const Fn& fn) {
    Shape y = p.y();
    size_t nd = p.nd();
    int64_t in_group = p.w[1], out_group = p.w[0] / p.groups;
    int64_t y_spatial = shape_numel(Shape(y.begin() + 2, y.end()));
    int64_t taps = shape_numel(Shape(p.w.begin() + 2, p.w.end()));
    int64_t x_spatial = shape_numel(Shape(p.x.begin() + 2, p.x.end()));
    for (int64_t b = 0; b < y[0]; ++b)
        for (int64_t o = 0; o < y[1]; ++o)
            for (int64_t pos = 0; pos < y_spatial; ++pos)
                for (int64_t c = 0; c < in_group; ++c)
                    for (int64_t k = 0; k < taps; ++k) {
                        int64_t x_pos = 0, rest_pos = pos, rest_k = k, scale = 1;
                        bool inside = true;
                        for (size_t d = nd; d-- > 0;) {
                            int64_t o_d = rest_pos % y[d + 2], k_d = rest_k % p.w[d + 2];
                            rest_pos /= y[d + 2];
                            rest_k /= p.w[d + 2];
                            int64_t i = o_d * p.stride[d] - p.before[d] + k_d * p.dilation[d];
                            inside &= i >= 0 && i < p.x[d + 2];
                            x_pos += i * scale;
                            scale *= p.x[d + 2];
                        }
                        if (!inside) continue;
                        int64_t channel = (o / out_group) * in_group + c;
                        fn((b * y[1] + o) * y_spatial + pos,
                           (b * p.x[1] + channel) * x_spatial + x_pos,
                           (o * in_group + c) * taps + k);
                    }
}

std::vector<double> reference_forward(const Problem& p, const Tensor& x, const Tensor& w,
                                      const Tensor& bias) {
    std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
    std::vector<double> y(size_t(shape_numel(p.y())), 0.0);
    if (bias.defined()) {
        std::vector<double> bv = bias.to_vector<double>();
        int64_t spatial = int64_t(y.size()) / (p.y()[0] * p.y()[1]);
        for (size_t i = 0; i < y.size(); ++i) y[i] = bv[size_t(int64_t(i) / spatial % p.y()[1])];
    }
    visit(p, [&](int64_t yi, int64_t xi, int64_t wi) {
        y[size_t(yi)] += xv[size_t(xi)] * wv[size_t(wi)];
    });
    return y;
}

// The gradients of sum(conv(x, w) * r) with respect to x and w, by the naive loop.
struct Gradients {
    std::vector<double> x, w;
};
Gradients reference_gradients(const Problem& p, const Tensor& x, const Tensor& w, const Tensor& r) {
    std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
    std::vector<double> rv = r.to_vector<double>();
    Gradients g{std::vector<double>(xv.size(), 0.0), std::vector<double>(wv.size(), 0.0)};
    visit(p, [&](int64_t yi, int64_t xi, int64_t wi) {
        g.x[size_t(xi)] += rv[size_t(yi)] * wv[size_t(wi)];
        g.w[size_t(wi)] += rv[size_t(yi)] * xv[size_t(xi)];
    });
    return g;
}

// Transposed convolution = the scatter of the convolution whose input has `out` shape.
std::vector<double> reference_transpose(const Problem& conv, const Tensor& x, const Tensor& w,
                                        const Tensor& bias) {
    std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
    std::vector<double> y(size_t(shape_numel(conv.x)), 0.0);
    int64_t spatial = int64_t(y.size()) / (conv.x[0] * conv.x[1]);
    if (bias.defined()) {
        std::vector<double> bv = bias.to_vector<double>();
        for (size_t i = 0; i < y.size(); ++i) y[i] = bv[size_t(int64_t(i) / spatial % conv.x[1])];
    }
    visit(conv, [&](int64_t yi, int64_t xi, int64_t wi) {
        y[size_t(xi)] += xv[size_t(yi)] * wv[size_t(wi)];
    });
    return y;
}

Tensor run_conv(const Problem& p, const Tensor& x, const Tensor& w, const Tensor& b) {
    Ints padding = p.before;
    switch (p.nd()) {
        case 1: return conv1d(x, w, b, p.stride, padding, p.dilation, p.groups);
        case 2: return conv2d(x, w, b, p.stride, padding, p.dilation, p.groups);
        default: return conv3d(x, w, b, p.stride, padding, p.dilation, p.groups);
    }
}

// A spread of problems: dense, grouped, depthwise (1-D causal k = 4, k = 3 and 5; 2-D 3x3
// at stride 1 and 2, dilated; 3-D 3x3x3), strided/dilated, patch embedding, pointwise.
std::vector<Problem> problems() {
    return {
        problem({2, 3, 11}, {4, 3, 3}, {1}, {1}, {1}, 1),
        problem({2, 4, 12}, {4, 1, 4}, {1}, {3}, {1}, 4),
        problem({3, 5, 9}, {5, 1, 5}, {1}, {4}, {1}, 5),
        problem({2, 4, 13}, {6, 2, 3}, {2}, {2}, {3}, 2),
        problem({2, 3, 9, 7}, {4, 3, 3, 3}, {1}, {1}, {1}, 1),
        problem({2, 6, 7, 9}, {6, 1, 3, 3}, {1}, {1}, {1}, 6),
        problem({1, 2, 4, 21}, {2, 1, 3, 3}, {1}, {1}, {1}, 2),
        problem({2, 3, 20}, {3, 1, 3}, {1}, {1}, {1}, 3),
        problem({1, 5, 8, 7}, {5, 1, 3, 3}, {2, 2}, {1, 1}, {1}, 5),
        problem({2, 3, 9, 8}, {3, 1, 3, 2}, {2, 1}, {2, 0}, {2, 3}, 3),
        problem({2, 4, 10, 8}, {6, 2, 3, 3}, {2, 2}, {2, 1}, {2, 1}, 2),
        problem({2, 3, 8, 8}, {5, 3, 4, 4}, {4, 4}, {0, 0}, {1}, 1),
        problem({2, 6, 5, 7}, {4, 6, 1, 1}, {1}, {0}, {1}, 1),
        problem({1, 4, 5, 6}, {4, 2, 1, 1}, {2, 1}, {0, 1}, {1}, 2),
        problem({1, 2, 5, 7, 6}, {3, 2, 3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1}, 1),
        problem({2, 3, 4, 5, 6}, {3, 1, 3, 3, 3}, {1}, {1}, {1}, 3),
        problem({1, 2, 5, 6, 5}, {2, 1, 3, 3, 3}, {2, 1, 2}, {1, 2, 0}, {1, 2, 1}, 2),
    };
}

Problem expanded(Problem p) {
    for (Ints* list : {&p.stride, &p.before, &p.after, &p.dilation})
        if (list->size() == 1) list->assign(p.nd(), (*list)[0]);
    return p;
}

// Runs `given` in float64 and float32 (x, weight, bias and the output weights from seeds
// seed..seed + 3) against the naive float64 loops: the output, grad_x and grad_weight. With
// `set_mode`, once with it set to ConvDirect::always and once to never.
void check_against_naive(const Problem& given, uint64_t seed,
                         void (*set_mode)(cpu::ConvDirect) = nullptr) {
    Problem p = expanded(given);
    INFO("x " << text(p.x) << " w " << text(p.w));
    for (DType dtype : {DType::float64, DType::float32}) {
        double tolerance = dtype == DType::float64 ? 1e-10 : 1e-4;
        Tensor x = random_input(p.x, seed).to(dtype), w = random_input(p.w, seed + 1).to(dtype);
        Tensor b = random_input({p.w[0]}, seed + 2).to(dtype);
        Tensor r = random_input(p.y(), seed + 3).to(dtype);
        Gradients want = reference_gradients(p, x, w, r);
        std::vector<double> y_want = reference_forward(p, x, w, b);
        std::vector<cpu::ConvDirect> modes = {cpu::ConvDirect::always, cpu::ConvDirect::never};
        if (!set_mode) modes.resize(1);
        for (cpu::ConvDirect mode : modes) {
            if (set_mode) set_mode(mode);
            Tensor leaf = x.detach().requires_grad_(), weight = w.detach().requires_grad_();
            Tensor y = run_conv(given, leaf, weight, b);
            require_close(y, y_want, tolerance, tolerance);
            sum(y * r).backward();
            require_close(leaf.grad(), want.x, tolerance, tolerance);
            require_close(weight.grad(), want.w, tolerance, tolerance);
        }
    }
}

}  // namespace

TEST_CASE("conv: forward matches a naive loop for dense, grouped and depthwise problems",
          "[ops][conv]") {
    uint64_t seed = 1;
    for (const Problem& given : problems()) {
        Problem p = expanded(given);
        INFO("x " << text(p.x) << " w " << text(p.w) << " groups " << p.groups);
        Tensor x = random_input(p.x, seed++), w = random_input(p.w, seed++);
        Tensor b = random_input({p.w[0]}, seed++);
        Tensor y = run_conv(given, x, w, b);
        require_close(y, reference_forward(p, x, w, b), 1e-10, 1e-12);
        CHECK(y.shape() == p.y());
        require_close(run_conv(given, x, w, Tensor()), reference_forward(p, x, w, Tensor()), 1e-10,
                      1e-12);
        Tensor y32 =
            run_conv(given, x.to(DType::float32), w.to(DType::float32), b.to(DType::float32));
        CHECK(y32.dtype() == DType::float32);
        require_close(y32, y.to_vector<double>(), 1e-4, 1e-5);
    }
}

TEST_CASE("conv: gradients match finite differences", "[ops][conv]") {
    uint64_t seed = 100;
    for (const Problem& given : problems()) {
        if (shape_numel(given.w) > 120) continue;  // the large dense ones: see the test below
        INFO("x " << text(given.x) << " w " << text(given.w) << " groups " << given.groups);
        Tensor x = random_input(given.x, seed++), w = random_input(given.w, seed++);
        gradcheck(
            [&](const std::vector<Tensor>& in) { return run_conv(given, in[0], in[1], in[2]); },
            {x, w, random_input({given.w[0]}, seed++)});
    }
}

TEST_CASE("conv: backward matches naive loops across GEMM chunks and groups", "[ops][conv]") {
    // 64 input channels x 9 taps make im2col chunks narrower than the 400 output positions.
    // A single sample splits grad_input by input channels (two threads or more).
    for (const Problem& given : {problem({2, 64, 20, 20}, {8, 64, 3, 3}, {1}, {1}, {1}, 1),
                                 problem({1, 32, 16, 16}, {16, 32, 3, 3}, {1}, {1}, {1}, 1),
                                 problem({3, 8, 9, 11}, {6, 4, 3, 2}, {1, 2}, {1, 0}, {2, 1}, 2),
                                 problem({2, 4, 6, 5, 7}, {4, 1, 3, 3, 3}, {2}, {1}, {1}, 4)}) {
        Problem p = expanded(given);
        Tensor x = random_input(p.x, 7), w = random_input(p.w, 8), b = random_input({p.w[0]}, 9);
        Tensor r = random_input(p.y(), 10);
        x.requires_grad_();
        w.requires_grad_();
        b.requires_grad_();
        sum(run_conv(given, x, w, b) * r).backward();
        Gradients want = reference_gradients(p, x, w, r);
        require_close(x.grad(), want.x, 1e-10, 1e-12);
        require_close(w.grad(), want.w, 1e-10, 1e-12);
        std::vector<double> rv = r.to_vector<double>(), grad_b(size_t(p.w[0]), 0.0);
        int64_t spatial = int64_t(rv.size()) / (p.y()[0] * p.y()[1]);
        for (size_t i = 0; i < rv.size(); ++i)
            grad_b[size_t(int64_t(i) / spatial % p.w[0])] += rv[i];
        require_close(b.grad(), grad_b, 1e-10, 1e-12);
    }
}

TEST_CASE("conv: the direct float32 kernels match the naive loop, forward and both gradients",
          "[ops][conv]") {
    // Stride-1 problems of 32k output channels (and, for grad_x, 32k input channels), run by
    // the direct kernels of ops/cpu/conv_direct.cpp (ConvDirect::always; they need AVX-512)
    // and by im2col + GEMM (never). A row of Wo outputs is cut into ceil(Wo / 12) tiles of
    // nearly equal size: widths 1 to 13 run every tile size from 1 to 12 (29: 9 + 10 + 10);
    // padding 2 with k = 3 makes grad_x's equivalent padding negative; C_in = 1 is a network's
    // first convolution; 96 output channels are three blocks of 32.
    struct RestoreDefault {  // also when a check below throws
        ~RestoreDefault() {
            cpu::set_conv_direct(cpu::ConvDirect::automatic);
            cpu::set_conv_winograd(cpu::ConvDirect::automatic);
        }
    } restore;
    cpu::set_conv_winograd(cpu::ConvDirect::never);  // these kernels, not Winograd's
    ConvShape probe;
    probe.kernel[2] = 3;
    probe.out_channels = 32;
    cpu::set_conv_direct(cpu::ConvDirect::always);
    bool avx512 = cpu::conv_direct_applies(probe, cpu::ConvPass::forward);
    if (!avx512) WARN("no AVX-512 here: the direct kernels are not run, only im2col + GEMM");
    std::vector<Problem> problems;
    for (int64_t width = 1; width <= 13; ++width)
        problems.push_back(problem({1, 32, 2, 2, width}, {32, 32, 3, 3, 3}, {1}, {1}, {1}, 1));
    for (const Problem& given : {problem({2, 32, 5, 6, 29}, {32, 32, 3, 3, 3}, {1}, {1}, {1}, 1),
                                 problem({1, 1, 4, 5, 17}, {64, 1, 3, 3, 3}, {1}, {1}, {1}, 1),
                                 problem({2, 32, 7, 13}, {96, 32, 3, 3}, {1}, {1}, {1}, 1),
                                 problem({1, 32, 6, 14}, {64, 32, 3, 3}, {1}, {0}, {1}, 1),
                                 problem({1, 64, 3, 4, 10}, {32, 64, 3, 3, 3}, {1}, {2}, {1}, 1),
                                 problem({2, 32, 40}, {32, 32, 5}, {1}, {2}, {1}, 1)})
        problems.push_back(given);
    for (const Problem& given : problems) {
        Problem p = expanded(given);
        INFO("x " << text(p.x) << " w " << text(p.w));
        Tensor x = random_input(p.x, 31).to(DType::float32);
        Tensor w = random_input(p.w, 32).to(DType::float32);
        Tensor b = random_input({p.w[0]}, 33).to(DType::float32);
        Tensor r = random_input(p.y(), 34).to(DType::float32);
        Gradients grad = reference_gradients(p, x, w, r);
        std::vector<double> want = reference_forward(p, x, w, b);
        for (cpu::ConvDirect mode : {cpu::ConvDirect::always, cpu::ConvDirect::never}) {
            cpu::set_conv_direct(mode);
            Tensor leaf = x.detach().requires_grad_(), weight = w.detach().requires_grad_();
            Tensor y = run_conv(given, leaf, weight, b);
            require_close(y, want, 1e-4, 1e-4);
            sum(y * r).backward();
            require_close(leaf.grad(), grad.x, 1e-4, 1e-4);
            require_close(weight.grad(), grad.w, 1e-4, 1e-4);
        }
    }
    // The default: most 3-D convolutions with 8 channels read or more, and the gradients of 2-D
    // 3x3 ones on wide rows (conv_direct_applies has the measurements).
    cpu::set_conv_direct(cpu::ConvDirect::automatic);
    auto applies = [](int64_t in, int64_t out, int64_t depth_taps, int64_t width,
                      cpu::ConvPass pass) {
        ConvShape s;
        s.in_channels = in;
        s.out_channels = out;
        for (int d = 0; d < 3; ++d) {
            s.kernel[d] = d == 0 ? depth_taps : 3;
            s.padding[d] = s.kernel[d] / 2;
            s.input[d] = s.output[d] = width;
        }
        return cpu::conv_direct_applies(s, pass);
    };
    using cpu::ConvPass;
    for (ConvPass pass : {ConvPass::forward, ConvPass::input_gradient, ConvPass::weight_gradient}) {
        CHECK(applies(32, 32, 3, 64, pass) == avx512);
        CHECK(applies(64, 32, 3, 64, pass) == avx512);
        CHECK(!applies(32, 32, 3, 8, pass));  // short rows
    }
    CHECK(!applies(1, 32, 3, 64, ConvPass::forward));         // the first convolution
    CHECK(!applies(1, 32, 3, 64, ConvPass::input_gradient));  // writes 1 channel
    CHECK(applies(128, 256, 3, 16, ConvPass::forward) == avx512);
    CHECK(applies(256, 128, 3, 16, ConvPass::input_gradient) == avx512);
    CHECK(!applies(32, 512, 3, 64, ConvPass::forward));  // more channels: the GEMM wins
    CHECK(!applies(32, 128, 3, 64, ConvPass::weight_gradient));
    CHECK(!applies(64, 64, 3, 16, ConvPass::weight_gradient));
    // 2-D 3x3: the gradients on rows of 128 or more, never the forward
    CHECK(!applies(32, 32, 1, 256, ConvPass::forward));
    CHECK(applies(32, 32, 1, 256, ConvPass::input_gradient) == avx512);
    CHECK(applies(32, 32, 1, 256, ConvPass::weight_gradient) == avx512);
    CHECK(!applies(32, 32, 1, 64, ConvPass::weight_gradient));
    CHECK(!applies(32, 128, 1, 256, ConvPass::weight_gradient));
}

TEST_CASE("conv: depthwise kernels match the naive loop on both paths, float32 and float64",
          "[ops][conv]") {
    // ops/cpu/conv_rows.cpp runs stride-1 problems with rows of up to 64 outputs on small
    // planes as one flat row per plane (the padded plane laid out so each tap is one pass), the
    // rest row by row. Here: PVT's and SimA's 3x3 at 7x7 and 14x14, rows of 64 (flat) and 65
    // (row by row), a 3x3x3 volume, a causal-style 1-D k = 4, dilation, a 7x7 kernel, even
    // kernel widths (no fused 3-tap pass), no padding, more than 9 taps per pass of the weight
    // gradient (27 = 9 + 9 + 9, 49 = 5 x 9 + 4), several samples per channel, stride 2.
    for (const Problem& given : {problem({2, 5, 7, 7}, {5, 1, 3, 3}, {1}, {1}, {1}, 5),
                                 problem({3, 4, 14, 14}, {4, 1, 3, 3}, {1}, {1}, {1}, 4),
                                 problem({2, 3, 5, 64}, {3, 1, 3, 3}, {1}, {1}, {1}, 3),
                                 problem({2, 3, 5, 65}, {3, 1, 3, 3}, {1}, {1}, {1}, 3),
                                 problem({2, 3, 4, 6, 9}, {3, 1, 3, 3, 3}, {1}, {1}, {1}, 3),
                                 problem({2, 4, 30}, {4, 1, 4}, {1}, {3}, {1}, 4),
                                 problem({2, 3, 9, 10}, {3, 1, 3, 3}, {1}, {2}, {2}, 3),
                                 problem({1, 2, 11, 12}, {2, 1, 7, 7}, {1}, {3}, {1}, 2),
                                 problem({2, 3, 9, 8}, {3, 1, 3, 2}, {1}, {2}, {2, 3}, 3),
                                 problem({2, 3, 6, 7}, {3, 1, 3, 3}, {1}, {0}, {1}, 3),
                                 problem({2, 3, 9, 70}, {3, 1, 3, 3}, {2}, {1}, {1}, 3)})
        check_against_naive(given, 41);
}

TEST_CASE("conv: the few-channel row kernels match the naive loop, forward and both gradients",
          "[ops][conv]") {
    // ops/cpu/conv_rows.cpp's dense kernels for few output channels (a segmentation
    // head's classes), forced on (ConvDirect::always: every stride-1 problem the AVX-512
    // kernels do not take) and off (never: im2col + GEMM), float64 and float32. Tiles of 4, 2
    // and 1 channels with a last tile of fewer (3, 6 channels; grad_x writes the input
    // channels: 6 and 7), rows of 16, 20, 33 and 40 outputs (tiles past the end), dilation,
    // uneven kernels, no padding, a 1-D and a 3-D kernel, three samples.
    struct RestoreDefault {
        ~RestoreDefault() { cpu::set_conv_direct(cpu::ConvDirect::automatic); }
    } restore;
    for (const Problem& given : {problem({2, 5, 9, 20}, {2, 5, 3, 3}, {1}, {1}, {1}, 1),
                                 problem({1, 3, 4, 5, 17}, {1, 3, 3, 3, 3}, {1}, {1}, {1}, 1),
                                 problem({2, 6, 9, 16}, {3, 6, 3, 2}, {1}, {2, 1}, {2, 1}, 1),
                                 problem({3, 7, 5, 33}, {6, 7, 3, 3}, {1}, {0}, {1}, 1),
                                 problem({2, 4, 40}, {2, 4, 5}, {1}, {2}, {1}, 1),
                                 problem({1, 2, 6, 24}, {4, 2, 3, 3}, {1}, {1}, {2}, 1)})
        check_against_naive(given, 51, &cpu::set_conv_direct);
    // The default: a head's 2 classes 3x3 and 3x3x3, up to 8 channels with 27 taps, not 1x1,
    // strided, short rows or more channels.
    cpu::set_conv_direct(cpu::ConvDirect::automatic);
    auto applies = [](int64_t in, int64_t out, int64_t depth_taps, int64_t taps, int64_t width,
                      int64_t stride) {
        ConvShape s;
        s.in_channels = in;
        s.out_channels = out;
        for (int d = 0; d < 3; ++d) {
            s.kernel[d] = d == 0 ? depth_taps : taps;
            s.padding[d] = s.kernel[d] / 2;
            s.stride[d] = stride;
            s.input[d] = width;
            s.output[d] = (width + 2 * s.padding[d] - s.kernel[d]) / stride + 1;
        }
        return cpu::few_channels_conv_applies(s, cpu::ConvPass::forward);
    };
    CHECK(applies(192, 2, 1, 3, 256, 1));
    CHECK(applies(192, 2, 3, 3, 64, 1));
    CHECK(applies(32, 8, 3, 3, 64, 1));
    CHECK(!applies(64, 8, 1, 3, 128, 1));
    CHECK(!applies(64, 9, 3, 3, 64, 1));
    CHECK(!applies(64, 2, 1, 1, 256, 1));
    CHECK(!applies(64, 2, 1, 3, 256, 2));
    CHECK(!applies(64, 2, 1, 3, 8, 1));
}

TEST_CASE("conv: Winograd F(2x2x2, 3x3x3) and F(2x2, 3x3) match the naive loop, both passes",
          "[ops][conv]") {
    // ops/cpu/conv_winograd.cpp forced on (set_conv_winograd(always): every stride-1 3x3x3
    // problem) against the float64 loop, float64 and float32: odd and even sizes (blocks past
    // the end), padding 0, 1 and 2 (grad_x's flipped padding 2, 1 and 0), channel counts that
    // leave a last register tile of 1 to 3 channels, rows of more than one 16-block tile, and
    // two samples.
    struct RestoreDefault {
        ~RestoreDefault() { cpu::set_conv_winograd(cpu::ConvDirect::automatic); }
    } restore;
    cpu::set_conv_winograd(cpu::ConvDirect::always);
    for (const Problem& given : {problem({2, 3, 5, 6, 7}, {5, 3, 3, 3, 3}, {1}, {1}, {1}, 1),
                                 problem({1, 6, 4, 5, 37}, {7, 6, 3, 3, 3}, {1}, {1}, {1}, 1),
                                 problem({1, 4, 6, 7, 8}, {2, 4, 3, 3, 3}, {1}, {0}, {1}, 1),
                                 problem({1, 2, 3, 4, 5}, {6, 2, 3, 3, 3}, {1}, {2}, {1}, 1),
                                 problem({2, 5, 4, 4, 33}, {1, 5, 3, 3, 3}, {1}, {1}, {1}, 1),
                                 // F(2x2, 3x3): 2-D, and 3-D with a 1x3x3 kernel
                                 problem({2, 3, 7, 9}, {5, 3, 3, 3}, {1}, {1}, {1}, 1),
                                 problem({1, 7, 6, 35}, {6, 7, 3, 3}, {1}, {0}, {1}, 1),
                                 problem({1, 2, 5, 6}, {3, 2, 3, 3}, {1}, {2}, {1}, 1),
                                 problem({1, 3, 3, 5, 6}, {4, 3, 1, 3, 3}, {1}, {0, 1, 1}, {1}, 1)})
        check_against_naive(given, 61);
}

TEST_CASE("conv: padding 'same' and 'valid' as in PyTorch", "[ops][conv]") {
    // Even dilated kernels need an odd total padding: the extra element goes after.
    Tensor x = random_input({2, 3, 7, 6}, 20), w = random_input({4, 3, 4, 3}, 21);
    Tensor b = random_input({4}, 22);
    Problem p{{2, 3, 7, 6}, {4, 3, 4, 3}, {1, 1}, {3, 1}, {3, 1}, {2, 1}, 1};
    Problem p_odd{{2, 3, 7, 6}, {4, 3, 4, 3}, {1, 1}, {1, 1}, {2, 1}, {1, 1}, 1};
    Tensor same = conv2d(x, w, b, {1}, "same", {2, 1});
    CHECK(same.shape() == Shape{2, 4, 7, 6});
    require_close(same, reference_forward(p, x, w, b), 1e-10, 1e-12);
    require_close(conv2d(x, w, b, {1}, "same"), reference_forward(p_odd, x, w, b), 1e-10, 1e-12);
    require_close(conv2d(x, w, b, {1}, "valid"), conv2d(x, w, b).to_vector<double>());
    // Mamba's k = 3 and the Hyena-style k = 5 depthwise 1-D filters, "same".
    Tensor seq = random_input({2, 6, 10}, 23);
    for (int64_t k : {3, 5}) {
        Tensor filter = random_input({6, 1, k}, 24);
        Problem q = problem({2, 6, 10}, {6, 1, k}, {1}, {(k - 1) / 2}, {1}, 6);
        require_close(conv1d(seq, filter, Tensor(), {1}, "same", {1}, 6),
                      reference_forward(q, seq, filter, Tensor()), 1e-10, 1e-12);
    }
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return conv2d(in[0], in[1], in[2], {1}, "same", {2, 1});
        },
        {random_input({1, 2, 5, 4}, 25), random_input({3, 2, 4, 2}, 26), random_input({3}, 27)});
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return conv3d(in[0], in[1], Tensor(), {1}, "same", {1}, 2);
        },
        {random_input({1, 2, 3, 4, 3}, 28), random_input({2, 1, 2, 3, 2}, 29)});
}

TEST_CASE("conv: non-contiguous, unbatched and empty-batch inputs", "[ops][conv]") {
    Tensor x = random_input({2, 4, 6, 5}, 30), w = random_input({4, 2, 3, 3}, 31);
    Tensor b = random_input({4}, 32);
    Tensor want = conv2d(x, w, b, {1}, {1}, {1}, 2);
    require_close(conv2d(noncontiguous(x), noncontiguous(w), b, {1}, {1}, {1}, 2),
                  want.to_vector<double>(), 1e-12);
    Tensor dw = random_input({4, 1, 3, 3}, 33);
    require_close(conv2d(noncontiguous(x), dw, Tensor(), {1}, {1}, {1}, 4),
                  conv2d(x, dw, Tensor(), {1}, {1}, {1}, 4).to_vector<double>(), 1e-12);
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return conv2d(in[0], in[1], in[2], {2, 1}, {1}, {1}, 2);
        },
        {noncontiguous(random_input({1, 4, 5, 4}, 34)),
         noncontiguous(random_input({2, 2, 3, 2}, 35)), random_input({2}, 36)});
    Tensor single = conv2d(x.slice(0, 1, 2).squeeze(0), w, b, {1}, {1}, {1}, 2);
    CHECK(single.shape() == Shape{4, 6, 5});
    require_close(single, want.slice(0, 1, 2).squeeze(0).contiguous().to_vector<double>(), 1e-12);
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return conv1d(in[0], in[1], Tensor(), {1}, {3}, {1}, 3);
        },
        {random_input({3, 7}, 37), random_input({3, 1, 4}, 38)});
    for (int64_t groups : {1, 4}) {
        Tensor empty_x = zeros({0, 4, 5, 5}, DType::float64);
        Tensor filter = random_input({4, 4 / groups, 3, 3}, 39);
        empty_x.requires_grad_();
        filter.requires_grad_();
        Tensor y = conv2d(empty_x, filter, Tensor(), {1}, {1}, {1}, groups);
        CHECK(y.shape() == Shape{0, 4, 5, 5});
        sum(y).backward();
        require_close(filter.grad(),
                      zeros({4, 4 / groups, 3, 3}, DType::float64).to_vector<double>());
    }
}

TEST_CASE("conv_transpose: forward matches the scatter loop, gradients match finite differences",
          "[ops][conv]") {
    struct Case {
        Shape x, w;
        Ints stride, padding, output_padding, dilation;
        int64_t groups;
    };
    std::vector<Case> cases = {
        {{2, 4, 7, 5}, {4, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
        {{1, 4, 3, 4}, {4, 2, 2, 3}, {2, 3}, {0, 1}, {1, 2}, {1, 1}, 2},
        {{2, 3, 4, 3}, {3, 1, 3, 3}, {1, 2}, {1, 0}, {0, 1}, {2, 1}, 3},
        {{1, 2, 3, 3}, {2, 1, 3, 3}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 2},
        {{1, 3, 3, 4, 5}, {3, 2, 2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
        {{1, 2, 3, 2, 3}, {2, 2, 3, 2, 3}, {2, 1, 2}, {1, 0, 1}, {1, 0, 0}, {1, 2, 1}, 2},
    };
    uint64_t seed = 40;
    for (const Case& c : cases) {
        INFO("x " << text(c.x) << " w " << text(c.w) << " groups " << c.groups);
        size_t nd = c.x.size() - 2;
        Shape out = {c.x[0], c.w[1] * c.groups};
        for (size_t d = 0; d < nd; ++d)
            out.push_back((c.x[d + 2] - 1) * c.stride[d] - 2 * c.padding[d] +
                          c.dilation[d] * (c.w[d + 2] - 1) + c.output_padding[d] + 1);
        Problem conv{out, c.w, c.stride, c.padding, c.padding, c.dilation, c.groups};
        auto run = [&](const std::vector<Tensor>& in) {
            return nd == 2 ? conv_transpose2d(in[0], in[1], in[2], c.stride, c.padding,
                                              c.output_padding, c.groups, c.dilation)
                           : conv_transpose3d(in[0], in[1], in[2], c.stride, c.padding,
                                              c.output_padding, c.groups, c.dilation);
        };
        Tensor x = random_input(c.x, seed++), w = random_input(c.w, seed++);
        Tensor b = random_input({out[1]}, seed++);
        Tensor y = run({x, w, b});
        CHECK(y.shape() == out);
        require_close(y, reference_transpose(conv, x, w, b), 1e-10, 1e-12);
        gradcheck(run, {x, w, b});
    }
    Tensor w = random_input({2, 3, 3, 3}, 51);
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return conv_transpose2d(in[0], in[1], Tensor(), {2}, {1}, {1});
        },
        {noncontiguous(random_input({1, 2, 3, 4}, 52)), noncontiguous(w)});
    CHECK(conv_transpose2d(random_input({2, 3, 4}, 53), w).shape() == Shape{3, 5, 6});
}

TEST_CASE("conv: bad arguments throw naming the op and the values", "[ops][conv]") {
    Tensor x = random_input({2, 4, 6, 6}), w = random_input({6, 4, 3, 3});
    require_error([&] { conv2d(x, random_input({6, 3, 3, 3})); }, {"[conv2d]", "4 channels", "3"});
    require_error(
        [&] {
            conv2d(x, random_input({6, 2, 3, 3}), Tensor(), {1}, {0}, {1}, 3);
        },
        {"[conv2d]", "groups = 3", "must divide"});
    require_error(
        [&] {
            conv2d(x, random_input({6, 4, 7, 3}));
        },
        {"[conv2d]", "kernel size 7", "padded input size 6"});
    require_error([&] { conv2d(x, w, Tensor(), {1}, {0}, {3}); }, {"[conv2d]", "larger than"});
    require_error([&] { conv2d(random_input({4, 6}), w); }, {"[conv2d]", "rank", "[4, 6]"});
    require_error([&] { conv1d(x, w); }, {"[conv1d]", "rank"});
    require_error([&] { conv3d(x, w); }, {"[conv3d]", "rank"});
    require_error([&] { conv2d(x, w, Tensor(), {2}, "same"); },
                  {"[conv2d]", "padding='same' is not supported for strided convolutions"});
    require_error([&] { conv2d(x, w, Tensor(), {1}, std::string("full")); },
                  {"[conv2d]", "'full'"});
    require_error([&] { conv2d(x, w, Tensor(), {0}); }, {"[conv2d]", "stride must be positive"});
    require_error([&] { conv2d(x, w, Tensor(), {1}, {-1}); }, {"[conv2d]", "padding"});
    require_error([&] { conv2d(x, w, Tensor(), {1, 1, 1}); }, {"[conv2d]", "stride", "1 or 2"});
    require_error([&] { conv2d(x, w, random_input({5})); }, {"[conv2d]", "bias", "(6)"});
    require_error([&] { conv2d(x, w.to(DType::float32)); }, {"[conv2d]", "dtype"});
    require_error([&] { conv2d(x, w, Tensor(), {1}, {0}, {1}, 0); }, {"[conv2d]", "groups"});
    // As PyTorch: only the batch or the channels may be empty (a transposed convolution of an
    // empty spatial dim would still have an output of the kernel's extent).
    require_error(
        [&] {
            conv_transpose2d(zeros({1, 2, 0, 3}, DType::float64), random_input({2, 3, 3, 3}));
        },
        {"[conv_transpose2d]", "empty spatial dim 0", "[1, 2, 0, 3]"});
    require_error(
        [&] {
            conv_transpose2d(x, random_input({3, 2, 3, 3}));
        },
        {"[conv_transpose2d]", "4 channels"});
    require_error(
        [&] {
            conv_transpose2d(x, random_input({4, 2, 3, 3}), Tensor(), {2}, {0}, {2});
        },
        {"[conv_transpose2d]", "output_padding"});
    require_error(
        [&] {
            conv_transpose3d(x, random_input({4, 2, 3, 3}));
        },
        {"[conv_transpose3d]", "rank"});
}

TEST_CASE("conv: the PyTorch oracle vectors pass with their tolerances", "[ops][conv][oracle]") {
    require_oracle_vectors({"conv1d_causal_depthwise", "conv2d_dense", "conv2d_depthwise",
                            "conv2d_patch", "conv2d_strided_dilated", "conv3d", "conv_transpose2d",
                            "conv_transpose3d"});
}
