// CPU/CUDA parity of the layout ops: roll, flip, repeat, tril/triu, causal_mask,
// window_partition / window_reverse (2-D and 3-D) and cumsum (every kernel path: columns,
// short lines, long lines scanned by a warp; forward and reversed through the backward),
// with strided inputs, every dtype for the moves, integer and half dtypes for cumsum, and
// gradients with the same upstream gradient. Skips with a message without a GPU.
#include <vector>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

double tolerance(DType dtype) { return dtype == DType::float32 ? 1e-5 : 1e-12; }

}  // namespace

TEST_CASE("flip and roll match the CPU on the GPU", "[cuda][ops][layout]") {
    if (!have_gpu()) return;
    using Dimlist = std::vector<int64_t>;
    for (const Tensor& x : every_dtype({3, 5, 67}, 1)) {
        INFO(dtype_name(x.dtype()));
        for (const Dimlist& dims :
             {Dimlist{}, Dimlist{0}, Dimlist{-1}, Dimlist{0, 2}, Dimlist{1, 2}, Dimlist{0, 1, 2}}) {
            INFO("flip dims " << text(dims));
            require_same_on_gpu(flip(x.cuda(), dims), flip(x, dims));
            require_same_on_gpu(flip(x.cuda().transpose(0, 2), dims),
                                flip(x.transpose(0, 2), dims));
        }
        require_same_on_gpu(roll(x.cuda(), {7}), roll(x, {7}));
        require_same_on_gpu(roll(x.cuda(), {-2, 30}, {1, 2}), roll(x, {-2, 30}, {1, 2}));
        require_same_on_gpu(roll(x.cuda().transpose(1, 2), {1, 1, 4}, {0, 1, 1}),
                            roll(x.transpose(1, 2), {1, 1, 4}, {0, 1, 1}));
    }
    for (DType dtype : {DType::float32, DType::float64}) {
        Tensor x = random_input({4, 6, 9}, 2).to(dtype);
        require_cuda_parity([](const Tensor& t) { return flip(t, {0, 2}); }, x, 0, 0);
        require_cuda_parity([](const Tensor& t) { return roll(t, {3, -1}, {2, 0}); }, x, 0, 0);
        // Swin's cyclic shift of a (B, H, W, C) map
        require_cuda_parity(
            [](const Tensor& t) {
                return roll(t, {-3, -3}, {1, 2});
            },
            random_input({2, 14, 14, 5}, 3).to(dtype), 0, 0);
    }
}

TEST_CASE("repeat, tril, triu and causal_mask match the CPU on the GPU", "[cuda][ops][layout]") {
    if (!have_gpu()) return;
    for (const Tensor& x : every_dtype({2, 7, 9}, 4)) {
        INFO(dtype_name(x.dtype()));
        require_same_on_gpu(repeat(x.cuda(), {2, 1, 3}), repeat(x, {2, 1, 3}));
        require_same_on_gpu(repeat(x.cuda(), {2, 2, 1, 1}), repeat(x, {2, 2, 1, 1}));
        for (int64_t diagonal : {-3, -1, 0, 2, 8, 20}) {
            INFO("diagonal " << diagonal);
            require_same_on_gpu(tril(x.cuda(), diagonal), tril(x, diagonal));
            require_same_on_gpu(triu(x.cuda(), diagonal), triu(x, diagonal));
            require_same_on_gpu(triu(x.cuda().transpose(1, 2), diagonal),
                                triu(x.transpose(1, 2), diagonal));
        }
    }
    for (DType dtype : {DType::float32, DType::float64}) {
        Tensor x = random_input({3, 5, 8}, 5).to(dtype);
        double tol = tolerance(dtype);
        require_cuda_parity([](const Tensor& t) { return tril(t, 1); }, x, 0, 0);
        require_cuda_parity([](const Tensor& t) { return triu(t.transpose(1, 2), -1); }, x, 0, 0);
        // repeat's backward sums the tiles (a reduction on the GPU)
        require_cuda_parity([](const Tensor& t) { return repeat(t, {2, 3, 1, 2}); }, x, 0, tol);
        for (int64_t size : {0, 1, 5, 33}) {
            INFO("causal_mask " << size << " " << dtype_name(dtype));
            Tensor got = causal_mask(size, dtype, Device::cuda(0));
            REQUIRE(got.is_cuda());
            std::vector<double> g = got.cpu().to_vector<double>();
            std::vector<double> w = causal_mask(size, dtype).to_vector<double>();
            CHECK(g == w);  // 0 and -inf exactly
        }
    }
}

