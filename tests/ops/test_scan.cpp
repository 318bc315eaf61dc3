// selective_scan: forward against a naive sequential float64 reference (with and without D,
// z, delta_bias, softplus; B/C plain and grouped), float64 gradients of every input against
// finite differences, float32 against float64, non-contiguous inputs, errors.
#include <cmath>
#include <vector>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

struct ScanCase {
    Tensor u, delta, A, Bm, Cm, D, z, bias;
    bool softplus = false;
};

// Shapes: u, delta, z (B, Dc, L); A (Dc, N); Bm, Cm (B, N, L) or (B, G, N, L).
ScanCase make_case(int64_t batch, int64_t channels, int64_t length, int64_t state, int64_t groups,
                   bool with_d, bool with_z, bool with_bias, bool softplus, uint64_t seed) {
    ScanCase c;
    c.u = random_input({batch, channels, length}, seed);
    // Without softplus keep delta positive-ish and small, as a step size is.
    c.delta = softplus ? random_input({batch, channels, length}, seed + 1)
                       : random_input({batch, channels, length}, seed + 1, 0.05, 0.6);
    c.A = random_input({channels, state}, seed + 2, -1.5, -0.1);
    Shape bc = groups == 0 ? Shape{batch, state, length} : Shape{batch, groups, state, length};
    c.Bm = random_input(bc, seed + 3);
    c.Cm = random_input(bc, seed + 4);
    if (with_d) c.D = random_input({channels}, seed + 5);
    if (with_z) c.z = random_input({batch, channels, length}, seed + 6, -2, 2);
    if (with_bias) c.bias = random_input({channels}, seed + 7, -0.5, 0.5);
    c.softplus = softplus;
    return c;
}

Tensor run(const ScanCase& c) {
    return selective_scan(c.u, c.delta, c.A, c.Bm, c.Cm, c.D, c.z, c.bias, c.softplus);
}

// The recurrence exactly as in mamba's selective_scan_ref, one step at a time, in double.
std::vector<double> reference(const ScanCase& c) {
    int64_t batch = c.u.size(0), channels = c.u.size(1), length = c.u.size(2);
    int64_t state = c.A.size(1), groups = c.Bm.ndim() == 4 ? c.Bm.size(1) : 1;
    auto u = c.u.to_vector<double>(), delta = c.delta.to_vector<double>();
    auto a = c.A.to_vector<double>(), bm = c.Bm.to_vector<double>(), cm = c.Cm.to_vector<double>();
    std::vector<double> out(size_t(batch * channels * length));
    for (int64_t b = 0; b < batch; ++b) {
        for (int64_t d = 0; d < channels; ++d) {
            int64_t g = d / (channels / groups);
            std::vector<double> h(size_t(state), 0.0);
            for (int64_t t = 0; t < length; ++t) {
                int64_t i = (b * channels + d) * length + t;
                double dt = delta[size_t(i)] + (c.bias.defined() ? read_element(c.bias, d) : 0.0);
                if (c.softplus) dt = std::log1p(std::exp(dt));
                double y = 0;
                for (int64_t n = 0; n < state; ++n) {
                    size_t bc = size_t(((b * groups + g) * state + n) * length + t);
                    h[size_t(n)] = std::exp(dt * a[size_t(d * state + n)]) * h[size_t(n)] +
                                   dt * bm[bc] * u[size_t(i)];
                    y += h[size_t(n)] * cm[bc];
                }
                if (c.D.defined()) y += read_element(c.D, d) * u[size_t(i)];
                if (c.z.defined()) {
                    double z = read_element(c.z, i);
                    y *= z / (1 + std::exp(-z));
                }
                out[size_t(i)] = y;
            }
        }
    }
    return out;
}

}  // namespace

TEST_CASE("selective_scan: matches a sequential reference for every option", "[ops][scan]") {
    int64_t seed = 100;
    for (int64_t groups : {0, 1, 3}) {
        for (int options = 0; options < 16; ++options) {
            int64_t state = options % 2 ? 5 : 8;  // generic and compile-time state loops
            bool with_d = options & 1, with_z = options & 2, with_bias = options & 4,
                 softplus = options & 8;
            INFO("groups " << groups << " D " << with_d << " z " << with_z << " bias " << with_bias
                           << " softplus " << softplus);
            ScanCase c = make_case(2, 6, 11, state, groups, with_d, with_z, with_bias, softplus,
                                   uint64_t(seed += 10));
            std::vector<double> want = reference(c);
            require_close(run(c), want, 1e-12, 1e-13);
            ScanCase f = c;
            for (Tensor* t : {&f.u, &f.delta, &f.A, &f.Bm, &f.Cm, &f.D, &f.z, &f.bias})
                if (t->defined()) *t = t->to(DType::float32);
            Tensor y32 = run(f);
            CHECK(y32.dtype() == DType::float32);
            require_close(y32, want, 1e-4, 1e-5);
        }
    }
}

TEST_CASE("selective_scan: hand-computed single state", "[ops][scan]") {
    // N = 1, A = -ln 2, dt = 1: h_t = h_{t-1} / 2 + B_t u_t; y = C_t h_t + D u_t.
    Tensor u = tensor({1, 2, 4}, {1, 1, 3}, DType::float64);
    Tensor delta = ones({1, 1, 3}, DType::float64);
    Tensor A = tensor({-std::log(2.0)}, {1, 1}, DType::float64);
    Tensor Bm = tensor({1, 1, 1}, {1, 1, 3}, DType::float64);
    Tensor Cm = tensor({1, 2, 3}, {1, 1, 3}, DType::float64);
    Tensor D = tensor({0.5}, {1}, DType::float64);
    // h = 1, 2.5, 5.25 -> y = 1 + 0.5, 5 + 1, 15.75 + 2
    require_close(selective_scan(u, delta, A, Bm, Cm, D), {1.5, 6.0, 17.75}, 1e-14);
}

