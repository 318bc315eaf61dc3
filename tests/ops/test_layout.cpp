// Layout ops: roll, flip, repeat, tril/triu and the causal mask, Swin window_partition /
// window_reverse, cumsum: hand-computed values and naive references (row-major loops in
// double), float64 gradients against finite differences, the oracle vectors, error messages.
#include <cmath>
#include <limits>
#include <string>

#include "conformance/check_vectors.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// out[c + shift mod n] = x[c] along each listed dim (shifts of a repeated dim add up).
std::vector<double> roll_reference(const Tensor& x, const std::vector<int64_t>& shifts,
                                   const std::vector<int64_t>& dims) {
    std::vector<double> xs = x.to_vector<double>(), out(xs.size());
    for (int64_t i = 0; i < x.numel(); ++i) {
        Shape coords = unravel(i, x.shape());
        for (size_t k = 0; k < dims.size(); ++k) {
            size_t d = size_t(dims[k] < 0 ? dims[k] + x.ndim() : dims[k]);
            int64_t n = x.shape()[d];
            coords[d] = ((coords[d] + shifts[k]) % n + n) % n;
        }
        out[size_t(ravel(coords, x.shape()))] = xs[size_t(i)];
    }
    return out;
}

std::vector<double> cumsum_reference(const Tensor& x, int64_t dim) {
    std::vector<double> xs = x.to_vector<double>(), out(xs.size());
    int64_t inner = 1, length = x.shape()[size_t(dim)];
    for (int64_t k = dim + 1; k < x.ndim(); ++k) inner *= x.shape()[size_t(k)];
    for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t position = i / inner % length;
        out[size_t(i)] = xs[size_t(i)] + (position > 0 ? out[size_t(i - inner)] : 0.0);
    }
    return out;
}

}  // namespace

TEST_CASE("roll: hand-computed values, flattened, negative and repeated shifts", "[ops][layout]") {
    Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    require_close(roll(x, {1}, {1}), {3, 1, 2, 6, 4, 5});
    require_close(roll(x, {-1}, {1}), {2, 3, 1, 5, 6, 4});
    require_close(roll(x, {1, 1}, {0, 1}), {6, 4, 5, 3, 1, 2});
    require_close(roll(x, {2}), {5, 6, 1, 2, 3, 4});
    require_close(roll(x, {1, 1}, {1, -1}), roll(x, {2}, {1}).to_vector<double>());
    require_close(roll(x, {7}, {1}), roll(x, {1}, {1}).to_vector<double>());
    CHECK(roll(x.to(DType::int32), {1}, {0}).to_vector<int32_t>() ==
          std::vector<int32_t>{4, 5, 6, 1, 2, 3});
}

TEST_CASE("roll: Swin cyclic shifts match a naive reference", "[ops][layout]") {
    for (Shape shape : {Shape{2, 7, 6, 5}, Shape{2, 28, 28, 48}, Shape{1, 5, 8, 7, 3}}) {
        Tensor base = random_input(shape, 3);
        std::vector<int64_t> dims = {1, 2};
        if (shape.size() == 5) dims.push_back(3);
        for (int64_t sign : {-1, 1}) {
            std::vector<int64_t> shifts;
            for (size_t k = 0; k < dims.size(); ++k) shifts.push_back(sign * int64_t(k + 2));
            for (const Tensor& x : {base, noncontiguous(base)}) {
                INFO("shape " << text(shape) << " shifts " << text(shifts));
                require_close(roll(x, shifts, dims), roll_reference(x, shifts, dims), 0, 0);
            }
        }
    }
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return roll(in[0], {-2, 3}, {1, 2});
        },
        {noncontiguous(random_input({2, 5, 4, 3}))});
    gradcheck([](const std::vector<Tensor>& in) { return roll(in[0], {4}); },
              {random_input({3, 5})});
}

TEST_CASE("flip: values along several dims, any dtype, gradient", "[ops][layout]") {
    Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    require_close(flip(x, {1}), {3, 2, 1, 6, 5, 4});
    require_close(flip(x, {0, -1}), {6, 5, 4, 3, 2, 1});
    require_close(flip(x, {}), x.to_vector<double>());
    Tensor mask = gt(x, 3.0);
    CHECK(flip(mask, {0}).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1, 0, 0, 0});
    Tensor base = random_input({4, 5, 6}, 7);
    require_close(flip(noncontiguous(base), {0, 2}), flip(base, {2, 0}).to_vector<double>(), 0, 0);
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return flip(in[0], {0, 2});
        },
        {noncontiguous(random_input({3, 4, 5}))});
}

TEST_CASE("repeat: tiles like torch.Tensor.repeat", "[ops][layout]") {
    Tensor x = tensor({1, 2, 3}, {3});
    Tensor tiled = repeat(x, {2, 2});
    CHECK(tiled.shape() == Shape{2, 6});
    require_close(tiled, {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3});
    Tensor grid = tensor({1, 2, 3, 4}, {2, 2});
    require_close(repeat(grid, {2, 1}), {1, 2, 3, 4, 1, 2, 3, 4});
    CHECK(repeat(grid, {1, 3, 0}).shape() == Shape{1, 6, 0});
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return repeat(in[0], {2, 1, 3});
        },
        {noncontiguous(random_input({3, 4}))});
}

