// Reductions: hand-computed values, a naive float64 reference over every subset of dims and
// every memory layout (contiguous, transposed, expanded, large enough to be split across
// threads), gradients against finite differences, ties, NaN, empty dims, sum_to and errors.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>

#include "conformance/check_vectors.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

using Fold = std::function<double(const std::vector<double>&)>;

// The reduction of x over `dims` (all when empty) computed naively in double: the values of
// each output, in row-major order, go to `fold`.
std::vector<double> reference(const Tensor& x, const Dims& dims, const Fold& fold) {
    std::vector<double> values = x.to_vector<double>();
    int64_t ndim = x.ndim();
    std::vector<bool> reduced(size_t(ndim), dims.empty());
    for (int64_t d : dims) reduced[size_t(d < 0 ? d + ndim : d)] = true;
    int64_t outputs = 1;
    for (int64_t d = 0; d < ndim; ++d)
        if (!reduced[size_t(d)]) outputs *= x.shape()[size_t(d)];
    std::vector<std::vector<double>> groups(static_cast<size_t>(outputs));
    for (size_t i = 0; i < values.size(); ++i) {
        int64_t rest = int64_t(i), out = 0, scale = 1;
        for (int64_t d = ndim - 1; d >= 0; --d) {
            int64_t size = x.shape()[size_t(d)], index = rest % size;
            rest /= size;
            if (reduced[size_t(d)]) continue;
            out += index * scale;
            scale *= size;
        }
        groups[size_t(out)].push_back(values[i]);
    }
    std::vector<double> result;
    for (const auto& group : groups) result.push_back(fold(group));
    return result;
}

double fold_sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
double fold_mean(const std::vector<double>& v) { return fold_sum(v) / double(v.size()); }
double fold_max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
double fold_min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double fold_var(const std::vector<double>& v) {
    double m = fold_mean(v), total = 0;
    for (double e : v) total += (e - m) * (e - m);
    return total / double(v.size() - 1);
}
double fold_logsumexp(const std::vector<double>& v) {
    double m = fold_max(v), total = 0;
    for (double e : v) total += std::exp(e - m);
    return m + std::log(total);
}

// Every subset of the dims of an ndim-dim tensor (the empty one meaning all dims).
std::vector<Dims> dim_subsets(int64_t ndim) {
    std::vector<Dims> subsets;
    for (int64_t bits = 0; bits < (int64_t(1) << ndim); ++bits) {
        Dims dims;
        for (int64_t d = 0; d < ndim; ++d)
            if (bits >> d & 1) dims.push_back(d);
        subsets.push_back(dims);
    }
    return subsets;
}

// The same values laid out three ways: contiguous, last two dims transposed in memory, and
// expanded from a size-1 leading dim (stride 0).
std::vector<Tensor> layouts(const Shape& shape, uint64_t seed, DType dtype) {
    Tensor x = random_input(shape, seed).to(dtype);
    Shape single = shape;
    single[0] = 1;
    return {x, noncontiguous(x), random_input(single, seed + 1).to(dtype).expand(shape)};
}

using Reduction = std::function<Tensor(const Tensor&, const Dims&)>;

// Checks op(x, dims) against the reference for every subset of dims and every layout, in
// float64 (tight) and float32 (against the float64 reference of the same values, `rtol` and
// atol 1e-6 per reduced element).
void check_against_reference(const Reduction& op, const Fold& fold, const Shape& shape,
                             double rtol) {
    for (DType dtype : {DType::float64, DType::float32}) {
        bool exact = dtype == DType::float64;
        for (const Tensor& x : layouts(shape, 7, dtype)) {
            for (const Dims& dims : dim_subsets(int64_t(shape.size()))) {
                INFO("shape " << text(shape) << " strides " << text(x.strides()) << " dims "
                              << text(dims) << " " << dtype_name(dtype));
                std::vector<double> want = reference(x, dims, fold);
                double count = double(x.numel()) / double(want.size());
                require_close(op(x, dims).contiguous(), want, exact ? 1e-10 : rtol,
                              exact ? 1e-12 : 1e-6 * count);
            }
        }
    }
}

}  // namespace

