// pad: hand-computed values (checked against PyTorch 1.13), a naive per-element reference for
// every mode over 1-3 padded dims (batched, unbatched, non-contiguous, negative pads),
// gradients against finite differences, errors, and the PyTorch oracle vector.
#include <string>

#include "conformance/check_vectors.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// The input index that output position `p` (already shifted by the left pad) reads, or -1.
int64_t reference_source(int64_t p, int64_t n, const std::string& mode) {
    if (p >= 0 && p < n) return p;
    if (mode == "constant") return -1;
    if (mode == "replicate") return p < 0 ? 0 : n - 1;
    if (mode == "circular") return p < 0 ? p + n : p - n;
    return p < 0 ? -p : 2 * (n - 1) - p;  // reflect
}

// Naive pad of x: every output element located by its multi-index.
std::vector<double> reference(const Tensor& x, const Dims& pads, const std::string& mode,
                              double value, Shape* out_shape) {
    std::vector<double> values = x.to_vector<double>(), result;
    int64_t ndim = x.ndim(), padded = int64_t(pads.size() / 2);
    Shape shape = x.shape();
    Dims before(size_t(ndim), 0);
    for (int64_t k = 0; k < padded; ++k) {
        size_t d = size_t(ndim - 1 - k);
        before[d] = pads[size_t(2 * k)];
        shape[d] += pads[size_t(2 * k)] + pads[size_t(2 * k + 1)];
    }
    *out_shape = shape;
    Shape strides = contiguous_strides(x.shape());
    for (int64_t flat = 0; flat < shape_numel(shape); ++flat) {
        int64_t at = 0, rest = flat;
        bool inside = true;
        for (int64_t d = ndim - 1; d >= 0; --d) {
            int64_t o = rest % shape[size_t(d)];
            rest /= shape[size_t(d)];
            int64_t source = reference_source(o - before[size_t(d)], x.size(d), mode);
            inside = inside && source >= 0;
            at += source * strides[size_t(d)];
        }
        result.push_back(inside ? values[size_t(at)] : value);
    }
    return result;
}

void check_against_reference(const Tensor& x, const Dims& pads, const std::string& mode,
                             double value = 0.0) {
    INFO(mode << " " << text(x.shape()) << " pad " << text(pads));
    std::optional<double> fill;
    if (mode == "constant") fill = value;
    for (DType dtype : {DType::float64, DType::float32}) {
        // Padding copies values, so it is exact in either dtype.
        Shape shape;
        std::vector<double> want = reference(x.to(dtype), pads, mode, value, &shape);
        Tensor y = pad(x.to(dtype), pads, mode, fill);
        REQUIRE(y.shape() == shape);
        CHECK(y.dtype() == dtype);
        require_close(y, want, 0, 0);
    }
}

}  // namespace

TEST_CASE("pad: hand-computed values match PyTorch", "[ops][pad]") {
    Tensor x = tensor({1, 2, 3}, {1, 1, 3});
    require_close(pad(x, {2, 2}, "reflect"), {3, 2, 1, 2, 3, 2, 1});
    require_close(pad(x, {2, 2}, "replicate"), {1, 1, 1, 2, 3, 3, 3});
    require_close(pad(x, {2, 2}, "circular"), {2, 3, 1, 2, 3, 1, 2});
    require_close(pad(x, {-1, 2}, "constant", 7.0), {2, 3, 7, 7});
    Tensor y = arange(0, 6, 1, DType::float64).reshape({1, 2, 3});
    require_close(pad(y, {1, 0, 0, 1}, "reflect"), {1, 0, 1, 2, 4, 3, 4, 5, 1, 0, 1, 2});
    require_close(pad(y, {0, -1, 1, -1}), {0, 0, 0, 1});
    require_close(pad(y, {-1, 1}, "replicate"), {1, 2, 2, 4, 5, 5});
    // Constant padding keeps integer and bool dtypes; an empty pad list copies.
    Tensor ints = pad(arange(0, 3), {1, 1}, "constant", 9.0);
    CHECK(ints.dtype() == DType::int64);
    CHECK(ints.to_vector<int64_t>() == std::vector<int64_t>{9, 0, 1, 2, 9});
    require_close(pad(y, {}), y);
}

