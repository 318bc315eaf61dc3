// CPU/CUDA parity of interpolate (nearest, nearest-exact, linear, bilinear, trilinear, area;
// align_corners; sizes and scale factors up, down and equal) and of pad (constant, reflect,
// replicate, circular; 1-3 padded dims, negative pads, integer and bool dtypes): outputs and
// gradients with the same upstream gradient, odd batched shapes, transposed inputs, float32 and
// float64. Nearest modes must pick the very same inputs (compared exactly). Skips without a GPU.
#include <optional>
#include <vector>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

double tolerance(DType dtype) { return dtype == DType::float32 ? 2e-5 : 1e-12; }

struct Resize {
    Dims size;
    std::vector<double> scale;
    std::optional<bool> recompute;
};

// Per rank: output sizes and scale factors that upsample, downsample and keep dims.
std::vector<Resize> resizes(int spatial) {
    if (spatial == 1)
        return {{{23}, {}, {}},  {{4}, {}, {}},   {{9}, {}, {}},
                {{}, {1.7}, {}}, {{}, {0.6}, {}}, {{}, {2.5}, true}};
    if (spatial == 2)
        return {{{19, 8}, {}, {}}, {{5, 31}, {}, {}},    {{9, 11}, {}, {}},     {{1, 1}, {}, {}},
                {{}, {2.0}, {}},   {{}, {1.3, 0.7}, {}}, {{}, {3.1, 1.9}, true}};
    return {{{7, 3, 12}, {}, {}}, {{4, 6, 7}, {}, {}}, {{}, {1.5}, {}}, {{}, {0.5, 2.0, 1.25}, {}}};
}

Shape input_shape(int spatial) {
    if (spatial == 1) return {2, 3, 9};
    if (spatial == 2) return {2, 3, 9, 11};
    return {2, 2, 4, 6, 7};
}

const char* linear_mode(int spatial) {
    return spatial == 1 ? "linear" : spatial == 2 ? "bilinear" : "trilinear";
}

}  // namespace

TEST_CASE("interpolate nearest and nearest-exact pick the CPU's inputs on the GPU",
          "[cuda][ops][interpolate]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        for (int spatial : {1, 2, 3}) {
            Tensor x = random_input(input_shape(spatial), uint64_t(spatial)).to(dtype);
            for (const char* mode : {"nearest", "nearest-exact"}) {
                for (const Resize& r : resizes(spatial)) {
                    INFO(mode << " size " << text(r.size) << " scale_factor " << r.scale.size()
                              << " values, first " << (r.scale.empty() ? 0.0 : r.scale[0]) << " "
                              << dtype_name(dtype));
                    UnaryFunction f = [&](const Tensor& t) {
                        return interpolate(t, r.size, r.scale, mode, std::nullopt, r.recompute);
                    };
                    // Copies are exact; the gradient sums in the CPU's order.
                    require_cuda_parity(f, x, 0, tolerance(dtype));
                }
            }
        }
    }
}

TEST_CASE("interpolate linear modes match the CPU on the GPU", "[cuda][ops][interpolate]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        double tol = tolerance(dtype);
        for (int spatial : {1, 2, 3}) {
            Tensor x = random_input(input_shape(spatial), uint64_t(10 + spatial)).to(dtype);
            for (bool align : {false, true}) {
                for (const Resize& r : resizes(spatial)) {
                    INFO(linear_mode(spatial)
                         << " align_corners " << align << " size " << text(r.size)
                         << " scale_factor values " << r.scale.size() << " " << dtype_name(dtype));
                    UnaryFunction f = [&](const Tensor& t) {
                        return interpolate(t, r.size, r.scale, linear_mode(spatial), align,
                                           r.recompute);
                    };
                    require_cuda_parity(f, x, tol, tol);
                }
            }
        }
    }
}

TEST_CASE("interpolate on transposed inputs and area mode match the CPU on the GPU",
          "[cuda][ops][interpolate]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        double tol = tolerance(dtype);
        Tensor x = random_input({3, 2, 12, 7}, 21).to(dtype);
        for (const char* mode : {"nearest", "bilinear", "area"}) {
            INFO(mode << " transposed " << dtype_name(dtype));
            require_cuda_parity(
                [&](const Tensor& t) {
                    return interpolate(t.transpose(2, 3), {10, 17}, {}, mode);
                },
                x, tol, tol);
        }
        // area: adaptive average pooling, 1-D through the 2-D pool, 3-D
        require_cuda_parity([](const Tensor& t) { return interpolate(t, {4}, {}, "area"); },
                            random_input({2, 3, 13}, 22).to(dtype), tol, tol);
        require_cuda_parity(
            [](const Tensor& t) {
                return interpolate(t, {3, 5, 2}, {}, "area");
            },
            random_input({1, 2, 7, 9, 5}, 23).to(dtype), tol, tol);
        // a large plane (thousands of blocks)
        require_cuda_parity(
            [](const Tensor& t) { return interpolate(t, {}, {2.0}, "bilinear", false); },
            random_input({1, 2, 300, 257}, 24).to(dtype), tol, tol);
    }
}

