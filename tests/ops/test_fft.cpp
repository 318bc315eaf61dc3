// rfft / irfft against a naive DFT (any length, padding and cropping, any dim, norms), round
// trips, gradients; fftconv against a direct O(L^2) causal convolution, gradients, errors.
#include <cmath>
#include <numbers>
#include <vector>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// rfft of each row of a (rows, length) row-major array, as (rows, n/2 + 1, 2), by the sum.
std::vector<double> naive_rfft(const std::vector<double>& x, int64_t rows, int64_t length,
                               int64_t n, double scale) {
    int64_t bins = n / 2 + 1;
    std::vector<double> out(size_t(rows * bins * 2));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = 0; k < bins; ++k) {
            double re = 0, im = 0;
            for (int64_t t = 0; t < std::min(length, n); ++t) {
                double angle = -2 * std::numbers::pi * double(k * t) / double(n);
                re += x[size_t(r * length + t)] * std::cos(angle);
                im += x[size_t(r * length + t)] * std::sin(angle);
            }
            out[size_t((r * bins + k) * 2)] = scale * re;
            out[size_t((r * bins + k) * 2 + 1)] = scale * im;
        }
    }
    return out;
}

// irfft of each row of (rows, bins, 2) to (rows, n), from the Hermitian sum.
std::vector<double> naive_irfft(const std::vector<double>& x, int64_t rows, int64_t bins, int64_t n,
                                double scale) {
    std::vector<double> out(size_t(rows * n));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t t = 0; t < n; ++t) {
            double total = 0;
            for (int64_t k = 0; k <= n / 2 && k < bins; ++k) {
                double re = x[size_t((r * bins + k) * 2)], im = x[size_t((r * bins + k) * 2 + 1)];
                double angle = 2 * std::numbers::pi * double(k * t) / double(n);
                double term = re * std::cos(angle) - im * std::sin(angle);
                total += (k == 0 || 2 * k == n) ? term : 2 * term;
            }
            out[size_t(r * n + t)] = scale * total;
        }
    }
    return out;
}

// y[.., c, t] = sum_{s<=t} k[c, t-s] u[.., c, s] + D[c] u[.., c, t], directly.
std::vector<double> direct_conv(const Tensor& u, const Tensor& k, const Tensor& D) {
    int64_t channels = u.size(-2), length = u.size(-1), rows = u.numel() / length;
    auto uv = u.to_vector<double>(), kv = k.to_vector<double>();
    std::vector<double> out(uv.size());
    for (int64_t r = 0; r < rows; ++r) {
        int64_t c = r % channels;
        for (int64_t t = 0; t < length; ++t) {
            double total = D.defined() ? read_element(D, c) * uv[size_t(r * length + t)] : 0.0;
            for (int64_t s = 0; s <= t; ++s)
                total += kv[size_t(c * length + t - s)] * uv[size_t(r * length + s)];
            out[size_t(r * length + t)] = total;
        }
    }
    return out;
}

}  // namespace

TEST_CASE("rfft: matches a naive DFT for any length, n and norm", "[ops][fft]") {
    for (int64_t length : {1, 2, 3, 4, 5, 7, 8, 12, 17, 30, 64, 97}) {
        for (int64_t n : {length, length + 3, std::max<int64_t>(1, length - 1), 2 * length}) {
            Tensor x = random_input({3, length}, uint64_t(length * 7 + n));
            INFO("length " << length << " n " << n);
            auto want = naive_rfft(x.to_vector<double>(), 3, length, n, 1.0);
            Tensor y = rfft(x, n);
            CHECK(y.shape() == Shape{3, n / 2 + 1, 2});
            require_close(y, want, 1e-10, 1e-10);
            require_close(rfft(x.to(DType::float32), n), want, 1e-4, 1e-4);
            require_close(rfft(x, n, -1, "forward"),
                          naive_rfft(x.to_vector<double>(), 3, length, n, 1.0 / double(n)), 1e-10,
                          1e-12);
            require_close(rfft(x, n, -1, "ortho"),
                          naive_rfft(x.to_vector<double>(), 3, length, n, 1 / std::sqrt(n)), 1e-10,
                          1e-12);
        }
    }
}

