// leaky_relu, hardtanh, sign and the subgradients at kinks (abs, relu, clamp, hardtanh) as
// PyTorch defines them; the float erf behind GELU against double precision.
#include <cmath>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// d sum(f(x) * 1) / dx at the given points.
std::vector<double> grad_at(const std::function<Tensor(const Tensor&)>& f, std::vector<double> at) {
    Tensor x = from_vector<double>(at, {int64_t(at.size())}).requires_grad_();
    sum(f(x)).backward();
    return x.grad().to_vector<double>();
}

}  // namespace

TEST_CASE("leaky_relu: values and gradients", "[ops][activations]") {
    Tensor x = tensor({-2, -0.5, 0, 0.5, 3}, {5}, DType::float64);
    require_close(leaky_relu(x), {-0.02, -0.005, 0, 0.5, 3});
    require_close(leaky_relu(x, 0.2), {-0.4, -0.1, 0, 0.5, 3});
    // PyTorch: slope for x <= 0 (the kink at 0 takes the negative side)
    CHECK(grad_at([](const Tensor& t) { return leaky_relu(t, 0.2); }, {-1, 0, 1}) ==
          std::vector<double>{0.2, 0.2, 1});
    gradcheck([](const std::vector<Tensor>& in) { return leaky_relu(in[0], 0.3); },
              {noncontiguous(random_input({3, 4}, 1))});
    require_close(leaky_relu(x.to(DType::float32)), {-0.02, -0.005, 0, 0.5, 3}, 1e-6);
}

TEST_CASE("hardtanh: values and gradient only strictly inside the bounds", "[ops][activations]") {
    Tensor x = tensor({-3, -1, -0.5, 0.5, 1, 2}, {6}, DType::float64);
    require_close(hardtanh(x), {-1, -1, -0.5, 0.5, 1, 1});
    require_close(hardtanh(x, -0.5, 2), {-0.5, -0.5, -0.5, 0.5, 1, 2});
    CHECK(grad_at([](const Tensor& t) { return hardtanh(t); }, {-3, -1, -0.5, 0.5, 1, 2}) ==
          std::vector<double>{0, 0, 1, 1, 0, 0});
    // clamp keeps PyTorch's inclusive rule: gradient 1 at the bounds
    CHECK(grad_at([](const Tensor& t) { return clamp(t, -1.0, 1.0); }, {-3, -1, 0, 1, 2}) ==
          std::vector<double>{0, 1, 1, 1, 0});
    gradcheck([](const std::vector<Tensor>& in) { return hardtanh(in[0], -0.5, 0.5); },
              {random_input({4, 5}, 2)});
    require_close(hardtanh(tensor({-5, 0, 5}, {3}, DType::int64)), {-1, 0, 1});
    require_error([&] { hardtanh(x, 1, -1); }, {"[hardtanh]", "min_val", "max_val"});
}

TEST_CASE("sign, abs, relu: PyTorch subgradients at 0", "[ops][activations]") {
    std::vector<double> points{-2, 0, 3};
    require_close(sign(tensor({-2, 0, 3}, {3}, DType::float64)), {-1, 0, 1});
    CHECK(grad_at([](const Tensor& t) { return sign(t); }, points) == std::vector<double>{0, 0, 0});
    CHECK(grad_at([](const Tensor& t) { return abs(t); }, points) == std::vector<double>{-1, 0, 1});
    CHECK(grad_at([](const Tensor& t) { return relu(t); }, points) == std::vector<double>{0, 0, 1});
}

TEST_CASE("relu, maximum and minimum propagate NaN as PyTorch", "[ops][activations]") {
    for (DType dtype : {DType::float32, DType::float64}) {
        INFO(dtype);
        // relu(NaN) = NaN, relu(-0) = -0 (clamp_min(0)); its gradient passes where the output
        // is NaN (threshold_backward: 0 where the output <= 0).
        Tensor x = tensor({NAN, -0.0, -2.0, 3.0}, {4}, dtype).requires_grad_();
        Tensor y = relu(x);
        std::vector<double> got = y.to_vector<double>();
        CHECK(std::isnan(got[0]));
        CHECK((got[1] == 0.0 && std::signbit(got[1])));
        CHECK(got[2] == 0.0);
        CHECK(got[3] == 3.0);
        sum(y).backward();
        CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 0, 0, 1});
        // A NaN on either side wins, as torch.maximum / torch.minimum.
        Tensor a = tensor({1.0, NAN, NAN, 2.0}, {4}, dtype);
        Tensor b = tensor({NAN, 1.0, NAN, -1.0}, {4}, dtype);
        for (const Tensor& m : {maximum(a, b), minimum(a, b), maximum(b, a), minimum(b, a)}) {
            std::vector<double> v = m.to_vector<double>();
            CHECK(std::isnan(v[0]));
            CHECK(std::isnan(v[1]));
            CHECK(std::isnan(v[2]));
            CHECK(!std::isnan(v[3]));
        }
        CHECK(maximum(a, b).to_vector<double>()[3] == 2.0);
        CHECK(minimum(a, b).to_vector<double>()[3] == -1.0);
    }
}

