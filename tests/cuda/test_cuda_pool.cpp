// CPU/CUDA parity of the pooling ops: max (with indices), average and adaptive pools, 2-D and
// 3-D, over window configurations (padding, stride < kernel, dilation, ceil_mode,
// count_include_pad, divisor_override), odd and batched or unbatched shapes, transposed
// (non-contiguous) inputs, float32 and float64; outputs, indices and gradients with the same
// upstream gradient. Skips with a message without a GPU.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

double tolerance(DType dtype) { return dtype == DType::float32 ? 1e-5 : 1e-12; }

// Outputs and input gradients of f on both devices, to `tol`.
void require_parity(const UnaryFunction& f, const Tensor& x, double tol) {
    require_cuda_parity(f, x, tol, tol);
}

struct Window {
    Dims kernel, stride, padding, dilation;
    bool ceil_mode;
};

std::string describe(const Window& w) {
    return "kernel " + text(w.kernel) + " stride " + text(w.stride) + " padding " +
           text(w.padding) + " dilation " + text(w.dilation) + (w.ceil_mode ? " ceil" : "");
}

std::vector<Window> windows_2d() {
    return {
        {{2}, {}, {0}, {1}, false},               // the classic 2x2 / 2
        {{3}, {2}, {1}, {1}, false},              // ResNet stem: overlapping windows
        {{3}, {1}, {1}, {1}, false},              // stride 1: every input in 9 windows
        {{3, 2}, {2, 1}, {1, 0}, {2, 1}, false},  // dilation, per-dim values
        {{3}, {2}, {0}, {1}, true},               // ceil_mode: a clipped last window
        {{4, 3}, {3, 2}, {2, 1}, {1, 2}, true},
    };
}

std::vector<Window> windows_3d() {
    return {
        {{2}, {}, {0}, {1}, false},
        {{3}, {2}, {1}, {1}, false},
        {{3, 2, 3}, {1, 2, 2}, {1, 0, 1}, {1, 1, 2}, true},
    };
}

}  // namespace

TEST_CASE("max_pool2d and max_pool3d match the CPU on the GPU", "[cuda][ops][pool]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        double tol = tolerance(dtype);
        Tensor x2 = random_input({2, 3, 17, 23}, 1).to(dtype);
        for (const Window& w : windows_2d()) {
            INFO("max_pool2d " << describe(w) << " " << dtype_name(dtype));
            UnaryFunction f = [&](const Tensor& t) {
                return max_pool2d(t, w.kernel, w.stride, w.padding, w.dilation, w.ceil_mode);
            };
            require_parity(f, x2, tol);
            // unbatched, and a transposed (non-contiguous) view
            require_parity(f, random_input({3, 9, 14}, 2).to(dtype), tol);
            require_parity([&](const Tensor& t) { return f(t.transpose(2, 3)); }, x2, tol);
            ValuesIndices cpu =
                max_pool2d_with_indices(x2, w.kernel, w.stride, w.padding, w.dilation, w.ceil_mode);
            ValuesIndices gpu = max_pool2d_with_indices(x2.cuda(), w.kernel, w.stride, w.padding,
                                                        w.dilation, w.ceil_mode);
            CHECK(gpu.indices.dtype() == DType::int64);
            CHECK(gpu.indices.cpu().to_vector<int64_t>() == cpu.indices.to_vector<int64_t>());
        }
        Tensor x3 = random_input({2, 2, 7, 9, 10}, 3).to(dtype);
        for (const Window& w : windows_3d()) {
            INFO("max_pool3d " << describe(w) << " " << dtype_name(dtype));
            UnaryFunction f = [&](const Tensor& t) {
                return max_pool3d(t, w.kernel, w.stride, w.padding, w.dilation, w.ceil_mode);
            };
            require_parity(f, x3, tol);
            require_parity(f, random_input({2, 5, 6, 7}, 4).to(dtype), tol);
            ValuesIndices cpu =
                max_pool3d_with_indices(x3, w.kernel, w.stride, w.padding, w.dilation, w.ceil_mode);
            ValuesIndices gpu = max_pool3d_with_indices(x3.cuda(), w.kernel, w.stride, w.padding,
                                                        w.dilation, w.ceil_mode);
            CHECK(gpu.indices.cpu().to_vector<int64_t>() == cpu.indices.to_vector<int64_t>());
        }
    }
}

