// softmax and log_softmax: hand-computed values, a naive float64 reference along every dim
// (rows and column blocks, float32 and float64), extreme values, the dedicated backward
// kernels against finite differences and against the composite formula, edge cases, errors.
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "conformance/check_vectors.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// softmax (or log_softmax) of x along dim, naively in double on row-major values.
std::vector<double> reference(const Tensor& x, int64_t dim, bool log) {
    std::vector<double> values = x.to_vector<double>(), out(values.size());
    int64_t d = dim < 0 ? dim + x.ndim() : dim;
    int64_t length = x.shape()[size_t(d)], inner = 1;
    for (int64_t k = d + 1; k < x.ndim(); ++k) inner *= x.shape()[size_t(k)];
    int64_t outer = x.numel() / std::max<int64_t>(length * inner, 1);
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            auto at = [&](int64_t l) { return size_t((o * length + l) * inner + i); };
            double max = -std::numeric_limits<double>::infinity(), total = 0;
            for (int64_t l = 0; l < length; ++l) max = std::max(max, values[at(l)]);
            for (int64_t l = 0; l < length; ++l) total += std::exp(values[at(l)] - max);
            for (int64_t l = 0; l < length; ++l) {
                double shifted = values[at(l)] - max;
                out[at(l)] = log ? shifted - std::log(total) : std::exp(shifted) / total;
            }
        }
    }
    return out;
}

Tensor apply(const Tensor& x, int64_t dim, bool log) {
    return log ? log_softmax(x, dim) : softmax(x, dim);
}

}  // namespace

TEST_CASE("softmax: hand-computed values along any dim", "[ops][softmax]") {
    double ln2 = std::log(2.0), ln3 = std::log(3.0);
    Tensor x = tensor({0, ln2, ln3, 1, 1, 1}, {2, 3});
    require_close(softmax(x, 1), {1.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 3});
    require_close(softmax(x, -1), softmax(x, 1).to_vector<double>());
    require_close(log_softmax(x, 1),
                  {std::log(1.0 / 6), std::log(2.0 / 6), std::log(0.5), -ln3, -ln3, -ln3});
    // Along dim 0 each column is a pair: softmax(a, b) = (1, e^(b-a)) / (1 + e^(b-a)).
    auto pair = [](double a, double b) { return 1.0 / (1.0 + std::exp(b - a)); };
    require_close(softmax(x, 0),
                  {pair(0, 1), pair(ln2, 1), pair(ln3, 1), pair(1, 0), pair(1, ln2), pair(1, ln3)});
    require_close(softmax(x.to(DType::float32), 0), softmax(x, 0).to_vector<double>(), 1e-6);
}

TEST_CASE("softmax: every dim and layout match a float64 reference", "[ops][softmax]") {
    // Small shapes, long rows, and middle dims wide enough for several column blocks.
    for (Shape shape : {Shape{4, 7, 5}, Shape{3, 1000}, Shape{2, 600, 40}, Shape{5, 3, 300},
                        Shape{2, 1, 3}, Shape{17}}) {
        Tensor base = mul(random_input(shape, 31), 8.0);
        for (const Tensor& x : {base, noncontiguous(base)}) {
            for (int64_t dim = -int64_t(shape.size()); dim < int64_t(shape.size()); ++dim) {
                for (bool log : {false, true}) {
                    INFO("shape " << text(shape) << " strides " << text(x.strides()) << " dim "
                                  << dim << (log ? " log_softmax" : " softmax"));
                    std::vector<double> want = reference(x, dim, log);
                    require_close(apply(x, dim, log), want, 1e-12, 1e-14);
                    // float32: log(sum) alone is off by up to ~1e-7 absolute.
                    require_close(apply(x.to(DType::float32), dim, log), want, 2e-6, 5e-7);
                }
            }
        }
    }
}