TEST_CASE("rfft and irfft: long power-of-two lengths match the naive sums", "[ops][fft]") {
    // Powers of two >= 4 take the packed radix-4 (+ one radix-2) path: 2048 = 2 * 4^5 and
    // 512 = 2 * 4^4 use both pass kinds; 8192 (a complex length of 4096) has passes whose
    // streams lie a multiple of 4 KiB apart, in the padded buffers.
    for (int64_t n : {512, 2048, 8192}) {
        INFO("n " << n);
        Tensor x = random_input({1, n}, uint64_t(n));
        require_close(rfft(x), naive_rfft(x.to_vector<double>(), 1, n, n, 1.0), 1e-9, 1e-9);
        require_close(rfft(x.to(DType::float32)), rfft(x).to_vector<double>(), 1e-4, 1e-3);
        Tensor spectrum = random_input({1, n / 2 + 1, 2}, uint64_t(n + 1));
        require_close(irfft(spectrum, n),
                      naive_irfft(spectrum.to_vector<double>(), 1, n / 2 + 1, n, 1.0 / n), 1e-9,
                      1e-12);
    }
    // The FFT convolution's length at L = 16384, and the next (odd log2 of the complex length):
    // irfft inverts rfft.
    for (int64_t n : {32768, 65536}) {
        INFO("n " << n);
        Tensor signal = random_input({2, n}, uint64_t(n));
        require_close(irfft(rfft(signal), n), signal, 1e-10, 1e-12);
    }
}

TEST_CASE("irfft: matches the Hermitian sum and inverts rfft", "[ops][fft]") {
    for (int64_t n : {1, 2, 3, 4, 6, 9, 16, 25, 31, 40}) {
        int64_t bins = n / 2 + 1;
        Tensor x = random_input({2, bins, 2}, uint64_t(n));
        INFO("n " << n);
        require_close(irfft(x, n), naive_irfft(x.to_vector<double>(), 2, bins, n, 1.0 / n), 1e-10,
                      1e-12);
        require_close(irfft(x, n, -1, "forward"),
                      naive_irfft(x.to_vector<double>(), 2, bins, n, 1.0), 1e-10, 1e-12);
        // Round trip.
        Tensor signal = random_input({2, n}, uint64_t(n + 50));
        require_close(irfft(rfft(signal), n), signal, 1e-10, 1e-12);
        require_close(irfft(rfft(signal, std::nullopt, -1, "ortho"), n, -1, "ortho"), signal, 1e-10,
                      1e-12);
    }
    // Default n = 2 (bins - 1); more bins than n/2 + 1 are cut, fewer are zero-padded.
    Tensor x = random_input({5, 2}, 3);
    CHECK(irfft(x).shape() == Shape{8});
    require_close(irfft(x, 4), naive_irfft(x.to_vector<double>(), 1, 5, 4, 0.25), 1e-12, 1e-13);
    require_close(irfft(x, 14), naive_irfft(x.to_vector<double>(), 1, 5, 14, 1.0 / 14), 1e-12,
                  1e-13);
}

TEST_CASE("rfft and irfft: along any dim and on non-contiguous inputs", "[ops][fft]") {
    Tensor x = random_input({4, 6, 5}, 11);
    for (int64_t dim : {0, 1, 2, -2}) {
        INFO("dim " << dim);
        int64_t d = dim < 0 ? dim + 3 : dim;
        Tensor moved = x.transpose(d, 2).contiguous();  // transformed dim last
        Tensor want = rfft(moved, 9).transpose(d, 2);   // bins back at d
        Tensor got = rfft(x, 9, dim);
        Shape shape = x.shape();
        shape[size_t(d)] = 9 / 2 + 1;
        shape.push_back(2);
        CHECK(got.shape() == shape);
        require_close(got, want.contiguous().to_vector<double>(), 1e-12, 1e-12);
        // irfft along the same dim gives x back, zero-padded to 9.
        require_close(irfft(got, 9, dim).narrow(d, 0, x.size(d)), x.to_vector<double>(), 1e-12,
                      1e-12);
    }
    Tensor base = random_input({3, 8}, 12);
    require_close(rfft(noncontiguous(base)), rfft(base).to_vector<double>(), 1e-12, 1e-12);
}

TEST_CASE("rfft and irfft: gradients match finite differences", "[ops][fft][gradcheck]") {
    for (int64_t n : {5, 6, 8, 9}) {
        INFO("n " << n);
        gradcheck([&](const std::vector<Tensor>& in) { return rfft(in[0], n); },
                  {random_input({2, 7}, uint64_t(20 + n))});
        gradcheck([&](const std::vector<Tensor>& in) { return irfft(in[0], n); },
                  {random_input({2, 4, 2}, uint64_t(30 + n))});
        gradcheck([&](const std::vector<Tensor>& in) { return irfft(in[0], n, 0, "ortho"); },
                  {random_input({5, 3, 2}, uint64_t(40 + n))});
    }
    gradcheck([](const std::vector<Tensor>& in) { return rfft(in[0], 7, 0, "forward"); },
              {noncontiguous(random_input({6, 3}, 50))});
}

