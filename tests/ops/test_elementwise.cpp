// Elementwise ops: values against hand-computed expectations, float64 gradient checks over
// several shapes (odd sizes, broadcast, non-contiguous), dtype promotion and errors.
#include <cmath>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

using Unary = Tensor (*)(const Tensor&);

// Inputs for a unary gradcheck: several shapes, one of them non-contiguous.
std::vector<Tensor> unary_inputs(double low, double high) {
    return {random_input({7}, 1, low, high), random_input({3, 5}, 2, low, high),
            noncontiguous(random_input({2, 3, 4}, 3, low, high))};
}

void check_unary_grad(const std::function<Tensor(const Tensor&)>& f, double low = -2, double high = 2) {
    for (const Tensor& x : unary_inputs(low, high))
        gradcheck([&](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
}

double gelu_exact(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

}  // namespace

TEST_CASE("unary math matches the C library on float32 and float64", "[ops][elementwise]") {
    std::vector<double> values = {-1.5, -0.25, 0.5, 2.0};
    for (DType dtype : {DType::float32, DType::float64}) {
        Tensor x = from_vector(values).to(dtype);
        auto expect = [&](double (*f)(double)) {
            std::vector<double> out;
            for (double v : values) out.push_back(f(v));
            return out;
        };
        double tol = dtype == DType::float32 ? 1e-6 : 1e-12;
        require_close(exp(x), expect([](double v) { return std::exp(v); }), tol);
        require_close(tanh(x), expect([](double v) { return std::tanh(v); }), tol);
        require_close(sigmoid(x), expect([](double v) { return 1 / (1 + std::exp(-v)); }), tol);
        require_close(gelu(x), expect(gelu_exact), tol);
        require_close(silu(x), expect([](double v) { return v / (1 + std::exp(-v)); }), tol);
        require_close(elu(x), expect([](double v) { return v > 0 ? v : std::expm1(v); }), tol);
        require_close(softplus(x), expect([](double v) { return std::log1p(std::exp(v)); }), tol);
        require_close(relu(x), {0, 0, 0.5, 2.0});
        require_close(abs(x), {1.5, 0.25, 0.5, 2.0});
        require_close(square(x), {2.25, 0.0625, 0.25, 4.0}, tol);
        require_close(neg(x), {1.5, 0.25, -0.5, -2.0});
        require_close(sign(x), {-1, -1, 1, 1});
        require_close(clamp(x, -1.0, 1.0), {-1, -0.25, 0.5, 1});
        require_close(clamp(x, std::nullopt, 0.0), {-1.5, -0.25, 0, 0});
    }
}

TEST_CASE("gelu tanh approximation and softplus threshold follow PyTorch", "[ops][elementwise]") {
    Tensor x = tensor({-3.0, 0.7, 30.0}, {3}, DType::float64);
    std::vector<double> want;
    for (double v : {-3.0, 0.7, 30.0}) {
        double inner = std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v);
        want.push_back(0.5 * v * (1 + std::tanh(inner)));
    }
    require_close(gelu(x, "tanh"), want, 1e-12);
    // beta x = 60 > threshold 20: softplus is the identity there
    require_close(softplus(x, 2.0, 20.0),
                  {std::log1p(std::exp(-6.0)) / 2, std::log1p(std::exp(1.4)) / 2, 30.0}, 1e-12);
    require_error([&] { gelu(x, "fast"); }, {"[gelu]", "'fast'"});
}

TEST_CASE("unary gradients match finite differences", "[ops][elementwise][gradcheck]") {
    check_unary_grad([](const Tensor& x) { return neg(x); });
    check_unary_grad([](const Tensor& x) { return exp(x); });
    check_unary_grad([](const Tensor& x) { return sin(x); });
    check_unary_grad([](const Tensor& x) { return cos(x); });
    check_unary_grad([](const Tensor& x) { return tanh(x); });
    check_unary_grad([](const Tensor& x) { return sigmoid(x); });
    check_unary_grad([](const Tensor& x) { return square(x); });
    check_unary_grad([](const Tensor& x) { return gelu(x); });
    check_unary_grad([](const Tensor& x) { return gelu(x, "tanh"); });
    check_unary_grad([](const Tensor& x) { return silu(x); });
    check_unary_grad([](const Tensor& x) { return elu(x, 0.7); });
    check_unary_grad([](const Tensor& x) { return softplus(x, 1.5, 2.0); });
    check_unary_grad([](const Tensor& x) { return pow(x, 3.0); });
    // Positive domains for log, sqrt, rsqrt and fractional powers.
    check_unary_grad([](const Tensor& x) { return log(x); }, 0.5, 3);
    check_unary_grad([](const Tensor& x) { return sqrt(x); }, 0.5, 3);
    check_unary_grad([](const Tensor& x) { return rsqrt(x); }, 0.5, 3);
    check_unary_grad([](const Tensor& x) { return pow(x, -1.5); }, 0.5, 3);
}

TEST_CASE("kinked activations have the PyTorch subgradients away from the kink",
          "[ops][elementwise][gradcheck]") {
    // Inputs kept at |x| >= 0.1 so central differences never straddle a kink.
    Tensor x = tensor({-1.3, -0.4, -0.1, 0.1, 0.6, 1.7}, {2, 3}, DType::float64);
    gradcheck([](const std::vector<Tensor>& in) { return relu(in[0]); }, {x});
    gradcheck([](const std::vector<Tensor>& in) { return abs(in[0]); }, {x});
    gradcheck([](const std::vector<Tensor>& in) { return clamp(in[0], -0.5, 1.0); }, {x});
    // At exactly 0: relu and abs give 0; clamp passes the gradient at the bounds (inclusive).
    // x = 0: 0 + 0 + 1; x = -0.5: 0 - 1 + 1; x = 1: 1 + 1 + 1.
    Tensor at = tensor({0.0, -0.5, 1.0}, {3}, DType::float64).requires_grad_();
    sum(add(add(relu(at), abs(at)), clamp(at, -0.5, 1.0))).backward();
    require_close(at.grad(), {1.0, 0.0, 3.0});
}

TEST_CASE("binary ops broadcast like NumPy", "[ops][elementwise]") {
    Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor b = tensor({10, 20, 30}, {3});
    Tensor column = tensor({100, 200}, {2, 1});
    require_close(add(a, b), {11, 22, 33, 14, 25, 36});
    require_close(sub(a, column), {-99, -98, -97, -196, -195, -194});
    require_close(mul(a, 2.0), {2, 4, 6, 8, 10, 12});
    require_close(div(b, tensor({4}, {1})), {2.5, 5, 7.5});
    require_close(pow(a, tensor({2}, {1})), {1, 4, 9, 16, 25, 36});
    require_close(maximum(a, tensor({3.5}, {})), {3.5, 3.5, 3.5, 4, 5, 6});
    require_close(minimum(a, column), {1, 2, 3, 4, 5, 6});
    require_close(10.0 - a, {9, 8, 7, 6, 5, 4});
    require_close(12.0 / a, {12, 6, 4, 3, 2.4, 2});
    CHECK(add(a, column).shape() == Shape{2, 3});
    CHECK(add(column, b).shape() == Shape{2, 3});
    require_error([&] { add(a, tensor({1, 2}, {2})); }, {"[add]", "[2, 3]", "[2]"});
}

TEST_CASE("binary gradients reduce over broadcast dims", "[ops][elementwise][gradcheck]") {
    Tensor a = random_input({3, 4, 5}, 11);
    Tensor row = random_input({5}, 12);
    Tensor column = random_input({3, 1, 1}, 13, 0.5, 2.0);
    Tensor strided = noncontiguous(random_input({4, 5}, 14, 0.5, 2.0));
    for (const Tensor& b : {row, column, strided}) {
        gradcheck([](const std::vector<Tensor>& in) { return add(in[0], in[1]); }, {a, b});
        gradcheck([](const std::vector<Tensor>& in) { return sub(in[0], in[1]); }, {a, b});
        gradcheck([](const std::vector<Tensor>& in) { return mul(in[0], in[1]); }, {a, b});
    }
    gradcheck([](const std::vector<Tensor>& in) { return div(in[0], in[1]); }, {a, column});
    gradcheck([](const std::vector<Tensor>& in) { return div(in[0], in[1]); }, {a, strided});
    Tensor base = random_input({4, 5}, 15, 0.5, 2.0);
    gradcheck([](const std::vector<Tensor>& in) { return pow(in[0], in[1]); }, {base, row});
    gradcheck([](const std::vector<Tensor>& in) { return maximum(in[0], in[1]); }, {a, row});
    gradcheck([](const std::vector<Tensor>& in) { return minimum(in[0], in[1]); }, {a, column});
    gradcheck([](const std::vector<Tensor>& in) { return mul(in[0], 3.0); }, {a});
}

TEST_CASE("maximum splits the gradient of ties equally", "[ops][elementwise]") {
    Tensor a = tensor({1, 2, 3}, {3}).requires_grad_();
    Tensor b = tensor({1, 5, 0}, {3}).requires_grad_();
    sum(maximum(a, b)).backward();
    require_close(a.grad(), {0.5, 0, 1});
    require_close(b.grad(), {0.5, 1, 0});
}

TEST_CASE("dtype promotion follows PyTorch", "[ops][elementwise]") {
    Tensor i = from_vector(std::vector<int64_t>{1, 2, 3});
    Tensor f = tensor({0.5, 0.5, 0.5});
    Tensor d = tensor({1, 1, 1}, {3}, DType::float64);
    CHECK(add(i, f).dtype() == DType::float32);
    CHECK(add(f, d).dtype() == DType::float64);
    CHECK(add(i, 2.0).dtype() == DType::int64);
    CHECK(add(i, 2.5).dtype() == DType::float32);
    CHECK(div(i, i).dtype() == DType::float32);
    require_close(div(i, 2.0), {0.5, 1.0, 1.5});
    CHECK(exp(i).dtype() == DType::float32);
    CHECK(mul(f, 2.0).dtype() == DType::float32);
    CHECK(relu(i).dtype() == DType::int64);
    // A float32 input mixed with float64 gets a float32 gradient.
    Tensor leaf = tensor({1, 2, 3}).requires_grad_();
    sum(mul(leaf, d)).backward();
    CHECK(leaf.grad().dtype() == DType::float32);
    require_close(leaf.grad(), {1, 1, 1});
}

TEST_CASE("comparisons, logical ops, where and masked_fill", "[ops][elementwise]") {
    Tensor a = tensor({1, 2, 3, 4});
    Tensor b = tensor({4, 2, 1, 4});
    CHECK(lt(a, b).dtype() == DType::bool_);
    CHECK(lt(a, b).to_vector<bool>() == std::vector<bool>{true, false, false, false});
    CHECK(eq(a, b).to_vector<bool>() == std::vector<bool>{false, true, false, true});
    CHECK(ge(a, 3.0).to_vector<bool>() == std::vector<bool>{false, false, true, true});
    CHECK(logical_not(ne(a, b)).to_vector<bool>() == std::vector<bool>{false, true, false, true});
    CHECK(logical_and(gt(a, 1.0), lt(a, 4.0)).to_vector<bool>() ==
          std::vector<bool>{false, true, true, false});
    require_close(where(gt(a, b), a, b), {4, 2, 3, 4});
    require_close(where(gt(a, 2.0), a, -1.0), {-1, -1, 3, 4});
    require_close(masked_fill(a, eq(a, 2.0), -5.0), {1, -5, 3, 4});
    require_error([&] { where(a, a, b); }, {"[where]", "bool", "float32"});
    require_error([&] { masked_fill(a, tensor({1, 0, 1}, {3}) > 0.0, 0.0); }, {"[masked_fill]"});
}

TEST_CASE("where and masked_fill route gradients", "[ops][elementwise][gradcheck]") {
    Tensor x = random_input({3, 4}, 21);
    Tensor y = random_input({4}, 22);
    Tensor mask = gt(random_input({3, 4}, 23), 0.0);
    gradcheck([&](const std::vector<Tensor>& in) { return where(mask, in[0], in[1]); }, {x, y});
    gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], mask, 7.0); }, {x});
}