TEST_CASE("sum: hand-computed values over all, one and several dims", "[ops][reduce]") {
    Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    require_close(sum(x), {21});
    CHECK(sum(x).ndim() == 0);
    require_close(sum(x, {0}), {5, 7, 9});
    require_close(sum(x, {1}), {6, 15});
    require_close(sum(x, {-1}), {6, 15});
    CHECK(sum(x, {-1}, true).shape() == Shape{2, 1});
    CHECK(sum(x, {}, true).shape() == Shape{1, 1});
    require_close(sum(x, {0, 1}), {21});
    // element (a, b, c) = 12a + 4b + c; summing a and c leaves 60 + 32b
    Tensor cube = arange(0, 24, 1, DType::float32).reshape({2, 3, 4});
    require_close(sum(cube, {0, 2}), {60, 92, 124});
    require_close(sum(cube, {2, 0}, true), {60, 92, 124});
    CHECK(sum(cube, {0, 2}, true).shape() == Shape{1, 3, 1});
    require_close(sum(cube.permute({2, 0, 1}), {0}), sum(cube, {2}).to_vector<double>());
}

TEST_CASE("sum: integer and bool inputs give int64", "[ops][reduce]") {
    Tensor ints = from_vector(std::vector<int32_t>{1, 2, 3, 4, -20, 6}, {2, 3});
    Tensor row_sums = sum(ints, {1});
    CHECK(row_sums.dtype() == DType::int64);
    CHECK(row_sums.to_vector<int64_t>() == std::vector<int64_t>{6, -10});
    CHECK(sum(ints).item<int64_t>() == -4);
    Tensor flags = from_vector(std::vector<bool>{true, false, true, true}, {2, 2});
    CHECK(sum(flags).dtype() == DType::int64);
    CHECK(sum(flags, {0}).to_vector<int64_t>() == std::vector<int64_t>{2, 1});
    Tensor big = full({100000}, 3.0, DType::int64);
    CHECK(sum(big).item<int64_t>() == 300000);
    CHECK(amax(from_vector(std::vector<uint8_t>{3, 250, 7})).item<int64_t>() == 250);
}

TEST_CASE("sum and mean: every dim subset and layout match a float64 reference", "[ops][reduce]") {
    Reduction op_sum = [](const Tensor& x, const Dims& d) { return sum(x, d); };
    Reduction op_mean = [](const Tensor& x, const Dims& d) { return mean(x, d); };
    for (Shape shape : {Shape{7, 5, 3}, Shape{2, 3, 4, 5}, Shape{33, 65}, Shape{1, 9, 1}}) {
        check_against_reference(op_sum, fold_sum, shape, 1e-5);
        check_against_reference(op_mean, fold_mean, shape, 1e-5);
    }
}

TEST_CASE("sum: large inputs split across threads match the reference in float32",
          "[ops][reduce]") {
    // Shapes that take every path: long rows for few outputs, many rows for few columns
    // (the bias-gradient pattern), and many outputs of each kind.
    std::vector<std::pair<Shape, Dims>> cases = {
        {{300000}, {}},     {{3, 70001}, {1}},   {{70001, 3}, {0}},     {{4099, 257}, {0}},
        {{257, 4099}, {1}}, {{64, 97, 33}, {1}}, {{64, 97, 33}, {0, 2}}};
    for (const auto& [shape, dims] : cases) {
        Tensor base = random_input(shape, 3);
        for (const Tensor& x :
             {base, noncontiguous(base), noncontiguous(base.to(DType::float32))}) {
            INFO("shape " << text(shape) << " dims " << text(dims) << " strides "
                          << text(x.strides()) << " " << dtype_name(x.dtype()));
            std::vector<double> want = reference(x, dims, fold_sum);
            double count = double(x.numel()) / double(want.size());
            bool exact = x.dtype() == DType::float64;
            require_close(sum(x, dims), want, exact ? 1e-10 : 1e-5, exact ? 1e-12 : 1e-7 * count);
            require_close(sum(x.to(DType::float32), dims), want, 1e-5, 1e-7 * count);
            require_close(mean(x.to(DType::float32), dims), reference(x, dims, fold_mean), 1e-5,
                          1e-7);
        }
    }
    // Rows that cannot be merged (a narrowed middle dim), split into pieces that start in
    // the middle of a row: in column order (dim 2 kept) and in segment order (all reduced).
    Tensor gapped = random_input({300, 201, 3}, 4).narrow(1, 0, 200);
    require_close(sum(gapped, {0, 1}), reference(gapped, {0, 1}, fold_sum), 1e-10, 1e-12);
    require_close(sum(gapped), reference(gapped, {}, fold_sum), 1e-10, 1e-12);
    require_close(amax(gapped, {0, 1}), reference(gapped, {0, 1}, fold_max));
    require_close(var(gapped, {0, 1}), reference(gapped, {0, 1}, fold_var), 1e-10);
}