TEST_CASE("window_partition and window_reverse match the CPU on the GPU", "[cuda][ops][layout]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        INFO(dtype_name(dtype));
        Tensor x2 = random_input({2, 14, 21, 5}, 6).to(dtype);
        require_cuda_parity([](const Tensor& t) { return window_partition(t, {7, 7}); }, x2, 0, 0);
        require_cuda_parity(
            [](const Tensor& t) {
                return window_reverse(window_partition(t, {7, 3}), {7, 3}, {2, 14, 21});
            },
            x2, 0, 0);
        Tensor x3 = random_input({2, 4, 6, 6, 3}, 7).to(dtype);
        require_cuda_parity(
            [](const Tensor& t) {
                return window_partition(t, {2, 3, 3});
            },
            x3, 0, 0);
        require_cuda_parity(
            [](const Tensor& t) {
                Tensor w = window_partition(t, {2, 3, 3}).flatten(1, -2);  // MONAI's layout
                return window_reverse(w, {2, 3, 3}, {2, 4, 6, 6});
            },
            x3, 0, 0);
    }
}

TEST_CASE("cumsum matches the CPU on the GPU on every kernel path", "[cuda][ops][layout]") {
    if (!have_gpu()) return;
    // (shape, dim): columns (inner > 1), short lines (<= 32, a thread each), long lines (a warp
    // scans 128 elements per step: 129 and 1000 leave partial steps), a 1-element dim.
    struct Case {
        Shape shape;
        int64_t dim;
    };
    std::vector<Case> cases = {{{4, 37, 6}, 1}, {{3, 5, 7}, 0}, {{6, 9}, 1},
                               {{5, 32}, -1},   {{3, 129}, 1},  {{2, 3, 1000}, 2},
                               {{700, 33}, 1},  {{4, 1, 3}, 1}, {{1, 4096}, 1}};
    for (DType dtype : {DType::float32, DType::float64}) {
        for (const Case& c : cases) {
            INFO("cumsum shape " << text(c.shape) << " dim " << c.dim << " " << dtype_name(dtype));
            Tensor x = random_input(c.shape, 8).to(dtype);
            // float32 adds in double on both devices: results agree to float rounding
            double tol = dtype == DType::float32 ? 1e-6 : 1e-12;
            require_cuda_parity([&](const Tensor& t) { return cumsum(t, c.dim); }, x, tol, tol);
            require_cuda_parity([&](const Tensor& t) { return cumsum(t.transpose(0, -1), c.dim); },
                                x, tol, tol);
        }
    }
    for (DType dtype : {DType::int64, DType::int32, DType::uint8, DType::bool_}) {
        for (const Case& c : cases) {
            INFO("cumsum shape " << text(c.shape) << " dim " << c.dim << " " << dtype_name(dtype));
            Tensor x = mul(random_input(c.shape, 9, 0, 1), 3.0).to(DType::int64).to(dtype);
            Tensor got = cumsum(x.cuda(), c.dim);
            CHECK(got.dtype() == DType::int64);
            require_same_on_gpu(got, cumsum(x, c.dim));
        }
    }
    // Half types (CUDA only): summed in float, compared with the float32 CPU result.
    for (DType dtype : {DType::float16, DType::bfloat16}) {
        for (const Case& c : cases) {
            INFO("cumsum shape " << text(c.shape) << " dim " << c.dim << " " << dtype_name(dtype));
            Tensor x = random_input(c.shape, 10, 0, 1).to(dtype);
            Tensor got = cumsum(x.cuda(), c.dim);
            CHECK(got.dtype() == dtype);
            Tensor want = cumsum(x.to(DType::float32), c.dim);
            double tol = dtype == DType::float16 ? 2e-3 : 1e-2;  // one rounding of each output
            require_close(got.cpu().to(DType::float32), want, tol, tol);
        }
    }
    require_error([] { cumsum(random_input({3}).to(DType::float16), 0); }, {"[cumsum]", "float16"});
}