TEST_CASE("elementwise ops accept size-0 and 0-d tensors", "[ops][elementwise]") {
    Tensor empty_x = zeros({0, 3});
    CHECK(exp(empty_x).shape() == Shape{0, 3});
    CHECK(add(empty_x, tensor({1, 2, 3})).shape() == Shape{0, 3});
    Tensor scalar = scalar_tensor(2.0);
    CHECK(mul(scalar, scalar).item<float>() == 4.0f);
    CHECK(add(scalar, tensor({1, 2})).shape() == Shape{2});
}

TEST_CASE("extreme values stay finite where PyTorch's do", "[ops][elementwise]") {
    Tensor x = tensor({-1000, 1000}, {2});
    require_close(sigmoid(x), {0, 1});
    require_close(softplus(x), {0, 1000});
    require_close(tanh(x), {-1, 1});
    require_close(silu(x), {0, 1000});
    require_close(elu(x), {-1, 1000});
}

TEST_CASE("float32 elu (the vectorized path) and its gradient match float64", "[ops][elementwise]") {
    // A dense sweep over both sides of 0 and deep into the saturated tail, odd length so the
    // vector loop's remainder runs too, read through a non-contiguous view.
    std::vector<double> values;
    for (int i = 0; i < 1001; ++i) values.push_back(-110.0 + 0.13 * i);
    for (double v : {-1e-30, -1e-6, 1e-6, 3e4}) values.push_back(v);
    for (double alpha : {1.0, 0.7}) {
        Tensor x64 = from_vector(values).to(DType::float64);
        Tensor x = noncontiguous(x64.to(DType::float32)).requires_grad_();
        Tensor y = elu(x, alpha);
        Tensor go = full_like(y, 1.5);
        y.backward(go);
        std::vector<double> want, want_grad;
        for (float f : x.to_vector<float>()) {  // the float inputs, as the kernel saw them
            double v = f;
            want.push_back(v > 0 ? v : alpha * std::expm1(v));
            want_grad.push_back(v > 0 ? 1.5 : 1.5 * alpha * std::exp(v));
        }
        require_close(y, want, 1e-6, 2e-7);
        require_close(x.grad(), want_grad, 1e-6, 2e-7);
    }
    // Special values: -0 and the limits, and NaN propagates on both sides.
    Tensor s = tensor({-0.0, -INFINITY, INFINITY, NAN, -NAN}, {5}).requires_grad_();
    Tensor y = elu(s);
    std::vector<float> got = y.to_vector<float>();
    CHECK(got[0] == 0.0f);
    CHECK(got[1] == -1.0f);
    CHECK(got[2] == INFINITY);
    CHECK(std::isnan(got[3]));
    CHECK(std::isnan(got[4]));
    sum(y.narrow(0, 0, 3)).backward();
    std::vector<float> grad = s.grad().to_vector<float>();
    CHECK(grad[0] == 1.0f);  // alpha e^-0 below the kink, as PyTorch's x <= 0 branch
    CHECK(grad[1] == 0.0f);
    CHECK(grad[2] == 1.0f);
}