TEST_CASE("sum: results do not depend on the number of threads", "[ops][reduce]") {
    Tensor x = random_input({1000, 300}, 5).to(DType::float32);
    std::vector<std::vector<double>> runs;
    for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        runs.push_back(sum(x).to_vector<double>());
        std::vector<double> columns = sum(x, {0}).to_vector<double>();
        runs.back().insert(runs.back().end(), columns.begin(), columns.end());
    }
    set_num_threads(0);
    CHECK(runs[0] == runs[1]);
    CHECK(runs[0] == runs[2]);
}

TEST_CASE("mean: values, NaN over nothing, floating inputs only", "[ops][reduce]") {
    Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    require_close(mean(x), {3.5});
    require_close(mean(x, {0}), {2.5, 3.5, 4.5});
    require_close(mean(x, {1}, true), {2, 5});
    CHECK(std::isnan(mean(zeros({0, 3}), {0}).at<double>({1})));
    CHECK(std::isnan(mean(zeros({0})).item<double>()));
    require_error([] { mean(arange(0, 4)); }, {"[mean]", "int64"});
}

TEST_CASE("sum and mean: gradients match finite differences", "[ops][reduce][gradcheck]") {
    Tensor x = random_input({3, 4, 5}, 11);
    for (bool keepdim : {false, true}) {
        for (Dims dims : {Dims{}, Dims{0}, Dims{1}, Dims{2}, Dims{0, 2}, Dims{-1, -2}}) {
            INFO("dims " << text(dims) << " keepdim " << keepdim);
            gradcheck([&](const std::vector<Tensor>& in) { return sum(in[0], dims, keepdim); },
                      {x});
            gradcheck([&](const std::vector<Tensor>& in) { return mean(in[0], dims, keepdim); },
                      {noncontiguous(x)});
        }
    }
    // Broadcast through expand: its backward is sum_to.
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return mean(in[0].expand({2, 3, 4}), {1});
        },
        {random_input({3, 1}, 12)});
}

TEST_CASE("amax and amin: values, every layout, ties split the gradient", "[ops][reduce]") {
    Tensor x = tensor({1, 3, 3, 2, 0, 2}, {2, 3});
    require_close(amax(x, {1}), {3, 2});
    require_close(amin(x, {1}), {1, 0});
    require_close(amax(x), {3});
    require_close(amin(x, {0}, true), {1, 0, 2});
    Tensor leaf = x.detach().requires_grad_();
    sum(amax(leaf, {1})).backward();
    require_close(leaf.grad(), {0, 0.5, 0.5, 0.5, 0, 0.5});
    Reduction op_max = [](const Tensor& t, const Dims& d) { return amax(t, d); };
    Reduction op_min = [](const Tensor& t, const Dims& d) { return amin(t, d); };
    for (Shape shape : {Shape{7, 5, 3}, Shape{33, 65}}) {
        check_against_reference(op_max, fold_max, shape, 0);
        check_against_reference(op_min, fold_min, shape, 0);
    }
    for (Dims dims : {Dims{}, Dims{0}, Dims{2}, Dims{0, 1}}) {
        gradcheck([&](const std::vector<Tensor>& in) { return amax(in[0], dims); },
                  {random_input({3, 4, 5}, 13)});
        gradcheck([&](const std::vector<Tensor>& in) { return amin(in[0], dims, true); },
                  {noncontiguous(random_input({3, 4, 5}, 14))});
    }
}

