// The initialisers of nn/init.h: values are drawn in float64 on the CPU from the Philox
// generator, transformed with the formulas of torch.nn.init, and copied into the tensor
// (converting to its dtype and device).
#include "nn/init.h"

#include <cmath>
#include <vector>

#include "core/autograd.h"
#include "core/parallel.h"
#include "ops/random.h"

namespace lumen::nn::init {

namespace {

// Maps each of `draws` (fresh float64 CPU values of t's shape) through f in place, in
// parallel, and copies them into t without recording anything. f is a pure function of one
// value, so the result does not depend on the thread count.
template <typename F>
void assign(const Tensor& t, const Tensor& draws, const F& f) {
    double* values = draws.data_ptr<double>();
    parallel_for(0, draws.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) values[i] = f(values[i]);
    });
    NoGradGuard no_grad;
    Tensor target = t;
    target.copy_(draws);
}

double normal_cdf(double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); }

// erfinv(y) for |y| < 1: Giles' single-precision approximation refined by Newton steps on
// erf: one brings the central branch (|y| < 0.9966) within 1e-13 of the converged value, the
// tail branch takes two (erf is flat there; it is 0.3% of the draws).
double erfinv(double y) {
    double w = -std::log((1.0 - y) * (1.0 + y));
    double x;
    const int newton_steps = w < 5.0 ? 1 : 2;
    if (w < 5.0) {
        w -= 2.5;
        double p = 2.81022636e-08;
        for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                         -0.00125372503, -0.00417768164, 0.246640727, 1.50140941})
            p = p * w + c;
        x = p * y;
    } else {
        w = std::sqrt(w) - 3.0;
        double p = -0.000200214257;
        for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682})
            p = p * w + c;
        x = p * y;
    }
    const double two_over_sqrt_pi = 1.1283791670955126;
    for (int i = 0; i < newton_steps; ++i)
        x -= (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
    return x;
}

double fan_for(const Tensor& t, const std::string& mode) {
    auto [fan_in, fan_out] = fan_in_and_fan_out(t);
    LUMEN_CHECK(mode == "fan_in" || mode == "fan_out", "init",
                "mode must be 'fan_in' or "
                "'fan_out', got '",
                mode, "'");
    int64_t fan = mode == "fan_in" ? fan_in : fan_out;
    LUMEN_CHECK(fan > 0, "init", "cannot initialise a tensor with zero elements, shape ",
                t.shape());
    return double(fan);
}

}  // namespace

void uniform_(const Tensor& t, double a, double b, Generator* generator) {
    assign(t, rand(t.shape(), DType::float64, generator),
           [=](double x) { return a + (b - a) * x; });
}

void normal_(const Tensor& t, double mean, double std, Generator* generator) {
    assign(t, randn(t.shape(), DType::float64, generator),
           [=](double x) { return mean + std * x; });
}

void trunc_normal_(const Tensor& t, double mean, double std, double a, double b,
                   Generator* generator) {
    LUMEN_CHECK(a < b && std > 0, "trunc_normal_", "needs a < b and std > 0, got a = ", a,
                ", b = ", b, ", std = ", std);
    // Uniform on [cdf(a), cdf(b)] mapped through the inverse normal CDF.
    double low = normal_cdf((a - mean) / std), high = normal_cdf((b - mean) / std);
    assign(t, rand(t.shape(), DType::float64, generator), [=](double x) {
        double u = 2.0 * (low + (high - low) * x) - 1.0;  // in [2 low - 1, 2 high - 1]
        u = std::min(std::max(u, -1.0 + 1e-16), 1.0 - 1e-16);
        return std::min(std::max(mean + std * std::sqrt(2.0) * erfinv(u), a), b);
    });
}

void constant_(const Tensor& t, double value) {
    NoGradGuard no_grad;
    Tensor target = t;
    target.fill_(value);
}
void zeros_(const Tensor& t) { constant_(t, 0.0); }
void ones_(const Tensor& t) { constant_(t, 1.0); }

std::pair<int64_t, int64_t> fan_in_and_fan_out(const Tensor& t) {
    LUMEN_CHECK(t.ndim() >= 2, "init",
                "fan in and fan out need a tensor with at least 2 dims, "
                "got shape ",
                t.shape());
    int64_t receptive = 1;
    for (int64_t d = 2; d < t.ndim(); ++d) receptive *= t.size(d);
    return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nonlinearity, double param) {
    if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity.rfind("conv", 0) == 0)
        return 1.0;
    if (nonlinearity == "tanh") return 5.0 / 3.0;
    if (nonlinearity == "relu") return std::sqrt(2.0);
    if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
    if (nonlinearity == "selu") return 0.75;
    LUMEN_FAIL("calculate_gain", "unknown nonlinearity '", nonlinearity,
               "' (expected linear, conv1d/2d/3d, sigmoid, tanh, relu, leaky_relu or selu)");
}

void xavier_uniform_(const Tensor& t, double gain, Generator* generator) {
    auto [fan_in, fan_out] = fan_in_and_fan_out(t);
    double bound = gain * std::sqrt(6.0 / double(fan_in + fan_out));
    uniform_(t, -bound, bound, generator);
}

void xavier_normal_(const Tensor& t, double gain, Generator* generator) {
    auto [fan_in, fan_out] = fan_in_and_fan_out(t);
    normal_(t, 0.0, gain * std::sqrt(2.0 / double(fan_in + fan_out)), generator);
}

void kaiming_uniform_(const Tensor& t, double a, const std::string& mode,
                      const std::string& nonlinearity, Generator* generator) {
    double bound = calculate_gain(nonlinearity, a) * std::sqrt(3.0 / fan_for(t, mode));
    uniform_(t, -bound, bound, generator);
}

void kaiming_normal_(const Tensor& t, double a, const std::string& mode,
                     const std::string& nonlinearity, Generator* generator) {
    normal_(t, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(fan_for(t, mode)), generator);
}

void torch_default_(const Tensor& weight, const Tensor& bias, Generator* generator) {
    kaiming_uniform_(weight, std::sqrt(5.0), "fan_in", "leaky_relu", generator);
    if (!bias.defined()) return;
    double fan_in = double(fan_in_and_fan_out(weight).first);
    double bound = fan_in > 0 ? 1.0 / std::sqrt(fan_in) : 0.0;
    uniform_(bias, -bound, bound, generator);
}

}  // namespace lumen::nn::init
