// CPU/CUDA parity of the normalization ops: outputs and the gradients of input, weight and bias
// on the same random inputs (rows from 1 to 5000 elements, 2-D to 5-D channel inputs,
// non-contiguous inputs, float32 and float64), the saved statistics and running-statistics
// updates, float16/bfloat16 layer_norm and rms_norm against float32 on the CPU, empty seq_norm
// inputs, and the errors on CUDA. Skips with a message without a GPU.
#include <functional>
#include <string>
#include <vector>

#include "core/cuda_guard.h"
#include "ops/norm_kernels.h"
#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// y = f(x, weight, bias); weight/bias may be undefined.
using NormFn = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;

double tolerance(DType dtype) { return dtype == DType::float32 ? 1e-4 : 1e-10; }

Tensor leaf(const Tensor& t) { return t.defined() ? t.detach().requires_grad_() : Tensor(); }

Tensor leaf_cuda(const Tensor& t) {
    return t.defined() ? t.cuda().detach().requires_grad_() : Tensor();
}

// Runs f on the CPU and on CUDA with the same inputs and upstream gradient and compares the
// output and the gradients of x, weight and bias. `transpose_last` gives both devices the
// same non-contiguous x (its last two dims stored transposed).
void check_parity(const NormFn& f, const Tensor& x, const Tensor& weight, const Tensor& bias,
                  bool transpose_last = false) {
    double tol = tolerance(x.dtype());
    require_cuda_parity([&](const std::vector<Tensor>& in) { return f(in[0], in[1], in[2]); },
                        {x, weight, bias}, tol, tol, transpose_last);
}

const std::vector<DType> kFloatTypes = {DType::float32, DType::float64};

}  // namespace

TEST_CASE("layer_norm and rms_norm match the CPU on the GPU for every row length",
          "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    // 1 and 7: padded warps; 32, 768: full warps, vector loads; 1000: odd packs; 5000: block
    // per row; 1031: block per row without vector loads. Row counts leave partial blocks of
    // warps.
    const std::vector<std::pair<int64_t, int64_t>> shapes = {
        {5, 1}, {9, 7}, {33, 32}, {6, 768}, {5, 1000}, {3, 5000}, {4, 1031}, {130, 256}};
    for (DType dtype : kFloatTypes) {
        for (auto [rows, length] : shapes) {
            for (bool affine : {true, false}) {
                INFO("rows " << rows << " x " << length << " " << dtype_name(dtype)
                             << (affine ? " with weight and bias" : " without affine"));
                Tensor x = random_input({rows, length}, 1, -2, 3).to(dtype);
                Tensor w = affine ? random_input({length}, 2, 0.5, 1.5).to(dtype) : Tensor();
                Tensor b = affine ? random_input({length}, 3).to(dtype) : Tensor();
                {
                    INFO("layer_norm");
                    check_parity([&](const Tensor& in, const Tensor& wt,
                                     const Tensor& bs) { return layer_norm(in, {length}, wt, bs); },
                                 x, w, b);
                }
                INFO("rms_norm");
                check_parity([&](const Tensor& in, const Tensor& wt,
                                 const Tensor&) { return rms_norm(in, {length}, wt, 1e-6); },
                             x, w, Tensor());
            }
        }
    }
}

TEST_CASE("layer_norm: multi-dim normalized_shape, non-contiguous input and weight only",
          "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    for (DType dtype : kFloatTypes) {
        INFO(dtype_name(dtype));
        Tensor x = random_input({3, 4, 6, 10}).to(dtype);
        Tensor w = random_input({6, 10}, 4).to(dtype), b = random_input({6, 10}, 5).to(dtype);
        {
            INFO("layer_norm over (6, 10)");
            check_parity(
                [](const Tensor& in, const Tensor& wt, const Tensor& bs) {
                    return layer_norm(in, {6, 10}, wt, bs);
                },
                x, w, b);
        }
        // x (4, 37, 6), seen through a transposed view of a (4, 6, 37) tensor
        Tensor wl = random_input({6}, 6).to(dtype);
        {
            INFO("layer_norm of a transposed input");
            check_parity([](const Tensor& in, const Tensor& wt,
                            const Tensor&) { return layer_norm(in, {6}, wt); },
                         random_input({4, 37, 6}, 7).to(dtype), wl, Tensor(), true);
        }
        INFO("rms_norm of a transposed input");
        check_parity([](const Tensor& in, const Tensor& wt,
                        const Tensor&) { return rms_norm(in, {6}, wt, 1e-5); },
                     random_input({4, 37, 6}, 8).to(dtype), wl, Tensor(), true);
    }
}