TEST_CASE("max and min: whole tensor, along a dim with first indices, gradient to the index",
          "[ops][reduce]") {
    Tensor x = tensor({1, 5, 5, 7, 2, 7}, {2, 3});
    require_close(max(x), {7});
    require_close(min(x), {1});
    CHECK(max(x).ndim() == 0);
    ValuesIndices m = max(x, 1);
    require_close(m.values, {5, 7});
    CHECK(m.indices.dtype() == DType::int64);
    CHECK(m.indices.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
    ValuesIndices n = min(x, 0, true);
    CHECK(n.values.shape() == Shape{1, 3});
    require_close(n.values, {1, 2, 5});
    CHECK(n.indices.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 0});
    CHECK(argmax(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
    CHECK(argmin(x, -1, true).shape() == Shape{2, 1});
    CHECK(argmin(x.t(), 0).to_vector<int64_t>() == std::vector<int64_t>{0, 1});
    CHECK(argmax(tensor({4}).reshape({}), 0).item<int64_t>() == 0);
    // Columns walked in the other order still report the first index along the dim.
    Tensor columns = tensor({3, 9, 3, 9, 1, 9}, {3, 2});
    CHECK(argmax(columns, 0).to_vector<int64_t>() == std::vector<int64_t>{0, 0});
    Tensor leaf = x.detach().requires_grad_();
    sum(max(leaf, 1).values).backward();
    require_close(leaf.grad(), {0, 1, 0, 1, 0, 0});
    for (bool keepdim : {false, true}) {
        for (int64_t dim : {0, 1, -1}) {
            gradcheck(
                [&](const std::vector<Tensor>& in) { return max(in[0], dim, keepdim).values; },
                {random_input({4, 3, 5}, 15)});
            gradcheck(
                [&](const std::vector<Tensor>& in) { return min(in[0], dim, keepdim).values; },
                {noncontiguous(random_input({4, 3, 5}, 16))});
        }
    }
    gradcheck([](const std::vector<Tensor>& in) { return max(in[0]); }, {random_input({3, 4}, 17)});
}

TEST_CASE("max, amax and argmax propagate NaN like PyTorch", "[ops][reduce]") {
    double nan = std::numeric_limits<double>::quiet_NaN();
    Tensor x = tensor({1, nan, 3, nan, 5, 7, 2, 0}, {2, 4});
    CHECK(std::isnan(amax(x, {1}).at<double>({0})));
    CHECK(amax(x, {1}).at<double>({1}) == 7);
    CHECK(std::isnan(amin(x, {1}).at<double>({0})));
    CHECK(amin(x, {1}).at<double>({1}) == 0);
    CHECK(argmax(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 1});
    CHECK(argmin(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 3});
    CHECK(argmax(x.t(), 0).to_vector<int64_t>() == std::vector<int64_t>{1, 1});
    CHECK(std::isnan(amax(x, {0}).at<double>({1})));
    CHECK(std::isnan(max(x).item<double>()));
    Tensor long_row = zeros({100}, DType::float32);
    long_row.narrow(0, 70, 1).fill_(nan);
    CHECK(std::isnan(amax(long_row).item<float>()));
    CHECK(argmax(long_row, 0).item<int64_t>() == 70);
    CHECK(std::isnan(sum(long_row).item<float>()));
}

TEST_CASE("var and std: correction, every layout, gradients", "[ops][reduce][gradcheck]") {
    Tensor x = tensor({1, 2, 3, 4, 6, 8}, {2, 3});
    require_close(var(x, {1}), {1, 4});
    require_close(var(x, {1}, 0.0), {2.0 / 3, 8.0 / 3});
    require_close(lumen::std(x, {1}), {1, 2});
    require_close(var(x), {34.0 / 5});  // mean 4, squared deviations 9 4 1 0 4 16
    CHECK(std::isnan(var(tensor({5}), {0}).item<double>()));  // 0 / (1 - 1)
    // A large offset must not cancel: the two-pass formula keeps the variance exact.
    require_close(var(add(tensor({1, 2, 3, 4}, {4}, DType::float32), 1e4)), {5.0 / 3}, 1e-5);
    Reduction op_var = [](const Tensor& t, const Dims& d) { return var(t, d); };
    check_against_reference(op_var, fold_var, {7, 5, 3}, 1e-5);
    for (Dims dims : {Dims{}, Dims{1}, Dims{0, 2}}) {
        for (double correction : {0.0, 1.0}) {
            gradcheck([&](const std::vector<Tensor>& in) { return var(in[0], dims, correction); },
                      {random_input({3, 4, 5}, 18)});
            gradcheck(
                [&](const std::vector<Tensor>& in) {
                    return lumen::std(in[0], dims, correction, true);
                },
                {noncontiguous(random_input({3, 4, 5}, 19))});
        }
    }
}

TEST_CASE("logsumexp: stable for large and infinite values, gradient is the softmax",
          "[ops][reduce][gradcheck]") {
    double inf = std::numeric_limits<double>::infinity();
    Tensor x = tensor({1000, 1000, -inf, -inf, 0, std::log(3.0)}, {3, 2});
    require_close(logsumexp(x, {1}), {1000 + std::log(2.0), -inf, std::log(4.0)});
    require_close(logsumexp(x.to(DType::float32), {1}),
                  {1000 + std::log(2.0), -inf, std::log(4.0)});
    CHECK(logsumexp(tensor({inf, 1}), {0}).item<double>() == inf);
    CHECK(logsumexp(zeros({2, 0}), {1}).at<double>({0}) == -inf);
    Reduction op_lse = [](const Tensor& t, const Dims& d) { return logsumexp(t, d); };
    check_against_reference(op_lse, fold_logsumexp, {7, 5, 3}, 1e-6);
    check_against_reference(op_lse, fold_logsumexp, {3, 300}, 1e-6);
    for (Dims dims : {Dims{0}, Dims{-1}, Dims{0, 2}}) {
        gradcheck([&](const std::vector<Tensor>& in) { return logsumexp(in[0], dims); },
                  {random_input({3, 4, 5}, 20)});
        gradcheck([&](const std::vector<Tensor>& in) { return logsumexp(in[0], dims, true); },
                  {noncontiguous(random_input({3, 4, 5}, 21))});
    }
}

TEST_CASE("sum_to: reduces a broadcast gradient back, x itself when shapes match",
          "[ops][reduce]") {
    Tensor x = arange(0, 24, 1, DType::float32).reshape({2, 3, 4});
    CHECK(sum_to(x, {2, 3, 4}).impl() == x.impl());
    Tensor to_row = sum_to(x, {4});
    CHECK(to_row.shape() == Shape{4});
    require_close(to_row, sum(x, {0, 1}).to_vector<double>());
    Tensor kept = sum_to(x, {3, 1});
    CHECK(kept.shape() == Shape{3, 1});
    require_close(kept, {60, 92, 124});
    require_close(sum_to(x, {2, 1, 1}), {66, 210});
    require_close(sum_to(x, {1, 1, 1}), {276});
    // Only size-1 dims differ: the same elements, reshaped.
    CHECK(sum_to(ones({1, 1, 5}), {5}).shape() == Shape{5});
    require_close(sum_to(noncontiguous(x), {3, 4}), sum(x, {0}).to_vector<double>());
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return sum_to(in[0], {3, 1});
        },
        {random_input({2, 3, 4}, 22)});
    require_error([&] { sum_to(x, {5}); }, {"[sum_to]", "[2, 3, 4]", "[5]"});
    require_error([&] { sum_to(ones({3}), {2, 3}); }, {"[sum_to]", "[3]", "[2, 3]"});
}