TEST_CASE("elu's gradient at +0 and -0 is alpha, PyTorch's x <= 0 branch", "[ops][elementwise]") {
    // PyTorch: x > 0 ? 1 : alpha e^x, so both zeros take alpha whatever alpha is, and NaN
    // gives NaN. The float32 CPU kernel selects through the bits of x, the float64 one through
    // the comparison.
    for (DType dtype : {DType::float32, DType::float64}) {
        INFO(dtype);
        Tensor x = tensor({0.0, -0.0, 0.5, -0.5, NAN}, {5}).to(dtype).requires_grad_();
        Tensor y = elu(x, 0.5);
        y.backward(tensor({2.0, 2.0, 2.0, 2.0, 2.0}, {5}).to(dtype));
        std::vector<double> got = y.to_vector<double>(), grad = x.grad().to_vector<double>();
        CHECK(got[0] == 0.0);
        CHECK(got[1] == 0.0);
        CHECK(std::isnan(got[4]));
        CHECK(grad[0] == 1.0);  // 2 * 0.5 * e^0
        CHECK(grad[1] == 1.0);
        CHECK(grad[2] == 2.0);
        CHECK(grad[3] == Approx(2 * 0.5 * std::exp(-0.5)).epsilon(1e-6));
        CHECK(std::isnan(grad[4]));
    }
}