TEST_CASE("row norm kernels: saved mean and rstd match the CPU", "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    for (int64_t length : {7, 768, 5000}) {
        for (bool center : {true, false}) {
            INFO("rows of " << length << (center ? " (layer_norm)" : " (rms_norm)"));
            RowNormLayout layout;
            layout.rows = 6;
            layout.length = layout.channels_per_group = length;
            layout.center = center;
            Tensor x = random_input({6, length}, 11, -1, 2).to(DType::float32);
            Tensor stats[2][3];  // [device][y, mean, rstd]
            for (int d = 0; d < 2; ++d) {
                Device device = d == 0 ? Device::cpu() : Device::cuda();
                Tensor in = x.to(device);
                stats[d][0] = empty({6, length}, DType::float32, device);
                stats[d][1] = empty({6}, DType::float32, device);
                stats[d][2] = empty({6}, DType::float32, device);
                StridedView v[4] = {strided(in), strided(stats[d][0]), strided(stats[d][1]),
                                    strided(stats[d][2])};
                if (d == 0) {
                    cpu::row_norm_forward(layout, v[0], {}, {}, 1e-5, v[1], v[2], v[3]);
                } else {
                    cuda::row_norm_forward(layout, v[0], {}, {}, 1e-5, v[1], v[2], v[3]);
                }
            }
            for (int k = 0; k < 3; ++k) require_close(stats[1][k].cpu(), stats[0][k], 1e-5, 1e-6);
        }
    }
}

TEST_CASE("group_norm matches the CPU on the GPU for 2-D to 5-D inputs", "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    // (N, C) has one element per channel (spatial 1, groups > 1); (3, 8, 32, 40) has rows of
    // 4 * 1280 elements (block kernel, vector loads), (2, 6, 25, 27) rows of 3 * 675 (block
    // kernel, scalar loads, channels changing inside a thread's stride).
    const std::vector<std::pair<Shape, int64_t>> cases = {
        {{4, 6}, 3},         {{2, 6, 5}, 3},    {{2, 6, 4, 5}, 2},  {{2, 6, 3, 4, 5}, 3},
        {{3, 8, 32, 40}, 2}, {{2, 4, 8, 8}, 4}, {{2, 6, 25, 27}, 2}};
    for (DType dtype : kFloatTypes) {
        for (const auto& [shape, groups] : cases) {
            INFO("group_norm " << text(shape) << " groups " << groups << " " << dtype_name(dtype));
            Tensor x = random_input(shape, 21, -1, 2).to(dtype);
            Tensor w = random_input({shape[1]}, 22, 0.5, 1.5).to(dtype);
            Tensor b = random_input({shape[1]}, 23).to(dtype);
            int64_t g = groups;
            check_parity([g](const Tensor& in, const Tensor& wt,
                             const Tensor& bs) { return group_norm(in, g, wt, bs); },
                         x, w, b);
            check_parity(
                [g](const Tensor& in, const Tensor&, const Tensor&) { return group_norm(in, g); },
                x, Tensor(), Tensor());
        }
    }
}

TEST_CASE("instance_norm matches the CPU on the GPU, running statistics included",
          "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    const std::vector<Shape> shapes = {{2, 3, 7}, {2, 3, 4, 5}, {1, 2, 40, 40}, {2, 3, 2, 3, 4}};
    for (DType dtype : kFloatTypes) {
        double tol = tolerance(dtype);
        for (const Shape& shape : shapes) {
            INFO("instance_norm " << text(shape) << " " << dtype_name(dtype));
            Tensor x = random_input(shape, 31, -1, 2).to(dtype);
            Tensor w = random_input({shape[1]}, 32, 0.5, 1.5).to(dtype);
            Tensor b = random_input({shape[1]}, 33).to(dtype);
            check_parity([](const Tensor& in, const Tensor& wt,
                            const Tensor& bs) { return instance_norm(in, {}, {}, wt, bs); },
                         x, w, b);
            // running statistics: updated in place on both devices
            Tensor mean_c = random_input({shape[1]}, 34).to(dtype), mean_g = mean_c.cuda();
            Tensor var_c = random_input({shape[1]}, 35, 0.5, 2).to(dtype), var_g = var_c.cuda();
            Tensor y = instance_norm(x, mean_c, var_c, w, b, true, 0.3);
            Tensor yg = instance_norm(x.cuda(), mean_g, var_g, w.cuda(), b.cuda(), true, 0.3);
            require_close(yg.cpu(), y, tol, tol);
            require_close(mean_g.cpu(), mean_c, tol, tol);
            require_close(var_g.cpu(), var_c, tol, tol);
            INFO("use_input_stats = false");
            check_parity(
                [&](const Tensor& in, const Tensor& wt, const Tensor& bs) {
                    Tensor m = in.is_cuda() ? mean_c.cuda() : mean_c;
                    Tensor v = in.is_cuda() ? var_c.cuda() : var_c;
                    return instance_norm(in, m, v, wt, bs, false);
                },
                x, w, b);
        }
    }
}