TEST_CASE("max pools propagate NaN and break ties like the CPU on the GPU", "[cuda][ops][pool]") {
    if (!have_gpu()) return;
    // Rounded values make ties (the first maximum wins); one NaN must win its windows.
    Tensor x = mul(random_input({1, 2, 8, 9}, 5, -2, 2), 2.0).to(DType::int64).to(DType::float32);
    std::vector<float> values = x.to_vector<float>();
    values[13] = std::nanf("");
    x = from_vector(values, x.shape());
    for (Dims stride : {Dims{1}, Dims{2}}) {
        ValuesIndices cpu = max_pool2d_with_indices(x, {3}, stride, {1});
        ValuesIndices gpu = max_pool2d_with_indices(x.cuda(), {3}, stride, {1});
        std::vector<float> want = cpu.values.to_vector<float>();
        std::vector<float> got = gpu.values.cpu().to_vector<float>();
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i) {
            INFO("stride " << stride[0] << " output " << i);
            CHECK(std::isnan(got[i]) == std::isnan(want[i]));
            if (!std::isnan(want[i])) CHECK(got[i] == want[i]);
        }
        CHECK(gpu.indices.cpu().to_vector<int64_t>() == cpu.indices.to_vector<int64_t>());
    }
}

TEST_CASE("avg_pool2d and avg_pool3d match the CPU on the GPU", "[cuda][ops][pool]") {
    if (!have_gpu()) return;
    struct Average {
        Dims kernel, stride, padding;
        bool ceil_mode, count_include_pad;
        std::optional<int64_t> divisor;
    };
    std::vector<Average> cases = {
        {{2}, {}, {0}, false, true, std::nullopt},
        {{3}, {2}, {1}, false, true, std::nullopt},
        {{3}, {2}, {1}, false, false, std::nullopt},
        {{3}, {1}, {1}, true, false, std::nullopt},
        {{3, 2}, {2, 3}, {1, 1}, true, true, std::nullopt},  // ceil: windows past the input
        {{3}, {2}, {1}, true, false, 5},                     // divisor_override
    };
    for (DType dtype : {DType::float32, DType::float64}) {
        double tol = tolerance(dtype);
        for (const Average& a : cases) {
            INFO("kernel " << text(a.kernel) << " stride " << text(a.stride) << " padding "
                           << text(a.padding) << " ceil " << a.ceil_mode << " count_include_pad "
                           << a.count_include_pad << " divisor " << a.divisor.value_or(0) << " "
                           << dtype_name(dtype));
            UnaryFunction f2 = [&](const Tensor& t) {
                return avg_pool2d(t, a.kernel, a.stride, a.padding, a.ceil_mode,
                                  a.count_include_pad, a.divisor);
            };
            require_parity(f2, random_input({2, 3, 13, 16}, 6).to(dtype), tol);
            require_parity(f2, random_input({3, 7, 5}, 7).to(dtype), tol);
            require_parity([&](const Tensor& t) { return f2(t.transpose(2, 3)); },
                           random_input({2, 2, 11, 9}, 8).to(dtype), tol);
            Dims kernel3 = a.kernel.size() == 1 ? a.kernel : Dims{2, a.kernel[0], a.kernel[1]};
            Dims stride3 = a.stride.size() == 2 ? Dims{1, a.stride[0], a.stride[1]} : a.stride;
            Dims padding3 = a.padding.size() == 2 ? Dims{1, a.padding[0], a.padding[1]} : a.padding;
            UnaryFunction f3 = [&](const Tensor& t) {
                return avg_pool3d(t, kernel3, stride3, padding3, a.ceil_mode, a.count_include_pad,
                                  a.divisor);
            };
            require_parity(f3, random_input({2, 2, 5, 8, 7}, 9).to(dtype), tol);
        }
    }
}