TEST_CASE("reductions over empty dims: 0 for sum, errors for max", "[ops][reduce]") {
    require_close(sum(zeros({0, 3}), {0}), {0, 0, 0});
    CHECK(sum(zeros({3, 0}), {0}).shape() == Shape{0});
    CHECK(sum(zeros({0})).item<double>() == 0);
    CHECK(amax(zeros({0, 3}), {1}).shape() == Shape{0});
    CHECK(sum(zeros({4, 0, 2}), {1}, true).shape() == Shape{4, 1, 2});
    CHECK(var(zeros({0, 3}), {1}).shape() == Shape{0});
    CHECK(logsumexp(zeros({3, 0}), {0}).shape() == Shape{0});
    CHECK(std::isnan(var(zeros({2, 0}), {1}).at<double>({1})));
    require_error([] { max(zeros({0, 3})); }, {"[max]", "empty", "[0, 3]"});
    require_error([] { min(zeros({0})); }, {"[min]", "empty", "[0]"});
    require_error([] { amax(zeros({0, 3}), {0}); }, {"[amax]", "[0, 3]"});
    require_error([] { max(zeros({2, 0}), 1); }, {"[max]", "dim 1", "size 0"});
    require_error([] { argmin(zeros({2, 0}), -1); }, {"[argmin]", "size 0"});
}

TEST_CASE("reductions: bad dims and dtypes name the op and the value", "[ops][reduce]") {
    Tensor x = zeros({2, 3});
    require_error([&] { sum(x, {2}); }, {"[sum]", "dim 2", "out of range"});
    require_error([&] { sum(x, {-3}); }, {"[sum]", "dim -3"});
    require_error([&] { sum(x, {1, -1}); }, {"[sum]", "dim 1", "more than once"});
    require_error([&] { mean(x, {0, 0}); }, {"[mean]", "more than once"});
    require_error([&] { amax(x, {5}); }, {"[amax]", "dim 5"});
    require_error([&] { max(x, 2); }, {"[max]", "dim 2"});
    require_error([&] { argmax(x, -4); }, {"[argmax]", "dim -4"});
    require_error([&] { var(arange(0, 4), {}); }, {"[var]", "int64"});
    require_error([&] { lumen::std(x.to(DType::int32)); }, {"[std]", "int32"});
    require_error([&] { logsumexp(arange(0, 3), {0}); }, {"[logsumexp]", "int64"});
    require_error([&] { sum(x.to(DType::float16)); }, {"[sum]", "float16"});
}

TEST_CASE("var: the PyTorch oracle vectors pass with their tolerances", "[ops][reduce][oracle]") {
    require_oracle_vectors({"var_unbiased"});
}