TEST_CASE("pad: every mode matches a naive reference", "[ops][pad]") {
    Tensor x1 = random_input({2, 3, 7}, 41), x2 = random_input({2, 3, 5, 6}, 42);
    Tensor x3 = random_input({2, 2, 4, 5, 3}, 43);
    for (std::string mode : {"constant", "reflect", "replicate", "circular"}) {
        for (const Tensor& x : {x1, noncontiguous(x1), x1.select(0, 1)}) {
            check_against_reference(x, {2, 3}, mode);
            check_against_reference(x, {0, 6}, mode);
            check_against_reference(x, {-2, 1}, mode);
        }
        for (const Tensor& x : {x2, noncontiguous(x2), x2.select(0, 0)}) {
            check_against_reference(x, {1, 2, 3, 0}, mode);
            check_against_reference(x, {4, 4, 2, 1}, mode);
            check_against_reference(x, {-1, 2, 1, -2}, mode);
        }
        for (const Tensor& x : {x3, noncontiguous(x3), x3.select(0, 1)}) {
            check_against_reference(x, {1, 2, 3, 0, 2, 3}, mode);
            check_against_reference(x, {2, 0, -1, 1, 0, 1}, mode);
        }
    }
    // Constant mode pads any number of trailing dims, leading ones included.
    check_against_reference(x2, {1, 1, 0, 2, 1, 0, 2, 1}, "constant", -2.5);
    check_against_reference(x2, {1, 1}, "constant", 3.0);
    check_against_reference(x3, {0, 0, 0, 0, 0, 0, -1, 1}, "constant", 1.0);
}

TEST_CASE("pad: gradients match finite differences", "[ops][pad][gradcheck]") {
    auto check = [](const Tensor& x, const Dims& pads, const std::string& mode) {
        INFO(mode << " " << text(x.shape()) << " pad " << text(pads));
        gradcheck([&](const std::vector<Tensor>& in) { return pad(in[0], pads, mode); }, {x});
    };
    Tensor x1 = random_input({2, 3, 5}, 51), x2 = random_input({2, 2, 4, 5}, 52);
    Tensor x3 = random_input({1, 2, 3, 4, 3}, 53);
    for (std::string mode : {"constant", "reflect", "replicate", "circular"}) {
        check(x1, {2, 3}, mode);
        check(x1, {-1, 4}, mode);
        check(x2, {3, 1, 2, 3}, mode);
        check(noncontiguous(x2), {1, -2, 3, 0}, mode);
        check(x2.select(0, 1), {2, 4, 1, 1}, mode);
        check(x3, {1, 2, 0, 3, 2, 1}, mode);
        check(noncontiguous(x3), {2, 1, 1, 0, -1, 2}, mode);
    }
    check(x2, {1, 1, 2, -1, 1, 0, 0, 1}, "constant");
}

TEST_CASE("pad: errors name the op and the bad values", "[ops][pad]") {
    Tensor x = zeros({1, 2, 4, 5});
    require_error([&] { pad(x, {1, 2, 3}); }, {"[pad]", "pairs", "[1, 2, 3]"});
    require_error([&] { pad(zeros({3}), {1, 1, 1, 1}); }, {"[pad]", "4 values", "[3]"});
    require_error([&] { pad(x, {1, 1}, "wrap"); }, {"[pad]", "unknown mode 'wrap'"});
    require_error(
        [&] {
            pad(x, {5, 1, 0, 0}, "reflect");
        },
        {"[pad]", "reflect", "(5, 1)", "dim 3 of size 5"});
    require_error(
        [&] {
            pad(x, {0, 0, 1, 4}, "reflect");
        },
        {"[pad]", "reflect", "(1, 4)", "dim 2 of size 4"});
    require_error([&] { pad(x, {6, 0, 0, 0}, "circular"); }, {"[pad]", "circular", "(6, 0)"});
    require_error([&] { pad(x, {1, 1, 1, 1}, "reflect", 2.0); }, {"[pad]", "takes no value", "2"});
    require_error(
        [&] {
            pad(zeros({4, 5}), {1, 1, 1, 1}, "replicate");
        },
        {"[pad]", "replicate", "(C, spatial...)", "[4, 5]"});
    require_error([&] { pad(x, {1, 1, 1, 1, 1, 1, 1, 1}, "reflect"); }, {"[pad]", "8 pad values"});
    require_error([&] { pad(x, {-3, -3}); }, {"[pad]", "negative size -1"});
    require_error(
        [&] {
            pad(arange(0, 5).reshape({1, 5}), {1, 1}, "reflect");
        },
        {"[pad]", "int64"});
}

TEST_CASE("pad: the PyTorch oracle vector passes with its tolerances", "[ops][pad][oracle]") {
    require_oracle_vectors({"pad_reflect"});
}