TEST_CASE("batch_norm matches the CPU on the GPU in training and evaluation", "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    // (3000, 40): many rows of columns (spatial 1, chunked); (4, 8, 40, 40): several chunks
    // per channel.
    const std::vector<Shape> shapes = {{16, 5},      {3000, 40},      {4, 5, 7},
                                       {4, 5, 6, 7}, {2, 5, 3, 4, 5}, {4, 8, 40, 40}};
    for (DType dtype : kFloatTypes) {
        double tol = tolerance(dtype);
        for (const Shape& shape : shapes) {
            int64_t channels = shape[1];
            Tensor x = random_input(shape, 41, -1, 2).to(dtype);
            Tensor w = random_input({channels}, 42, 0.5, 1.5).to(dtype);
            Tensor b = random_input({channels}, 43).to(dtype);
            Tensor mean0 = random_input({channels}, 44).to(dtype);
            Tensor var0 = random_input({channels}, 45, 0.5, 2).to(dtype);
            for (bool training : {true, false}) {
                INFO("batch_norm " << text(shape) << " " << dtype_name(dtype)
                                   << (training ? " training" : " evaluation"));
                // running statistics: updated in place on both devices (training)
                Tensor mean_c = mean0.clone(), var_c = var0.clone();
                Tensor mean_g = mean0.cuda(), var_g = var0.cuda();
                check_parity(
                    [&](const Tensor& in, const Tensor& wt, const Tensor& bs) {
                        bool gpu = in.is_cuda();
                        return batch_norm(in, gpu ? mean_g : mean_c, gpu ? var_g : var_c, wt, bs,
                                          training, 0.2);
                    },
                    x, w, b);
                require_close(mean_g.cpu(), mean_c, tol, tol);
                require_close(var_g.cpu(), var_c, tol, tol);
            }
            INFO("batch_norm " << text(shape) << " training without running statistics");
            check_parity([](const Tensor& in, const Tensor&,
                            const Tensor&) { return batch_norm(in, {}, {}, {}, {}, true); },
                         x, Tensor(), Tensor());
        }
    }
}

TEST_CASE("channel_moments: batch statistics match the CPU", "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    ChannelNormLayout layout{1, 4, 8, 1600};
    Tensor x = random_input({4, 8, 1600}, 51, 3, 5).to(DType::float32);  // mean far from 0
    Tensor result[2][2];
    for (int d = 0; d < 2; ++d) {
        Device device = d == 0 ? Device::cpu() : Device::cuda();
        Tensor in = x.to(device);
        result[d][0] = empty({8}, DType::float32, device);
        result[d][1] = empty({8}, DType::float32, device);
        StridedView v[3] = {strided(in), strided(result[d][0]), strided(result[d][1])};
        if (d == 0) {
            cpu::channel_moments(layout, v[0], v[1], v[2]);
        } else {
            cuda::channel_moments(layout, v[0], v[1], v[2]);
        }
    }
    require_close(result[1][0].cpu(), result[0][0], 1e-6, 1e-6);
    require_close(result[1][1].cpu(), result[0][1], 1e-4, 1e-6);
}

TEST_CASE("seq_norm and normalize match the CPU on the GPU", "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    for (DType dtype : kFloatTypes) {
        for (Shape shape : {Shape{3, 50, 20}, Shape{2, 2000, 7}, Shape{1, 1, 5}}) {
            INFO("seq_norm " << text(shape) << " " << dtype_name(dtype));
            Tensor w = random_input({shape[2]}, 62, 0.5, 1.5).to(dtype);
            Tensor b = random_input({shape[2]}, 63).to(dtype);
            check_parity([](const Tensor& in, const Tensor& wt,
                            const Tensor& bs) { return seq_norm(in, wt, bs); },
                         random_input(shape, 61).to(dtype), w, b);
        }
        Tensor x = random_input({5, 7, 9}, 64).to(dtype);
        for (double p : {2.0, 1.0, 3.0}) {
            for (int64_t dim : {0, 1, 2}) {
                INFO("normalize p " << p << " dim " << dim << " " << dtype_name(dtype));
                check_parity([p, dim](const Tensor& in, const Tensor&,
                                      const Tensor&) { return normalize(in, p, dim); },
                             x, Tensor(), Tensor());
            }
        }
        {
            INFO("normalize with a row clamped to eps");
            Tensor clamped = random_input({4, 6}, 65).to(dtype);
            clamped.narrow(0, 1, 1).zero_();
            check_parity([](const Tensor& in, const Tensor&,
                            const Tensor&) { return normalize(in, 2.0, 1, 1e-3); },
                         clamped, Tensor(), Tensor());
        }
        INFO("normalize of a transposed input");
        check_parity(
            [](const Tensor& in, const Tensor&, const Tensor&) { return normalize(in, 2.0, -1); },
            random_input({3, 11, 13}, 66).to(dtype), Tensor(), Tensor(), true);
    }
}