TEST_CASE("gelu: the float erf is accurate and its gradient matches", "[ops][activations]") {
    // float32 GELU against the exact double formula over a dense grid
    std::vector<double> grid;
    for (double v = -8; v <= 8; v += 1.0 / 64) grid.push_back(v);
    Tensor x = from_vector<double>(grid, {int64_t(grid.size())});
    std::vector<double> want(grid.size()), dwant(grid.size());
    for (size_t i = 0; i < grid.size(); ++i) {
        double v = grid[i];
        want[i] = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
        dwant[i] = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
    }
    require_close(gelu(x.to(DType::float32)), want, 2e-6, 2e-6);
    Tensor xf = x.to(DType::float32).requires_grad_();
    sum(gelu(xf)).backward();
    require_close(xf.grad(), dwant, 2e-6, 2e-6);
    require_close(gelu(x), want, 1e-14, 1e-15);
    gradcheck([](const std::vector<Tensor>& in) { return gelu(in[0]); }, {random_input({5, 3}, 1, -3, 3)});
}

TEST_CASE("float sigmoid, silu and tanh-GELU kernels match double precision", "[ops][activations]") {
    std::vector<double> grid;
    for (double v = -100; v <= 100; v += 0.125) grid.push_back(v);
    Tensor x = from_vector<double>(grid, {int64_t(grid.size())});
    Tensor xf = x.to(DType::float32);
    // relative accuracy of sigmoid down to e^-100 (no cancellation on the negative side)
    require_close(sigmoid(xf), sigmoid(x).to_vector<double>(), 1e-6, 1e-30);
    require_close(silu(xf), silu(x).to_vector<double>(), 1e-6, 1e-30);
    require_close(gelu(xf, "tanh"), gelu(x, "tanh").to_vector<double>(), 1e-6, 1e-6);
    Tensor xg = xf.detach().clone().requires_grad_();
    sum(gelu(xg, "tanh")).backward();
    Tensor xd = x.detach().clone().requires_grad_();
    sum(gelu(xd, "tanh")).backward();
    require_close(xg.grad(), xd.grad().to_vector<double>(), 1e-6, 1e-6);
    // NaN propagates
    Tensor nan = tensor({std::nan("")}, {1}, DType::float32);
    CHECK(std::isnan(sigmoid(nan).item<float>()));
    CHECK(std::isnan(gelu(nan).item<float>()));
    CHECK(std::isnan(gelu(nan, "tanh").item<float>()));
}

TEST_CASE("leaky_relu in float32 (the vectorized select): NaN, -0 and long rows",
          "[ops][activations]") {
    // PyTorch: x > 0 ? x : x * slope, so NaN stays NaN and -0 gives -0 (times the slope).
    Tensor s = tensor({-0.0, NAN, -INFINITY, INFINITY}, {4}).requires_grad_();
    std::vector<float> y = leaky_relu(s, 0.1).to_vector<float>();
    CHECK((y[0] == 0.0f && std::signbit(y[0])));
    CHECK(std::isnan(y[1]));
    CHECK(y[2] == -INFINITY);
    CHECK(y[3] == INFINITY);
    // 101 elements: the vector loop and its remainder, through a non-contiguous view.
    std::vector<double> values;
    for (int i = 0; i < 101; ++i) values.push_back((i % 3 == 0 ? -1.0 : 1.0) * 0.37 * i);
    Tensor x = noncontiguous(from_vector(values).to(DType::float32)).requires_grad_();
    Tensor out = leaky_relu(x, 0.2);
    out.backward(full_like(out, 2.0));
    std::vector<double> want, want_grad;
    for (float f : x.to_vector<float>()) {
        want.push_back(f > 0 ? double(f) : double(f * 0.2f));
        want_grad.push_back(f > 0 ? 2.0 : 0.4);
    }
    require_close(out, want, 1e-7, 0);
    require_close(x.grad(), want_grad, 1e-7, 0);
}