TEST_CASE("softmax: stable for large values, -inf gives exact zeros", "[ops][softmax]") {
    double inf = std::numeric_limits<double>::infinity();
    Tensor x = tensor({1000, 1001, -inf, -50, -inf, -inf}, {2, 3});
    double e = std::exp(1.0);
    for (DType dtype : {DType::float64, DType::float32}) {
        Tensor y = softmax(x.to(dtype), 1);
        require_close(y.narrow(0, 0, 1), {1 / (1 + e), e / (1 + e), 0}, 1e-6);
        CHECK(y.at<double>({0, 2}) == 0.0);
        require_close(y.narrow(0, 1, 1), {1, 0, 0});
        Tensor logs = log_softmax(x.to(dtype), 1);
        require_close(logs.narrow(0, 0, 1), {-std::log1p(e), 1 - std::log1p(e), -inf}, 1e-6);
        CHECK(logs.at<double>({1, 0}) == 0.0);
        // A row of only -inf has no maximum to subtract: NaN, as in PyTorch.
        CHECK(std::isnan(softmax(full({1, 4}, -inf, dtype), 1).at<double>({0, 0})));
        // Large spreads underflow to 0 instead of producing NaN.
        Tensor wide = tensor({0, -200, 200}, {3}).to(dtype);
        require_close(softmax(wide, 0), {0, 0, 1});
        require_close(log_softmax(wide, 0), {-200, -400, 0});
    }
}

TEST_CASE("softmax and log_softmax: gradients match finite differences",
          "[ops][softmax][gradcheck]") {
    for (bool log : {false, true}) {
        for (int64_t dim : {0, 1, -1}) {
            INFO((log ? "log_softmax" : "softmax") << " dim " << dim);
            gradcheck([&](const std::vector<Tensor>& in) { return apply(in[0], dim, log); },
                      {random_input({3, 4, 5}, 32)});
            gradcheck([&](const std::vector<Tensor>& in) { return apply(in[0], dim, log); },
                      {noncontiguous(random_input({2, 5, 3}, 33))});
        }
        gradcheck(
            [&](const std::vector<Tensor>& in) {
                return apply(in[0].expand({2, 3, 4}), 1, log);
            },
            {random_input({3, 1}, 34)});
        gradcheck([&](const std::vector<Tensor>& in) { return apply(in[0], 0, log); },
                  {random_input({7}, 35)});
    }
}

TEST_CASE("softmax backward kernels: large float32 inputs match the composite formula",
          "[ops][softmax]") {
    for (auto [shape, dim] :
         {std::pair{Shape{8, 1000}, int64_t(1)}, std::pair{Shape{4, 300, 70}, int64_t(1)}}) {
        for (bool log : {false, true}) {
            INFO("shape " << text(shape) << (log ? " log_softmax" : " softmax"));
            Tensor x = mul(random_input(shape, 36), 4.0);
            Tensor g = random_input(shape, 37);
            Tensor leaf = x.to(DType::float32).requires_grad_();
            apply(leaf, dim, log).backward(g.to(DType::float32));
            // Composite: softmax dx = y (g - sum(g y)); log_softmax dx = g - exp(y) sum(g).
            Tensor y = apply(x, dim, log);
            Tensor want = log ? sub(g, mul(exp(y), sum(g, {dim}, true)))
                              : mul(y, sub(g, sum(mul(g, y), {dim}, true)));
            require_close(leaf.grad(), want, 1e-4, 1e-6);
        }
    }
}

TEST_CASE("softmax: 0-d, size-1 and size-0 inputs", "[ops][softmax]") {
    Tensor scalar = tensor({2.5}).reshape({});
    require_close(softmax(scalar, 0), {1});
    require_close(log_softmax(scalar, -1), std::vector<double>{0});
    require_close(softmax(tensor({3, 4}, {2, 1}), 1), {1, 1});
    CHECK(softmax(zeros({0, 4}), 1).shape() == Shape{0, 4});
    CHECK(log_softmax(zeros({3, 0}), 1).shape() == Shape{3, 0});
    CHECK(softmax(zeros({3, 0, 2}), 1).numel() == 0);
}

TEST_CASE("softmax: errors name the op, the dtype and the dim", "[ops][softmax]") {
    require_error([] { softmax(arange(0, 4), 0); }, {"[softmax]", "int64"});
    require_error([] { log_softmax(zeros({2}).to(DType::float16), 0); },
                  {"[log_softmax]", "float16"});
    require_error([] { softmax(zeros({2, 3}), 2); }, {"[softmax]", "dim 2", "out of range"});
    require_error([] { log_softmax(zeros({2, 3}), -3); }, {"[log_softmax]", "dim -3"});
}

TEST_CASE("softmax and log_softmax: the PyTorch oracle vectors pass with their tolerances",
          "[ops][softmax][oracle]") {
    require_oracle_vectors({"softmax_last", "softmax_mid", "log_softmax"});
}