TEST_CASE("adaptive pools match the CPU on the GPU", "[cuda][ops][pool]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        double tol = tolerance(dtype);
        Tensor x2 = random_input({2, 3, 13, 17}, 10).to(dtype);
        Tensor x3 = random_input({2, 2, 6, 7, 9}, 11).to(dtype);
        // divisible, non-divisible (overlapping cells), larger than the input, and 1 x 1
        for (Dims size : {Dims{13, 17}, Dims{5, 4}, Dims{7}, Dims{20, 30}, Dims{1, 3}}) {
            INFO("output_size " << text(size) << " " << dtype_name(dtype));
            require_parity([&](const Tensor& t) { return adaptive_avg_pool2d(t, size); }, x2, tol);
            require_parity([&](const Tensor& t) { return adaptive_max_pool2d(t, size); }, x2, tol);
            require_parity(
                [&](const Tensor& t) { return adaptive_max_pool2d(t.transpose(2, 3), size); }, x2,
                tol);
            ValuesIndices cpu = adaptive_max_pool2d_with_indices(x2, size);
            ValuesIndices gpu = adaptive_max_pool2d_with_indices(x2.cuda(), size);
            CHECK(gpu.indices.cpu().to_vector<int64_t>() == cpu.indices.to_vector<int64_t>());
        }
        for (Dims size : {Dims{3, 4, 5}, Dims{4}, Dims{8, 9, 12}, Dims{1, 2, 1}}) {
            INFO("output_size " << text(size) << " " << dtype_name(dtype));
            require_parity([&](const Tensor& t) { return adaptive_avg_pool3d(t, size); }, x3, tol);
            require_parity([&](const Tensor& t) { return adaptive_max_pool3d(t, size); }, x3, tol);
            ValuesIndices cpu = adaptive_max_pool3d_with_indices(x3, size);
            ValuesIndices gpu = adaptive_max_pool3d_with_indices(x3.cuda(), size);
            CHECK(gpu.indices.cpu().to_vector<int64_t>() == cpu.indices.to_vector<int64_t>());
        }
    }
}

TEST_CASE("global average pooling matches the CPU on the GPU", "[cuda][ops][pool]") {
    if (!have_gpu()) return;
    // Planes of 7 x 7 (a warp per plane), 1 x 1, and 70 x 64 (a block per plane), with more
    // planes than one block of warps covers.
    for (DType dtype : {DType::float32, DType::float64}) {
        double tol = tolerance(dtype);
        for (Shape shape : {Shape{4, 37, 7, 7}, Shape{3, 5, 1, 1}, Shape{2, 3, 70, 64}}) {
            INFO("shape " << text(shape) << " " << dtype_name(dtype));
            Tensor x = random_input(shape, 12).to(dtype);
            require_parity([](const Tensor& t) { return adaptive_avg_pool2d(t, {1}); }, x, tol);
        }
        Tensor x3 = random_input({2, 9, 4, 5, 6}, 13).to(dtype);
        require_parity([](const Tensor& t) { return adaptive_avg_pool3d(t, {1}); }, x3, tol);
    }
}

TEST_CASE("pool argument errors are the same on the GPU", "[cuda][ops][pool]") {
    if (!have_gpu()) return;
    Tensor x = random_input({1, 2, 4, 4}, 14).to(DType::float32).cuda();
    require_error([&] { max_pool2d(x, {5}); }, {"[max_pool2d]", "too small"});
    require_error([&] { avg_pool2d(x.to(DType::int64), {2}); }, {"[avg_pool2d]", "int64"});
    require_error([&] { adaptive_avg_pool2d(x, {0}); }, {"[adaptive_avg_pool2d]", "positive"});
}