TEST_CASE("tril, triu and the causal mask", "[ops][layout]") {
    Tensor x = tensor({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
    require_close(tril(x), {1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
    require_close(triu(x), {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
    require_close(tril(x, -1), {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
    require_close(triu(x, 2), {0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0});
    require_close(tril(x, 10), x.to_vector<double>());
    require_close(triu(x, -10), x.to_vector<double>());
    Tensor batch = random_input({2, 5, 3}, 5);
    require_close(add(tril(noncontiguous(batch), 0), triu(batch, 1)), batch.to_vector<double>(), 0,
                  0);
    double inf = std::numeric_limits<double>::infinity();
    require_close(causal_mask(3), {0, -inf, -inf, 0, 0, -inf, 0, 0, 0});
    CHECK(tril(ones({2, 2}, DType::bool_)).to_vector<int64_t>() ==
          std::vector<int64_t>{1, 0, 1, 1});
    gradcheck([](const std::vector<Tensor>& in) { return tril(in[0], 1); },
              {noncontiguous(random_input({2, 4, 5}))});
    gradcheck([](const std::vector<Tensor>& in) { return triu(in[0], -1); },
              {random_input({5, 3})});
}

TEST_CASE("window_partition / window_reverse: Swin window order, inverse", "[ops][layout]") {
    // 2-D: (B, H, W, C) = (2, 4, 6, 3) in (2, 3) windows -> (2 * 4, 2, 3, 3).
    Tensor x = random_input({2, 4, 6, 3}, 11);
    Tensor windows = window_partition(x, {2, 3});
    CHECK(windows.shape() == Shape{8, 2, 3, 3});
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t row = 0; row < 2; ++row)
            for (int64_t col = 0; col < 2; ++col) {
                Tensor want = x.select(0, b).narrow(0, 2 * row, 2).narrow(1, 3 * col, 3);
                require_close(windows.select(0, b * 4 + row * 2 + col), want.contiguous(), 0, 0);
            }
    require_close(window_reverse(windows, {2, 3}, {2, 4, 6}), x, 0, 0);
    require_close(window_reverse(windows.reshape({8, 6, 3}), {2, 3}, {2, 4, 6}), x, 0, 0);
    // 3-D: (B, D, H, W, C) = (1, 4, 2, 6, 2) in (2, 2, 3) windows.
    Tensor volume = random_input({1, 4, 2, 6, 2}, 13);
    Tensor cubes = window_partition(volume, {2, 2, 3});
    CHECK(cubes.shape() == Shape{4, 2, 2, 3, 2});
    Tensor third = volume.select(0, 0).narrow(0, 2, 2).narrow(2, 0, 3);
    require_close(cubes.select(0, 2), third.contiguous(), 0, 0);
    require_close(window_reverse(cubes, {2, 2, 3}, {1, 4, 2, 6}), volume, 0, 0);
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return window_partition(in[0], {2, 3});
        },
        {noncontiguous(random_input({2, 4, 3, 2}))});
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return window_reverse(in[0], {1, 2, 2}, {1, 2, 2, 4});
        },
        {random_input({4, 4, 3})});
}

TEST_CASE("cumsum: matches a sequential reference along every dim", "[ops][layout]") {
    require_close(cumsum(tensor({1, 2, 3, 4}, {2, 2}), 1), {1, 3, 3, 7});
    require_close(cumsum(tensor({1, 2, 3, 4}, {2, 2}), 0), {1, 2, 4, 6});
    Tensor counts = cumsum(from_vector(std::vector<int32_t>{1, 0, 2}, {3}), 0);
    CHECK(counts.dtype() == DType::int64);
    CHECK(counts.to_vector<int64_t>() == std::vector<int64_t>{1, 1, 3});
    for (Shape shape : {Shape{2, 7, 5}, Shape{16, 150, 40}, Shape{300, 200}}) {
        Tensor base = random_input(shape, 17);
        for (int64_t dim = 0; dim < int64_t(shape.size()); ++dim) {
            INFO("shape " << text(shape) << " dim " << dim);
            std::vector<double> want = cumsum_reference(base, dim);
            require_close(cumsum(noncontiguous(base), dim), want, 1e-12, 1e-12);
            require_close(cumsum(base.to(DType::float32), dim), want, 1e-5, 1e-5);
        }
    }
    for (int64_t dim : {0, 1, -1})
        gradcheck([dim](const std::vector<Tensor>& in) { return cumsum(in[0], dim); },
                  {noncontiguous(random_input({3, 4, 5}))});
}

TEST_CASE("layout ops: bad arguments throw naming the values", "[ops][layout]") {
    Tensor x = random_input({2, 4, 6, 3});
    require_error([&] { roll(x, {1, 2}, {1}); }, {"[roll]", "same length", "[1, 2]", "[1]"});
    require_error([&] { roll(x, {1, 2}); }, {"[roll]", "one value"});
    require_error([&] { roll(x, {1}, {4}); }, {"[roll]"});
    require_error([&] { flip(x, {1, -3}); }, {"[flip]", "more than once"});
    require_error([&] { repeat(x, {2, 2}); }, {"[repeat]", "[2, 2]", "[2, 4, 6, 3]"});
    require_error([&] { tril(random_input({3})); }, {"[tril]", "at least 2 dims", "[3]"});
    require_error(
        [&] {
            window_partition(x, {3, 3});
        },
        {"[window_partition]", "spatial size 4", "window size 3"});
    require_error([&] { window_partition(x, {2, 2, 2}); }, {"[window_partition]", "[2, 4, 6, 3]"});
    require_error([&] { window_reverse(x, {2, 3}, {3, 4, 6}); }, {"[window_reverse]"});
    require_error([&] { cumsum(x, 4); }, {"[cumsum]"});
    require_error([&] { causal_mask(3, DType::int64); }, {"[causal_mask]", "int64"});
}

TEST_CASE("layout ops: oracle vectors pass", "[ops][layout]") {
    require_oracle_vectors({"roll", "cumsum"});
}