TEST_CASE("fftconv: matches a direct causal convolution", "[ops][fft]") {
    for (int64_t length : {1, 2, 5, 19, 24, 64, 129}) {
        INFO("L " << length);
        Tensor u = random_input({2, 3, 4, length}, uint64_t(length));
        Tensor k = random_input({4, length}, uint64_t(length + 1));
        Tensor D = random_input({4}, uint64_t(length + 2));
        require_close(fftconv(u, k, D), direct_conv(u, k, D), 1e-10, 1e-12);
        require_close(fftconv(u, k), direct_conv(u, k, Tensor()), 1e-10, 1e-12);
        require_close(fftconv(u, k.unsqueeze(0), D), direct_conv(u, k, D), 1e-10, 1e-12);
        Tensor y32 = fftconv(u.to(DType::float32), k.to(DType::float32), D.to(DType::float32));
        CHECK(y32.dtype() == DType::float32);
        require_close(y32, direct_conv(u, k, D), 1e-4, 1e-4);
    }
}

TEST_CASE("fftconv: equals irfft(rfft(u, 2L) rfft(k, 2L), 2L)[:L] + u D", "[ops][fft]") {
    int64_t L = 13;
    Tensor u = random_input({2, 3, L}, 60), k = random_input({3, L}, 61), D = random_input({3}, 62);
    Tensor uf = rfft(u, 2 * L), kf = rfft(k, 2 * L);
    Tensor ur = uf.select(-1, 0), ui = uf.select(-1, 1), kr = kf.select(-1, 0),
           ki = kf.select(-1, 1);
    Tensor product = stack({sub(mul(ur, kr), mul(ui, ki)), add(mul(ur, ki), mul(ui, kr))}, -1);
    Tensor want = add(irfft(product, 2 * L).narrow(-1, 0, L), mul(u, D.unsqueeze(-1)));
    require_close(fftconv(u, k, D), want.contiguous().to_vector<double>(), 1e-12, 1e-12);
}

TEST_CASE("fftconv: gradients of u, k and D match finite differences", "[ops][fft][gradcheck]") {
    for (int64_t length : {1, 4, 7}) {
        INFO("L " << length);
        gradcheck([](const std::vector<Tensor>& in) { return fftconv(in[0], in[1], in[2]); },
                  {random_input({2, 3, length}, uint64_t(70 + length)),
                   random_input({3, length}, uint64_t(71 + length)),
                   random_input({3}, uint64_t(72 + length))});
    }
    gradcheck([](const std::vector<Tensor>& in) { return fftconv(in[0], in[1]); },
              {noncontiguous(random_input({2, 2, 3, 5}, 80)), random_input({1, 3, 5}, 81)});
}

TEST_CASE("fftconv: float32 backward on a long sequence matches float64", "[ops][fft]") {
    Tensor u = random_input({2, 8, 300}, 90), k = random_input({8, 300}, 91);
    Tensor D = random_input({8}, 92), g = random_input({2, 8, 300}, 93);
    std::vector<Tensor> leaves64{u, k, D}, leaves32;
    for (Tensor& t : leaves64) {
        leaves32.push_back(t.to(DType::float32).requires_grad_());
        t.requires_grad_();
    }
    fftconv(leaves64[0], leaves64[1], leaves64[2]).backward(g);
    fftconv(leaves32[0], leaves32[1], leaves32[2]).backward(g.to(DType::float32));
    for (size_t i = 0; i < 3; ++i)
        require_close(leaves32[i].grad(), leaves64[i].grad().to_vector<double>(), 1e-3, 1e-3);
}

TEST_CASE("rfft, irfft, fftconv: errors name the op and the values", "[ops][fft]") {
    require_error([] { rfft(arange(0, 4)); }, {"[rfft]", "int64"});
    require_error([] { rfft(zeros({3, 4}), 0); }, {"[rfft]", "n >= 1"});
    require_error([] { rfft(zeros({3, 4}), std::nullopt, 2); }, {"[rfft]", "dim 2"});
    require_error([] { rfft(zeros({4}), std::nullopt, -1, "half"); }, {"[rfft]", "unknown norm"});
    require_error([] { irfft(zeros({3, 4})); }, {"[irfft]", "(..., 2)", "[3, 4]"});
    require_error([] { irfft(zeros({1, 2})); }, {"[irfft]", "n >= 1"});
    require_error([] { irfft(zeros({3, 4, 2}), std::nullopt, 2); }, {"[irfft]", "dim 2"});
    Tensor u = zeros({2, 3, 5});
    require_error([&] { fftconv(u, zeros({3, 4})); }, {"[fftconv]", "k must be", "[3, 4]"});
    require_error([&] { fftconv(u, zeros({2, 3, 5})); }, {"[fftconv]", "[2, 3, 5]"});
    require_error([&] { fftconv(u, zeros({3, 5}), zeros({2})); }, {"[fftconv]", "D must be (3)"});
    require_error(
        [&] {
            fftconv(u, zeros({3, 5}, DType::float64));
        },
        {"[fftconv]", "k has dtype float64"});
    require_error([&] { fftconv(zeros({5}), zeros({3, 5})); }, {"[fftconv]", "(..., H, L)"});
}