TEST_CASE("selective_scan: long sequences and many channels stay close to the reference",
          "[ops][scan]") {
    // Enough rows for several threads and partitions in backward.
    ScanCase c = make_case(2, 16, 300, 16, 0, true, true, true, true, 200);
    require_close(run(c), reference(c), 1e-11, 1e-12);
}

TEST_CASE("selective_scan: gradients of every input match finite differences",
          "[ops][scan][gradcheck]") {
    int64_t seed = 300;
    // N = 3 runs the generic state loops, N = 4 the ones specialized at compile time.
    for (auto [groups, state] : {std::pair{0, 3}, std::pair{3, 3}, std::pair{0, 4}}) {
        for (int options : {0, 15, 5, 10}) {
            bool with_d = options & 1, with_z = options & 2, with_bias = options & 4,
                 softplus = options & 8;
            INFO("groups " << groups << " N " << state << " options " << options);
            ScanCase c = make_case(2, 3, 7, state, groups, with_d, with_z, with_bias, softplus,
                                   uint64_t(seed += 10));
            std::vector<Tensor> inputs{c.u, c.delta, c.A, c.Bm, c.Cm};
            for (const Tensor& t : {c.D, c.z, c.bias})
                if (t.defined()) inputs.push_back(t);
            gradcheck(
                [&](const std::vector<Tensor>& in) {
                    size_t next = 5;
                    Tensor D = with_d ? in[next++] : Tensor();
                    Tensor z = with_z ? in[next++] : Tensor();
                    Tensor bias = with_bias ? in[next++] : Tensor();
                    return selective_scan(in[0], in[1], in[2], in[3], in[4], D, z, bias, softplus);
                },
                inputs);
        }
    }
}

TEST_CASE("selective_scan: non-contiguous inputs give the same values and gradients",
          "[ops][scan][gradcheck]") {
    ScanCase c = make_case(2, 3, 5, 3, 0, true, true, true, true, 400);
    std::vector<double> want = reference(c);
    ScanCase n = c;
    n.u = noncontiguous(c.u);
    n.Bm = noncontiguous(c.Bm);
    n.z = noncontiguous(c.z);
    n.A = noncontiguous(c.A);
    require_close(run(n), want, 1e-12, 1e-13);
    gradcheck(
        [&](const std::vector<Tensor>& in) {
            return selective_scan(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], true);
        },
        {n.u, n.delta, n.A, n.Bm, n.Cm, n.D, n.z, n.bias});
}

TEST_CASE("selective_scan: float32 backward matches float64", "[ops][scan]") {
    ScanCase c = make_case(2, 8, 64, 16, 2, true, true, true, true, 500);
    std::vector<Tensor> leaves64{c.u, c.delta, c.A, c.Bm, c.Cm, c.D, c.z, c.bias};
    std::vector<Tensor> leaves32;
    for (Tensor& t : leaves64) {
        leaves32.push_back(t.to(DType::float32).requires_grad_());
        t.requires_grad_();
    }
    Tensor g = random_input({2, 8, 64}, 501);
    auto call = [](const std::vector<Tensor>& in) {
        return selective_scan(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], true);
    };
    call(leaves64).backward(g);
    call(leaves32).backward(g.to(DType::float32));
    for (size_t i = 0; i < leaves64.size(); ++i) {
        INFO("input " << i);
        require_close(leaves32[i].grad(), leaves64[i].grad().to_vector<double>(), 1e-3, 1e-4);
    }
}

TEST_CASE("selective_scan: zero-length sequences", "[ops][scan]") {
    ScanCase c = make_case(2, 3, 0, 4, 0, true, false, false, false, 600);
    CHECK(run(c).shape() == Shape{2, 3, 0});
}

TEST_CASE("selective_scan: errors name the op and the shapes", "[ops][scan]") {
    ScanCase c = make_case(2, 4, 5, 3, 0, false, false, false, false, 700);
    require_error([&] { selective_scan(c.u.select(0, 0), c.delta, c.A, c.Bm, c.Cm); },
                  {"[selective_scan]", "u must be (B, D, L)", "[4, 5]"});
    require_error([&] { selective_scan(c.u, c.delta.narrow(2, 0, 4), c.A, c.Bm, c.Cm); },
                  {"[selective_scan]", "delta has shape [2, 4, 4]"});
    require_error([&] { selective_scan(c.u, c.delta, c.A.narrow(0, 0, 3), c.Bm, c.Cm); },
                  {"[selective_scan]", "A must be (D, N)", "[3, 3]"});
    require_error([&] { selective_scan(c.u, c.delta, c.A, c.Bm.narrow(1, 0, 2), c.Cm); },
                  {"[selective_scan]", "Bm has shape [2, 2, 5]"});
    require_error(
        [&] {
            selective_scan(c.u, c.delta, c.A, c.Bm.reshape({2, 1, 3, 5}).expand({2, 3, 3, 5}),
                           c.Cm);
        },
        {"[selective_scan]", "3 groups", "4 channels"});
    require_error([&] { selective_scan(c.u, c.delta, c.A, c.Bm, c.Cm, ones({5}, DType::float64)); },
                  {"[selective_scan]", "D must be (4)", "[5]"});
    require_error([&] { selective_scan(c.u, c.delta, c.A.to(DType::float32), c.Bm, c.Cm); },
                  {"[selective_scan]", "A has dtype float32"});
    require_error([&] { selective_scan(c.u.to(DType::int64), c.delta, c.A, c.Bm, c.Cm); },
                  {"[selective_scan]", "int64"});
}