TEST_CASE("float32 exp, tanh and softplus (the vectorized paths) match float64",
          "[ops][elementwise]") {
    // A dense sweep through both saturations (exp under- and overflows near -103 and 88.7,
    // tanh is +-1 in float beyond ~9), values near 0 where tanh must stay relatively accurate
    // (its x-for-tiny-x branch starts at 4e-4), odd length so the vector loop's remainder runs
    // too, read through a non-contiguous view.
    std::vector<double> values;
    for (int i = 0; i < 1601; ++i) values.push_back(-110.0 + 0.125 * i);
    for (double v : {1e-30, 1e-10, 3e-4, 3.999e-4, 4.001e-4, 1e-3, 0.05, 88.5, 88.7})
        for (double sign : {-1.0, 1.0}) values.push_back(sign * v);
    Tensor x = noncontiguous(from_vector(values).to(DType::float32)).requires_grad_();
    std::vector<double> exact_exp, exact_tanh, exact_softplus, softplus_b2;
    for (float f : x.to_vector<float>()) {  // the float inputs, as the kernels saw them
        double v = f;
        exact_exp.push_back(std::exp(v));
        exact_tanh.push_back(std::tanh(v));
        exact_softplus.push_back(v > 20 ? v : std::log1p(std::exp(v)));
        softplus_b2.push_back(2 * v > 10 ? v : std::log1p(std::exp(2 * v)) / 2);
    }
    // float's exp overflows to inf past 88.72 as the exact value's rounding does; below
    // e^-87 the results are denormal, hence the absolute tolerance.
    Tensor e = exp(x);
    for (size_t i = 0; i < exact_exp.size(); ++i)
        if (exact_exp[i] > 3.4028234663852886e38) exact_exp[i] = INFINITY;
    require_close(e, exact_exp, 1e-6, 1e-44);
    // tanh: at most 4.8 ulp (measured over [-10, 10]; 2.8e-7 relative)
    require_close(tanh(x), exact_tanh, 4e-7, 1e-37);
    require_close(softplus(x), exact_softplus, 1e-6, 1e-44);
    require_close(softplus(x, 2.0, 10.0), softplus_b2, 1e-6, 1e-44);
    // Gradients: tanh's from its output (1 - y^2), softplus's a sigmoid.
    sum(tanh(x)).backward();
    std::vector<double> want_grad;
    for (double t : exact_tanh) want_grad.push_back(1 - t * t);
    require_close(x.grad(), want_grad, 1e-6, 1e-6);
    // Special values: the limits, -0 keeps its sign through tanh, NaN propagates.
    Tensor s = tensor({-0.0, -INFINITY, INFINITY, NAN, -NAN}, {5});
    std::vector<float> ex = exp(s).to_vector<float>(), th = tanh(s).to_vector<float>();
    std::vector<float> sp = softplus(s).to_vector<float>();
    CHECK(ex[0] == 1.0f);
    CHECK(ex[1] == 0.0f);
    CHECK(ex[2] == INFINITY);
    CHECK((std::isnan(ex[3]) && std::isnan(ex[4])));
    CHECK((th[0] == 0.0f && std::signbit(th[0])));
    CHECK(th[1] == -1.0f);
    CHECK(th[2] == 1.0f);
    CHECK((std::isnan(th[3]) && std::isnan(th[4])));
    CHECK(sp[0] == float(std::log(2.0)));
    CHECK(sp[1] == 0.0f);
    CHECK(sp[2] == INFINITY);
    CHECK((std::isnan(sp[3]) && std::isnan(sp[4])));
}