TEST_CASE("interpolate argument errors are the same on the GPU", "[cuda][ops][interpolate]") {
    if (!have_gpu()) return;
    Tensor x = random_input({1, 2, 4, 4}, 25).to(DType::float32).cuda();
    require_error([&] { interpolate(x, {8}, {}, "linear"); }, {"[interpolate]", "3-D"});
    require_error([&] { interpolate(x, {8}, {}, "cubic"); }, {"[interpolate]", "cubic"});
    require_error([&] { interpolate(x.to(DType::int64), {8}); }, {"[interpolate]", "int64"});
}

// ---- pad ----

namespace {

struct PadCase {
    Dims pads;
    const char* mode;
};

std::vector<PadCase> border_cases() {
    return {
        {{2, 3}, "reflect"},
        {{0, 4}, "reflect"},
        {{3, 1, 2, 2}, "reflect"},
        {{1, 2, 0, 3, 2, 1}, "reflect"},
        {{2, 3}, "replicate"},
        {{5, 0, 1, 6}, "replicate"},
        {{1, 1, 2, 0, 0, 3}, "replicate"},
        {{2, 3}, "circular"},
        {{7, 7}, "circular"},
        {{3, 0, 1, 4}, "circular"},
        {{1, 2, 2, 1, 0, 3}, "circular"},
    };
}

// An input of rank pads / 2 + 2 (batched) with odd sizes >= 7 (pads stay below the dims).
Shape border_shape(const Dims& pads) {
    Shape shape = {2, 3};
    for (size_t k = 0; k < pads.size() / 2; ++k) shape.push_back(int64_t(7 + 2 * k));
    return shape;
}

}  // namespace

TEST_CASE("pad reflect, replicate and circular match the CPU on the GPU", "[cuda][ops][pad]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        for (const PadCase& c : border_cases()) {
            INFO(c.mode << " pad " << text(c.pads) << " " << dtype_name(dtype));
            Tensor x = random_input(border_shape(c.pads), 31).to(dtype);
            UnaryFunction f = [&](const Tensor& t) { return pad(t, c.pads, c.mode); };
            require_cuda_parity(f, x, 0, tolerance(dtype));
            // unbatched, and a transposed view (the last two dims swapped)
            Tensor unbatched =
                random_input(Shape(border_shape(c.pads).begin() + 1, border_shape(c.pads).end()),
                             32)
                    .to(dtype);
            require_cuda_parity(f, unbatched, 0, tolerance(dtype));
            if (c.pads.size() >= 4)
                require_cuda_parity(
                    [&](const Tensor& t) { return pad(t.transpose(-1, -2), c.pads, c.mode); }, x, 0,
                    tolerance(dtype));
        }
    }
}

TEST_CASE("constant pad and crop match the CPU on the GPU for every dtype", "[cuda][ops][pad]") {
    if (!have_gpu()) return;
    std::vector<Dims> pads = {
        {2, 3}, {0, 0}, {-1, 2}, {1, -2, 3, 0}, {2, 2, -1, -1, 1, 0}, {1, 1, 1, 1, 1, 1, 1, 1}};
    for (DType dtype : {DType::float32, DType::float64}) {
        Tensor x = random_input({2, 3, 5, 7}, 33).to(dtype);
        for (const Dims& p : pads) {
            INFO("constant pad " << text(p) << " " << dtype_name(dtype));
            require_cuda_parity([&](const Tensor& t) { return pad(t, p, "constant", 0.5); }, x, 0,
                                tolerance(dtype));
            require_cuda_parity([&](const Tensor& t) { return pad(t.transpose(1, 3), p); }, x, 0,
                                tolerance(dtype));
        }
    }
    Tensor values = mul(random_input({3, 4, 5}, 34, -9, 9), 1.0).to(DType::int64);
    for (DType dtype : {DType::int64, DType::int32, DType::uint8, DType::bool_}) {
        Tensor x = dtype == DType::uint8 ? abs(values).to(dtype) : values.to(dtype);
        for (const Dims& p : {Dims{2, 1}, Dims{1, -1, 0, 2}, Dims{1, 0, 0, 1, 2, 0}}) {
            INFO("constant pad " << text(p) << " " << dtype_name(dtype));
            require_same_on_gpu(pad(x.cuda(), p, "constant", 1.0), pad(x, p, "constant", 1.0));
        }
    }
}

TEST_CASE("pad argument errors are the same on the GPU", "[cuda][ops][pad]") {
    if (!have_gpu()) return;
    Tensor x = random_input({1, 2, 4}, 35).to(DType::float32).cuda();
    require_error([&] { pad(x, {4, 0}, "reflect"); }, {"[pad]", "reflect", "smaller"});
    require_error([&] { pad(x, {5, 0}, "circular"); }, {"[pad]", "circular"});
    require_error([&] { pad(x, {1}, "constant"); }, {"[pad]", "odd"});
}