// The CPU side: tests/ops/test_norm.cpp, "channel norms of empty inputs".
TEST_CASE("seq_norm on the GPU: an empty batch or sequence gives zero weight and bias gradients",
          "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    for (const Shape& shape : {Shape{0, 4, 5}, Shape{2, 0, 5}}) {
        INFO("seq_norm " << text(shape));
        Tensor x = zeros(shape, DType::float32).cuda().requires_grad_();
        Tensor w = ones({5}, DType::float32).cuda().requires_grad_();
        Tensor b = zeros({5}, DType::float32).cuda().requires_grad_();
        Tensor y = seq_norm(x, w, b);
        y.backward(zeros(shape, DType::float32).cuda());
        require_close(w.grad().cpu(), zeros({5}, DType::float32), 0, 0);
        require_close(b.grad().cpu(), zeros({5}, DType::float32), 0, 0);
    }
}

TEST_CASE("half layer_norm and rms_norm on the GPU match float32 on the CPU", "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    const std::vector<std::pair<int64_t, int64_t>> shapes = {
        {4, 32}, {6, 768}, {5, 1000}, {3, 5000}, {7, 7}};
    for (DType half : {DType::float16, DType::bfloat16}) {
        // about 3 units in the last place of the half type at magnitude ~3
        double tol = half == DType::float16 ? 1e-2 : 6e-2;
        for (auto [rows, length] : shapes) {
            for (bool rms : {false, true}) {
                INFO((rms ? "rms_norm " : "layer_norm ")
                     << rows << " x " << length << " " << dtype_name(half));
                // values exactly representable in the half type on both sides
                Tensor x = random_input({rows, length}, 71, -2, 3).to(half);
                Tensor w = random_input({length}, 72, 0.5, 1.5).to(half);
                Tensor b = random_input({length}, 73).to(half);
                Tensor g = random_input({rows, length}, 74).to(half);
                auto f = [&](const Tensor& in, const Tensor& wt, const Tensor& bs) {
                    return rms ? rms_norm(in, {length}, wt, 1e-5)
                               : layer_norm(in, {length}, wt, bs);
                };
                Tensor xc = leaf(x.to(DType::float32)), wc = leaf(w.to(DType::float32));
                Tensor bc = leaf(b.to(DType::float32));
                Tensor y = f(xc, wc, bc);
                y.backward(g.to(DType::float32));
                Tensor xg = leaf_cuda(x), wg = leaf_cuda(w), bg = leaf_cuda(b);
                Tensor yg = f(xg, wg, bg);
                REQUIRE(yg.dtype() == half);
                yg.backward(g.cuda());
                require_close(yg.cpu().to(DType::float32), y, tol, tol);
                require_close(xg.grad().cpu().to(DType::float32), xc.grad(), tol, tol);
                // weight/bias gradients sum over rows: the tolerance grows with the rows
                double sum_tol = tol * double(rows);
                require_close(wg.grad().cpu().to(DType::float32), wc.grad(), tol, sum_tol);
                if (!rms)
                    require_close(bg.grad().cpu().to(DType::float32), bc.grad(), tol, sum_tol);
            }
        }
    }
}

TEST_CASE("normalization on the GPU: mixed devices and unsupported dtypes throw",
          "[cuda][ops][norm]") {
    if (!have_gpu()) return;
    Tensor x = random_input({2, 6, 3}).to(DType::float32).cuda();
    Tensor w = ones({3}, DType::float32);
    require_error([&] { layer_norm(x, {3}, w); }, {"[layer_norm]", "different devices", "cpu"});
    require_error([&] { group_norm(x, 2, ones({6}, DType::float32)); },
                  {"[group_norm]", "different devices"});
    require_error([&] { batch_norm(x, zeros({6}, DType::float32), ones({6}, DType::float32)); },
                  {"[batch_norm]", "different devices"});
    require_error([&] { group_norm(x.to(DType::float16), 2); }, {"[group_norm]", "float16"});
    require_error([&] { layer_norm(x.cpu().to(DType::float16), {3}); },
                  {"[layer_norm]", "float16", "cpu"});
    require_error([&] { layer_norm(x.to(DType::float16), {3}, ones({3}, DType::float32).cuda()); },
                  {"[layer_norm]", "weight", "float32"});
}