TEST_CASE("where over long rows: both operands, one broadcast value, strided",
          "[ops][elementwise]") {
    // 37 elements per row: the vector loop and its remainder; the condition alternates
    // irregularly so no run of one branch hides a wrong pick.
    int64_t n = 37;
    std::vector<double> av, bv, cv;
    for (int64_t i = 0; i < 3 * n; ++i) {
        av.push_back(double(i));
        bv.push_back(-double(i) - 0.5);
        cv.push_back((i * 7) % 5 < 2 ? 1.0 : 0.0);
    }
    Tensor a = from_vector(av).to(DType::float32).reshape({3, n});
    Tensor b = from_vector(bv).to(DType::float32).reshape({3, n});
    Tensor c = gt(from_vector(cv).reshape({3, n}), 0.0);
    auto expect = [&](auto pick) {
        std::vector<double> out;
        for (int64_t i = 0; i < 3 * n; ++i)
            out.push_back(cv[size_t(i)] > 0 ? pick(i, true) : pick(i, false));
        return out;
    };
    require_close(where(c, a, b), expect([&](int64_t i, bool t) { return t ? av[i] : bv[i]; }));
    require_close(where(c, a, -3.0), expect([&](int64_t i, bool t) { return t ? av[i] : -3.0; }));
    require_close(where(c, scalar_tensor(9.0, DType::float32), b),
                  expect([&](int64_t i, bool t) { return t ? 9.0 : bv[i]; }));
    require_close(masked_fill(a, c, 7.0),
                  expect([&](int64_t i, bool t) { return t ? 7.0 : av[i]; }));
    // Transposed operands take the strided loop; float64 and int64 the same paths.
    Tensor at = a.t().contiguous().t(), ct = c.t().contiguous().t();
    require_close(where(ct, at, b), expect([&](int64_t i, bool t) { return t ? av[i] : bv[i]; }));
    require_close(where(c, a.to(DType::float64), b.to(DType::float64)),
                  expect([&](int64_t i, bool t) { return t ? av[i] : bv[i]; }));
    CHECK(where(c, a.to(DType::int64), scalar_tensor(-1.0, DType::int64)).to_vector<int64_t>() ==
          [&] {
              std::vector<int64_t> out;
              for (int64_t i = 0; i < 3 * n; ++i) out.push_back(cv[size_t(i)] > 0 ? i : -1);
              return out;
          }());
}
