// arange, linspace and eye: element counts, values, dtypes and errors (PyTorch's results
// written out by hand).
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("arange: ceil((end - start) / step) elements in the requested dtype", "[ops][creation]") {
    Tensor counting = arange(5);
    CHECK(counting.dtype() == DType::int64);
    CHECK(counting.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
    require_close(arange(0, 1, 0.25, DType::float32), {0, 0.25, 0.5, 0.75});
    require_close(arange(1, 2.5, 0.5, DType::float64), {1, 1.5, 2});
    require_close(arange(1, 2.6, 0.5, DType::float64), {1, 1.5, 2, 2.5});
    CHECK(arange(5, 0, -2).to_vector<int64_t>() == std::vector<int64_t>{5, 3, 1});
    CHECK(arange(-3, 3, 2, DType::int32).to_vector<int>() == std::vector<int>{-3, -1, 1});
    // Fractional values truncate toward zero in an integer dtype, as in torch.arange.
    CHECK(arange(0.5, 3, 1, DType::int64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2});
    CHECK(arange(3, 3).numel() == 0);
    CHECK(arange(0, 10, 1, DType::float16).to_vector<double>()[9] == 9.0);
}

TEST_CASE("arange: rejects a zero step, a step of the wrong sign and non-finite bounds",
          "[ops][creation]") {
    require_error([] { arange(0, 5, 0); }, {"[arange]", "non-zero", "step 0"});
    require_error([] { arange(0, 5, -1); }, {"[arange]", "step -1", "start 0", "end 5"});
    require_error([] { arange(5, 0, 1); }, {"[arange]", "step 1", "start 5", "end 0"});
    require_error([] { arange(0, 1.0 / 0.0, 1); }, {"[arange]", "finite", "inf"});
    require_error([] { arange(0, 300, 1, DType::uint8); }, {"[arange]", "uint8", "299"});
    require_error([] { arange(0, 2, 1, DType::bool_); }, {"[arange]", "bool"});
}

TEST_CASE("linspace: steps points with exact end points", "[ops][creation]") {
    require_close(linspace(0, 1, 5), {0, 0.25, 0.5, 0.75, 1});
    require_close(linspace(2, -2, 3, DType::float64), {2, 0, -2});
    require_close(linspace(3, 7, 1), {3});
    CHECK(linspace(0, 1, 0).numel() == 0);
    Tensor points = linspace(-3.3, 7.1, 17, DType::float64);
    std::vector<double> values = points.to_vector<double>();
    CHECK(values.front() == -3.3);
    CHECK(values.back() == 7.1);
    CHECK(values[8] == Approx(1.9).epsilon(1e-14));
    CHECK(linspace(0, 10, 4, DType::int64).to_vector<int64_t>() ==
          std::vector<int64_t>{0, 3, 6, 10});
    require_error([] { linspace(0, 1, -1); }, {"[linspace]", "non-negative", "-1"});
}

TEST_CASE("eye: ones on the main diagonal of an (n, m) matrix", "[ops][creation]") {
    require_close(eye(3), {1, 0, 0, 0, 1, 0, 0, 0, 1});
    Tensor wide = eye(2, 4, DType::int64);
    CHECK(wide.shape() == Shape{2, 4});
    CHECK(wide.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 0, 0, 1, 0, 0});
    require_close(eye(3, 2, DType::float64), {1, 0, 0, 1, 0, 0});
    CHECK(eye(2, -1, DType::bool_).to_vector<int>() == std::vector<int>{1, 0, 0, 1});
    CHECK(eye(0).shape() == Shape{0, 0});
    require_error([] { eye(-2); }, {"[eye]", "n -2"});
    require_error([] { eye(2, -3); }, {"[eye]", "m -3"});
}

TEST_CASE("check_gradients finds a wrong backward and names the element", "[ops][gradcheck]") {
    Tensor w = random_input({3}, 2).requires_grad_();
    auto good = [&](const std::vector<Tensor>& in) { return mul(exp(in[0]), w); };
    GradientCheckResult ok = check_gradients(good, {random_input({3}, 1)}, {w});
    CHECK(ok.passed);
    CHECK(ok.max_abs_error < 1e-7);
    // A detached factor makes autograd miss a term: d(x * x)/dx is 2x, autograd sees x.
    auto wrong = [&](const std::vector<Tensor>& in) { return mul(in[0], in[0].detach()); };
    GradientCheckResult bad = check_gradients(wrong, {random_input({2, 2}, 3)});
    CHECK_FALSE(bad.passed);
    CHECK(bad.failure.find("input 0") != std::string::npos);
    require_error(
        [] { check_gradients([](const std::vector<Tensor>& in) { return in[0]; }, {ones({2})}); },
        {"[check_gradients]", "float64"});
}
