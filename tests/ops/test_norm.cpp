// Normalization ops: forward values against a naive float64 reference (statistics grouped by
// index), float64 gradient checks (odd shapes, batch > 1, non-contiguous inputs, with and
// without affine), large shapes (parallel kernel paths) against composites of lumen ops,
// running-statistic updates, and the error messages.
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "conformance/check_vectors.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// Coordinate of row-major element `index` along dim d of `shape`.
int64_t coord(const Shape& shape, int64_t index, int64_t d) {
    for (int64_t k = int64_t(shape.size()) - 1; k > d; --k) index /= shape[size_t(k)];
    return index % shape[size_t(d)];
}

// (x - mean) / sqrt(var + eps) * w[chan] + b[chan] with mean/biased var over the elements of
// equal stat(index); !center: x / sqrt(mean(x^2) + eps) * w.
std::vector<double> reference(const Tensor& x, const std::function<int64_t(int64_t)>& stat,
                              const std::function<int64_t(int64_t)>& chan, const Tensor& w,
                              const Tensor& b, double eps, bool center = true) {
    std::vector<double> v = x.to_vector<double>();
    std::vector<double> wv = w.defined() ? w.to_vector<double>() : std::vector<double>();
    std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>();
    std::map<int64_t, double> sum, sq, count;
    for (size_t i = 0; i < v.size(); ++i) {
        sum[stat(int64_t(i))] += v[i];
        count[stat(int64_t(i))] += 1;
    }
    for (size_t i = 0; i < v.size(); ++i) {
        int64_t s = stat(int64_t(i));
        double m = center ? sum[s] / count[s] : 0.0;
        sq[s] += (v[i] - m) * (v[i] - m);
    }
    std::vector<double> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        int64_t s = stat(int64_t(i)), c = chan(int64_t(i));
        double m = center ? sum[s] / count[s] : 0.0;
        double y = (v[i] - m) / std::sqrt(sq[s] / count[s] + eps);
        if (w.defined()) y *= wv[size_t(c)];
        if (b.defined()) y += bv[size_t(c)];
        out[i] = y;
    }
    return out;
}

std::function<int64_t(int64_t)> trailing(int64_t size) {
    return [size](int64_t i) { return i / size; };
}

GradcheckOptions loose() {
    GradcheckOptions o;
    o.rtol = 1e-4;
    o.atol = 1e-6;
    return o;
}

}  // namespace

TEST_CASE("layer_norm: values match a naive reference", "[ops][norm]") {
    Tensor x = random_input({2, 7, 5}, 1, -2, 3);
    Tensor w = random_input({5}, 2), b = random_input({5}, 3);
    auto chan = [](int64_t i) { return i % 5; };
    require_close(layer_norm(x, {5}, w, b), reference(x, trailing(5), chan, w, b, 1e-5), 1e-10);
    require_close(layer_norm(x, {5}), reference(x, trailing(5), chan, {}, {}, 1e-5), 1e-10);
    require_close(layer_norm(x, {5}, w, {}, 0.1), reference(x, trailing(5), chan, w, {}, 0.1),
                  1e-10);
    // two normalized dims, a non-contiguous input, float32
    Tensor x2 = random_input({3, 4, 6}, 4);
    Tensor w2 = random_input({4, 6}, 5), b2 = random_input({4, 6}, 6);
    auto want = reference(
        x2, trailing(24), [](int64_t i) { return i % 24; }, w2, b2, 1e-5);
    require_close(layer_norm(x2, {4, 6}, w2, b2), want, 1e-10);
    require_close(layer_norm(noncontiguous(x2), {4, 6}, w2, b2),
                  layer_norm(noncontiguous(x2).contiguous(), {4, 6}, w2, b2).to_vector<double>(),
                  1e-12);
    require_close(
        layer_norm(x2.to(DType::float32), {4, 6}, w2.to(DType::float32), b2.to(DType::float32)),
        want, 1e-4, 1e-5);
}

TEST_CASE("layer_norm and rms_norm: gradients", "[ops][norm]") {
    Tensor w = random_input({5}, 2), b = random_input({5}, 3);
    gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}, in[1], in[2]); },
              {random_input({3, 5}, 1), w, b}, loose());
    gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {7}); },
              {random_input({2, 3, 7}, 4)}, loose());
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return layer_norm(in[0], {5, 3}, in[1], {});
        },
        {noncontiguous(random_input({2, 5, 3}, 5)), random_input({5, 3}, 6)}, loose());
    gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}, {}, in[1]); },
              {random_input({4, 5}, 7), b}, loose());
    gradcheck([](const std::vector<Tensor>& in) { return rms_norm(in[0], {5}, in[1], 1e-6); },
              {random_input({3, 5}, 8), w}, loose());
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return rms_norm(in[0], {5, 3});
        },
        {noncontiguous(random_input({2, 5, 3}, 9))}, loose());
}

TEST_CASE("rms_norm: values match a naive reference", "[ops][norm]") {
    Tensor x = random_input({3, 4, 6}, 1);
    Tensor w = random_input({6}, 2);
    require_close(rms_norm(x, {6}, w, 1e-6),
                  reference(
                      x, trailing(6), [](int64_t i) { return i % 6; }, w, {}, 1e-6, false),
                  1e-10);
    require_close(rms_norm(x, {4, 6}),
                  reference(
                      x, trailing(24), [](int64_t i) { return i % 24; }, {}, {}, 1e-6, false),
                  1e-10);
}

TEST_CASE("group_norm and instance_norm: values and gradients", "[ops][norm]") {
    Shape shape{2, 6, 7, 3};
    Tensor x = random_input(shape, 1, -1, 2);
    Tensor w = random_input({6}, 2), b = random_input({6}, 3);
    auto chan = [&](int64_t i) { return coord(shape, i, 1); };
    auto group3 = [&](int64_t i) { return coord(shape, i, 0) * 3 + coord(shape, i, 1) / 2; };
    require_close(group_norm(x, 3, w, b), reference(x, group3, chan, w, b, 1e-5), 1e-10);
    require_close(group_norm(x, 1), reference(x, trailing(6 * 21), chan, {}, {}, 1e-5), 1e-10);
    // (N, C) input: groups of channels with no spatial dims
    Tensor x2 = random_input({4, 6}, 4);
    require_close(group_norm(x2, 2, w, b),
                  reference(
                      x2, trailing(3), [](int64_t i) { return i % 6; }, w, b, 1e-5),
                  1e-10);
    auto instance = [&](int64_t i) { return i / 21; };
    require_close(instance_norm(x, {}, {}, w, b), reference(x, instance, chan, w, b, 1e-5), 1e-10);
    require_close(group_norm(x, 6, w, b), instance_norm(x, {}, {}, w, b).to_vector<double>(),
                  1e-12);

    gradcheck([](const std::vector<Tensor>& in) { return group_norm(in[0], 3, in[1], in[2]); },
              {random_input({2, 6, 3, 2}, 5), w, b}, loose());
    gradcheck([](const std::vector<Tensor>& in) { return group_norm(in[0], 2, in[1], in[2]); },
              {random_input({3, 4}, 6), random_input({4}, 7), random_input({4}, 8)}, loose());
    gradcheck([](const std::vector<Tensor>& in) { return group_norm(in[0], 1); },
              {noncontiguous(random_input({2, 3, 3, 5}, 9))}, loose());
    gradcheck(
        [](const std::vector<Tensor>& in) { return instance_norm(in[0], {}, {}, in[1], in[2]); },
        {random_input({2, 3, 5}, 10), random_input({3}, 11), random_input({3}, 12)}, loose());
    gradcheck([](const std::vector<Tensor>& in) { return instance_norm(in[0]); },
              {noncontiguous(random_input({2, 2, 3, 4}, 13))}, loose());
}

TEST_CASE("instance_norm: running statistics", "[ops][norm]") {
    Shape shape{3, 2, 5};
    Tensor x = random_input(shape, 1, -1, 3);
    std::vector<double> v = x.to_vector<double>();
    Tensor rm = tensor({0.5, -1.0}, {2}, DType::float64),
           rv = tensor({2.0, 0.5}, {2}, DType::float64);
    Tensor y = instance_norm(x, rm, rv, {}, {}, true, 0.2);
    for (int64_t c = 0; c < 2; ++c) {
        double mean_sum = 0, var_sum = 0;
        for (int64_t n = 0; n < 3; ++n) {
            double m = 0, q = 0;
            for (int64_t s = 0; s < 5; ++s) m += v[size_t((n * 2 + c) * 5 + s)] / 5;
            for (int64_t s = 0; s < 5; ++s) {
                double d = v[size_t((n * 2 + c) * 5 + s)] - m;
                q += d * d / 4;  // unbiased
            }
            mean_sum += m;
            var_sum += q;
        }
        double old_m = c == 0 ? 0.5 : -1.0, old_v = c == 0 ? 2.0 : 0.5;
        CHECK(rm.to_vector<double>()[size_t(c)] ==
              Approx(0.8 * old_m + 0.2 * mean_sum / 3).epsilon(1e-12));
        CHECK(rv.to_vector<double>()[size_t(c)] ==
              Approx(0.8 * old_v + 0.2 * var_sum / 3).epsilon(1e-12));
    }
    // use_input_stats = false normalizes with the running statistics
    Tensor w = random_input({2}, 2), b = random_input({2}, 3);
    std::vector<double> m = rm.to_vector<double>(), q = rv.to_vector<double>();
    std::vector<double> wv = w.to_vector<double>(), bv = b.to_vector<double>(), want(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        size_t c = size_t(coord(shape, int64_t(i), 1));
        want[i] = (v[i] - m[c]) / std::sqrt(q[c] + 1e-5) * wv[c] + bv[c];
    }
    require_close(instance_norm(x, rm, rv, w, b, false), want, 1e-10);
    gradcheck(
        [rm, rv](const std::vector<Tensor>& in) {
            return instance_norm(in[0], rm, rv, in[1], in[2], false);
        },
        {x, w, b}, loose());
}

TEST_CASE("batch_norm: training statistics, running updates, evaluation", "[ops][norm]") {
    for (Shape shape : {Shape{6, 3}, Shape{4, 3, 5}, Shape{2, 3, 4, 3}, Shape{2, 3, 2, 3, 2}}) {
        INFO("shape " << text(shape));
        Tensor x = random_input(shape, 1, -1, 2);
        Tensor w = random_input({3}, 2), b = random_input({3}, 3);
        auto chan = [&](int64_t i) { return coord(shape, i, 1); };
        Tensor rm = zeros({3}, DType::float64), rv = ones({3}, DType::float64);
        Tensor y = batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5);
        require_close(y, reference(x, chan, chan, w, b, 1e-5), 1e-10);
        // running stats: momentum 0.1 toward the batch mean and unbiased variance
        Dims reduce_dims{0};
        for (int64_t d = 2; d < int64_t(shape.size()); ++d) reduce_dims.push_back(d);
        require_close(rm, mul(lumen::mean(x, reduce_dims), 0.1).to_vector<double>(), 1e-10);
        require_close(rv, add(mul(var(x, reduce_dims, 1.0), 0.1), 0.9).to_vector<double>(), 1e-10);
        // evaluation uses the running stats
        std::vector<double> v = x.to_vector<double>(), m = rm.to_vector<double>(),
                            q = rv.to_vector<double>(), wv = w.to_vector<double>(),
                            bv = b.to_vector<double>(), want(v.size());
        for (size_t i = 0; i < v.size(); ++i) {
            size_t c = size_t(chan(int64_t(i)));
            want[i] = (v[i] - m[c]) / std::sqrt(q[c] + 1e-5) * wv[c] + bv[c];
        }
        require_close(batch_norm(x, rm, rv, w, b, false), want, 1e-10);
        // training without running stats, non-contiguous input
        require_close(batch_norm(noncontiguous(x), {}, {}, w, b, true),
                      reference(x, chan, chan, w, b, 1e-5), 1e-10);
    }
}

TEST_CASE("batch_norm: gradients in training and evaluation", "[ops][norm]") {
    Tensor w = random_input({3}, 2), b = random_input({3}, 3);
    for (Shape shape : {Shape{5, 3}, Shape{2, 3, 5}, Shape{2, 3, 2, 3}}) {
        INFO("shape " << text(shape));
        gradcheck(
            [](const std::vector<Tensor>& in) {
                return batch_norm(in[0], {}, {}, in[1], in[2], true);
            },
            {random_input(shape, 4), w, b}, loose());
        Tensor rm = random_input({3}, 5), rv = random_input({3}, 6, 0.5, 2.0);
        gradcheck(
            [rm, rv](const std::vector<Tensor>& in) {
                return batch_norm(in[0], rm, rv, in[1], in[2], false);
            },
            {random_input(shape, 7), w, b}, loose());
    }
    gradcheck([](const std::vector<Tensor>& in) { return batch_norm(in[0], {}, {}, {}, {}, true); },
              {noncontiguous(random_input({2, 3, 4, 3}, 8))}, loose());
}

TEST_CASE("batch_norm: float32 training backward of nearly constant statistics", "[ops][norm]") {
    // Two values per statistic a few sqrt(eps) apart (var / eps ~ 10-100, as a 1 x 1 pooled map
    // of a batch of 2 gives): dx is the small remainder eps / (var + eps) of two nearly equal
    // terms, and dx summed over a statistic is 0. float32 must stay near the float64 result
    // (UPerNet's trainbn vector failed at a few 1e-4 relative before the double accumulation).
    for (Shape shape : {Shape{2, 6}, Shape{2, 6, 1, 1}, Shape{1, 6, 2}}) {
        INFO("shape " << text(shape));
        Tensor x64 = add(mul(random_input(shape, 11), 0.03), 0.4).to(DType::float32);
        x64 = x64.to(DType::float64).detach();
        Tensor g64 = random_input(shape, 12).to(DType::float32).to(DType::float64).detach();
        Tensor w64 = random_input({6}, 13).to(DType::float32).to(DType::float64).detach();
        std::vector<std::vector<double>> dx;
        for (DType dt : {DType::float64, DType::float32}) {
            Tensor x = x64.to(dt).detach().requires_grad_(true);
            sum(mul(batch_norm(x, {}, {}, w64.to(dt), {}, true), g64.to(dt))).backward();
            dx.push_back(x.grad().to_vector<double>());
        }
        double scale = 0;
        for (double v : dx[0]) scale = std::max(scale, std::abs(v));
        for (size_t i = 0; i < dx[0].size(); ++i)
            CHECK(std::abs(dx[1][i] - dx[0][i]) <= 2e-5 * scale);
        Dims over{0};
        if (shape.size() > 2) over.push_back(2);
        Tensor x32 = x64.to(DType::float32).detach().requires_grad_(true);
        Tensor w32 = w64.to(DType::float32), g32 = g64.to(DType::float32);
        sum(mul(batch_norm(x32, {}, {}, w32, {}, true), g32)).backward();
        for (double v : lumen::sum(x32.grad().to(DType::float64), over).to_vector<double>())
            CHECK(std::abs(v) <= 1e-6 * scale);
    }
}

TEST_CASE("seq_norm: statistics over the token axis", "[ops][norm]") {
    Shape shape{2, 7, 5};
    Tensor x = random_input(shape, 1, -1, 2);
    Tensor w = random_input({5}, 2), b = random_input({5}, 3);
    auto stat = [&](int64_t i) { return coord(shape, i, 0) * 5 + coord(shape, i, 2); };
    auto chan = [&](int64_t i) { return coord(shape, i, 2); };
    require_close(seq_norm(x, w, b), reference(x, stat, chan, w, b, 1e-5), 1e-10);
    require_close(seq_norm(noncontiguous(x)), reference(x, stat, chan, {}, {}, 1e-5), 1e-10);
    gradcheck([](const std::vector<Tensor>& in) { return seq_norm(in[0], in[1], in[2]); },
              {random_input({2, 5, 3}, 4), random_input({3}, 5), random_input({3}, 6)}, loose());
    gradcheck([](const std::vector<Tensor>& in) { return seq_norm(in[0]); },
              {noncontiguous(random_input({3, 4, 4}, 7))}, loose());
}

TEST_CASE("normalization: large shapes match composites of lumen ops", "[ops][norm]") {
    // Sizes above the parallel grain, so the threaded kernels and chunked affine sums run.
    Tensor x = random_input({600, 130}, 1, -2, 2), g = random_input({600, 130}, 2);
    Tensor w = random_input({130}, 3), b = random_input({130}, 4);
    auto check = [&](const Tensor& xin, const Tensor& gout,
                     const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& fast,
                     const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& slow,
                     const Tensor& wp, const Tensor& bp) {
        std::vector<Tensor> got, want;
        for (int pass = 0; pass < 2; ++pass) {
            Tensor xi = xin.detach().clone().requires_grad_(),
                   wi = wp.detach().clone().requires_grad_(),
                   bi = bp.detach().clone().requires_grad_();
            Tensor y = pass == 0 ? fast(xi, wi, bi) : slow(xi, wi, bi);
            sum(mul(y, gout)).backward();
            auto& out = pass == 0 ? got : want;
            out = {y, xi.grad(), wi.grad(), bi.grad()};
        }
        for (size_t i = 0; i < got.size(); ++i)
            require_close(got[i], want[i].to_vector<double>(), 1e-8, 1e-10);
    };
    check(
        x, g,
        [](const Tensor& a, const Tensor& wi, const Tensor& bi) {
            return layer_norm(a, {130}, wi, bi);
        },
        [](const Tensor& a, const Tensor& wi, const Tensor& bi) {
            Tensor c = sub(a, lumen::mean(a, {1}, true));
            return add(mul(mul(c, rsqrt(add(var(a, {1}, 0.0, true), 1e-5))), wi), bi);
        },
        w, b);
    Tensor x4 = random_input({8, 6, 40, 41}, 5), g4 = random_input({8, 6, 40, 41}, 6);
    Tensor w6 = random_input({6}, 7), b6 = random_input({6}, 8);
    check(
        x4, g4,
        [](const Tensor& a, const Tensor& wi, const Tensor& bi) {
            return batch_norm(a, {}, {}, wi, bi, true);
        },
        [](const Tensor& a, const Tensor& wi, const Tensor& bi) {
            Tensor c = sub(a, lumen::mean(a, {0, 2, 3}, true));
            Tensor k = rsqrt(add(var(a, {0, 2, 3}, 0.0, true), 1e-5));
            return add(mul(mul(c, k), wi.view({6, 1, 1})), bi.view({6, 1, 1}));
        },
        w6, b6);
    check(
        x4, g4,
        [](const Tensor& a, const Tensor& wi, const Tensor& bi) {
            return group_norm(a, 3, wi, bi);
        },
        [](const Tensor& a, const Tensor& wi, const Tensor& bi) {
            Tensor r = a.reshape({8, 3, 2 * 40 * 41});
            Tensor c = sub(r, lumen::mean(r, {2}, true));
            Tensor n = mul(c, rsqrt(add(var(r, {2}, 0.0, true), 1e-5))).reshape({8, 6, 40, 41});
            return add(mul(n, wi.view({6, 1, 1})), bi.view({6, 1, 1}));
        },
        w6, b6);
    Tensor x3 = random_input({3, 200, 70}, 9), g3 = random_input({3, 200, 70}, 10);
    Tensor w70 = random_input({70}, 11), b70 = random_input({70}, 12);
    check(
        x3, g3,
        [](const Tensor& a, const Tensor& wi, const Tensor& bi) { return seq_norm(a, wi, bi); },
        [](const Tensor& a, const Tensor& wi, const Tensor& bi) {
            Tensor c = sub(a, lumen::mean(a, {1}, true));
            return add(mul(mul(c, rsqrt(add(var(a, {1}, 0.0, true), 1e-5))), wi), bi);
        },
        w70, b70);
}

TEST_CASE("normalize: values, clamping and gradients", "[ops][norm]") {
    Tensor x = tensor({3, 4, 0, -1, 1, 0}, {2, 3}, DType::float64);
    require_close(normalize(x, 2.0, 1), {0.6, 0.8, 0, -1 / std::sqrt(2.0), 1 / std::sqrt(2.0), 0});
    require_close(normalize(x, 1.0, 1), {3.0 / 7, 4.0 / 7, 0, -0.5, 0.5, 0});
    require_close(normalize(x, 2.0, 0), {3 / std::sqrt(10.0), 4 / std::sqrt(17.0), 0,
                                         -1 / std::sqrt(10.0), 1 / std::sqrt(17.0), 0});
    // a zero vector stays zero; its gradient is g / eps (the clamped norm is a constant)
    Tensor z = zeros({1, 3}, DType::float64).requires_grad_();
    Tensor y = normalize(z, 2.0, 1, 0.5);
    require_close(y, {0, 0, 0});
    sum(mul(y, tensor({1, 2, 3}, {1, 3}, DType::float64))).backward();
    require_close(z.grad(), {2, 4, 6});
    for (double p : {1.0, 2.0, 3.0}) {
        INFO("p " << p);
        gradcheck([p](const std::vector<Tensor>& in) { return normalize(in[0], p, 1); },
                  {random_input({3, 4}, 1)}, loose());
        gradcheck([p](const std::vector<Tensor>& in) { return normalize(in[0], p, 1); },
                  {random_input({2, 5, 3}, 2)}, loose());
        gradcheck([p](const std::vector<Tensor>& in) { return normalize(in[0], p, -1); },
                  {noncontiguous(random_input({3, 4}, 3))}, loose());
    }
    // float32 and a large shape (parallel runs) against the composite
    Tensor big = random_input({64, 300, 5}, 4);
    require_close(normalize(big, 2.0, 1),
                  div(big, sqrt(sum(mul(big, big), {1}, true))).to_vector<double>(), 1e-10);
    require_close(normalize(big.to(DType::float32), 1.0, 2),
                  div(big, sum(abs(big), {2}, true)).to_vector<double>(), 1e-5, 1e-6);
}

TEST_CASE("normalization: errors", "[ops][norm]") {
    Tensor x = random_input({2, 6, 3});
    require_error([&] { layer_norm(x, {4}); },
                  {"[layer_norm]", "normalized_shape=[4]", "[2, 6, 3]"});
    require_error([&] { layer_norm(x, {}); }, {"[layer_norm]", "at least 1-dimensional"});
    require_error([&] { layer_norm(x, {3}, random_input({4})); },
                  {"[layer_norm]", "weight", "[4]"});
    require_error([&] { layer_norm(x.to(DType::int64), {3}); }, {"[layer_norm]", "int64"});
    require_error([&] { rms_norm(x, {6, 4}); }, {"[rms_norm]", "normalized_shape"});
    require_error([&] { group_norm(x, 4); },
                  {"[group_norm]", "divisible by num_groups", "num_groups=4"});
    require_error([&] { group_norm(x, 3, random_input({3})); }, {"[group_norm]", "weight", "[3]"});
    require_error([&] { group_norm(x, 0); }, {"[group_norm]", "positive"});
    require_error([&] { instance_norm(random_input({2, 6})); }, {"[instance_norm]", "spatial"});
    require_error(
        [&] {
            instance_norm(random_input({2, 6, 1}));
        },
        {"[instance_norm]", "Expected more than 1 spatial element"});
    require_error([&] { instance_norm(x, {}, {}, {}, {}, false); },
                  {"[instance_norm]", "running_mean"});
    require_error(
        [&] {
            batch_norm(random_input({1, 3}), {}, {}, {}, {}, true);
        },
        {"[batch_norm]", "Expected more than 1 value per channel when training", "[1, 3]"});
    require_error(
        [&] {
            batch_norm(random_input({1, 3, 1, 1}), {}, {}, {}, {}, true);
        },
        {"[batch_norm]", "Expected more than 1 value per channel"});
    require_error([&] { batch_norm(x, {}, {}); }, {"[batch_norm]", "evaluation"});
    require_error([&] { batch_norm(x, zeros({4}, DType::float64), ones({4}, DType::float64)); },
                  {"[batch_norm]", "running_mean", "[4]"});
    require_error([&] { batch_norm(random_input({6}), {}, {}, {}, {}, true); },
                  {"[batch_norm]", "[6]"});
    require_error([&] { seq_norm(random_input({2, 3})); }, {"[seq_norm]", "(B, N, D)"});
    require_error([&] { normalize(x, 0.5); }, {"[normalize]", "p must be"});
    require_error([&] { normalize(x, 2.0, 3); }, {"[normalize]"});
}

TEST_CASE("normalization: the PyTorch oracle vectors pass with their tolerances",
          "[ops][norm][oracle]") {
    require_oracle_vectors({"group_norm", "layer_norm", "normalize_l1"});
}

TEST_CASE("normalization: adapters read PyTorch's keyword arguments", "[ops][norm][oracle]") {
    // Vectors written here with naive-reference outputs (no PyTorch oracle file exists for these
    // modules): the adapters must accept PyTorch's kwarg names and defaults.
    TempDir dir("norm_adapters");
    Shape shape{4, 3, 5};
    Tensor x = random_input(shape, 1, -1, 2).to(DType::float32);
    Tensor w = random_input({3}, 2).to(DType::float32), b = random_input({3}, 3).to(DType::float32);
    auto chan = [&](int64_t i) { return coord(shape, i, 1); };
    auto as_tensor = [&](const std::vector<double>& v) {
        return from_vector<double>(v, shape).to(DType::float32);
    };
    struct Case {
        std::string module, config;
        std::map<std::string, Tensor> inputs;
        Tensor y;
    };
    Tensor rm = zeros({3}), rv = ones({3});
    std::vector<double> eval(size_t(x.numel()));
    for (size_t i = 0; i < eval.size(); ++i) {
        size_t c = size_t(chan(int64_t(i)));
        eval[i] = x.to_vector<double>()[i] / std::sqrt(1 + 1e-3) * w.to_vector<double>()[c] +
                  b.to_vector<double>()[c];
    }
    std::vector<double> slope, clipped;
    for (double v : x.to_vector<double>()) {
        slope.push_back(v > 0 ? v : 0.25 * v);
        clipped.push_back(std::min(std::max(v, -0.5), 0.5));
    }
    std::vector<Case> cases = {
        {"op.batch_norm",
         R"({"training": true, "momentum": 0.1, "eps": 1e-05})",
         {{"in.input", x}, {"in.weight", w}, {"in.bias", b}},
         as_tensor(reference(x, chan, chan, w, b, 1e-5))},
        {"op.batch_norm",
         R"({"training": false, "eps": 0.001})",
         {{"in.input", x},
          {"in.running_mean", rm},
          {"in.running_var", rv},
          {"in.weight", w},
          {"in.bias", b}},
         as_tensor(eval)},
        {"op.instance_norm",
         R"({"eps": 1e-05})",
         {{"in.input", x}, {"in.weight", w}, {"in.bias", b}},
         as_tensor(reference(x, trailing(5), chan, w, b, 1e-5))},
        {"op.rms_norm",
         R"({"normalized_shape": [5], "eps": 1e-06})",
         {{"in.input", x}},
         as_tensor(reference(x, trailing(5), chan, {}, {}, 1e-6, false))},
        {"op.leaky_relu", R"({"negative_slope": 0.25})", {{"in.input", x}}, as_tensor(slope)},
        {"op.hardtanh",
         R"({"min_val": -0.5, "max_val": 0.5})",
         {{"in.input", x}},
         as_tensor(clipped)},
    };
    for (size_t k = 0; k < cases.size(); ++k) {
        Case& c = cases[k];
        std::map<std::string, Tensor> tensors = c.inputs;
        tensors["out.y"] = c.y;
        std::string name = std::to_string(k);
        name += ".safetensors";
        std::string path = dir.file(name);
        save_safetensors(
            path, tensors,
            {{"module", c.module}, {"config", c.config}, {"rtol", "1e-4"}, {"atol", "1e-5"}});
        conformance::VectorResult result =
            conformance::check_vector_file(path, c.module, Device::cpu());
        INFO(conformance::format_result(result));
        CHECK(result.passed);
    }
}

TEST_CASE("channel norms of empty inputs: zero weight and bias gradients, no crash",
          "[ops][norm]") {
    // seq_norm over an empty batch or an empty sequence (no statistics, or statistics of
    // nothing), and batch_norm in eval on an empty batch of a 2-D input (no rows).
    for (const Shape& shape : {Shape{0, 4, 5}, Shape{2, 0, 5}}) {
        INFO("seq_norm " << text(shape));
        Tensor x = zeros(shape, DType::float64).requires_grad_();
        Tensor w = ones({5}, DType::float64).requires_grad_();
        Tensor b = zeros({5}, DType::float64).requires_grad_();
        Tensor y = seq_norm(x, w, b);
        CHECK(text(y.shape()) == text(shape));
        y.backward(zeros(shape, DType::float64));
        require_close(w.grad(), zeros({5}, DType::float64), 0, 0);
        require_close(b.grad(), zeros({5}, DType::float64), 0, 0);
        CHECK(text(x.grad().shape()) == text(shape));
    }
    Tensor x = zeros({0, 3}, DType::float64).requires_grad_();
    Tensor w = ones({3}, DType::float64).requires_grad_();
    Tensor b = zeros({3}, DType::float64).requires_grad_();
    Tensor y = batch_norm(x, zeros({3}, DType::float64), ones({3}, DType::float64), w, b);
    y.backward(zeros({0, 3}, DType::float64));
    require_close(w.grad(), zeros({3}, DType::float64), 0, 0);
    require_close(b.grad(), zeros({3}, DType::float64), 0, 0);
}

TEST_CASE("norms of inputs with an empty spatial or batch dim: empty results, zero gradients",
          "[ops][norm]") {
    // PyTorch refuses exactly one value per statistic in training, and accepts none: the
    // result is empty and the weight and bias gradients are 0. lumen crashed on these
    // (rows of C read from no elements, a grain of kGrainSize / 0) or refused them.
    auto check = [](const Shape& shape, int64_t channels,
                    const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& f) {
        INFO(text(shape));
        Tensor x = zeros(shape, DType::float32).requires_grad_();
        Tensor w = ones({channels}, DType::float32).requires_grad_();
        Tensor b = zeros({channels}, DType::float32).requires_grad_();
        Tensor y = f(x, w, b);
        CHECK(text(y.shape()) == text(shape));
        y.backward(zeros(shape, DType::float32));
        require_close(w.grad(), zeros({channels}, DType::float32), 0, 0);
        require_close(b.grad(), zeros({channels}, DType::float32), 0, 0);
        CHECK(text(x.grad().shape()) == text(shape));
    };
    Tensor mean = zeros({3}, DType::float32), var = ones({3}, DType::float32);
    auto running = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
        return instance_norm(x, mean, var, w, b, false);
    };
    check({2, 3, 0}, 3, running);
    check({2, 3, 0, 2}, 3, [](const Tensor& x, const Tensor& w, const Tensor& b) {
        return instance_norm(x, {}, {}, w, b);
    });
    check({3, 3, 1, 0, 3}, 3, [&](const Tensor& x, const Tensor& w, const Tensor& b) {
        return batch_norm(x, mean, var, w, b, false);
    });
    Tensor running_mean = tensor({0.5, -1, 2}, {3}, DType::float32);
    check({0, 3, 2}, 3, [&](const Tensor& x, const Tensor& w, const Tensor& b) {
        return batch_norm(x, running_mean, var, w, b, true);
    });
    require_close(running_mean, {0.5, -1, 2}, 0, 0);  // untouched, as in PyTorch
    check({2, 6, 0}, 6,
          [](const Tensor& x, const Tensor& w, const Tensor& b) { return group_norm(x, 3, w, b); });
}

TEST_CASE("instance_norm and group_norm: float32 gradients at a mean far above the spread",
          "[ops][norm]") {
    // dx = g k1 + (x - m) k2 + k3 per channel: the backward folded m into k3 (x k2 - m k2),
    // which cancels to eps |x| / |x - m| of the result when the mean is 4e5 and the spread
    // ~100 (relative error ~1e-2 where PyTorch's float32 has ~1e-6).
    Tensor base = add(random_input({2, 3, 4, 5}, 41, -100, 100), 4e5);
    Tensor x64 = base.detach().to(DType::float32).to(DType::float64);  // float32-exact
    Tensor g64 = random_input({2, 3, 4, 5}, 42).detach();
    Tensor w64 = random_input({3}, 43, 0.5, 1.5).detach();
    auto grad = [&](DType dtype, bool group) {
        Tensor x = x64.to(dtype).detach().requires_grad_();
        Tensor w = w64.to(dtype);
        Tensor y = group ? group_norm(x, 3, w) : instance_norm(x, {}, {}, w);
        y.backward(g64.to(dtype));
        return x.grad().to(DType::float64);
    };
    for (bool group : {false, true}) {
        INFO((group ? "group_norm" : "instance_norm"));
        Tensor want = grad(DType::float64, group);
        double scale = lumen::max(abs(want)).item<double>();
        require_close(grad(DType::float32, group), want.to_vector<double>(), 1e-3, 1e-4 * scale);
    }
}

TEST_CASE("group_norm: the float32 forward forms x - mean first", "[ops][norm]") {
    // y = x scale + (b - mean scale) cancels to eps |x| rstd when the mean is far above the
    // spread; (x - mean) scale + b is exact here, where each group's mean is a float.
    Tensor x = tensor({1000, 1000, 1000, 1000, 4e5 - 0.5, 4e5 + 0.25, 4e5 + 0.75, 4e5 - 0.5},
                      {2, 1, 4}, DType::float32);
    Tensor y = group_norm(x, 1, {}, {}, 0.1);
    double rstd = 1 / std::sqrt(1.125 / 4 + 0.1);  // the second sample: mean 4e5
    require_close(y, {0, 0, 0, 0, -0.5 * rstd, 0.25 * rstd, 0.75 * rstd, -0.5 * rstd}, 1e-6, 1e-6);
    // A mean that is no float (-4838.468): its rounding, half an ulp (2.4e-4) times rstd
    // (0.26), was an error of every output; the forward takes the rounding off x - m as well.
    Tensor row = tensor({-4842.2695, -4834.6665}, {1, 2}, DType::float32);
    Tensor z = layer_norm(row, {2}, {}, {}, 1e-5);
    double a = double(-4842.2695f), b = double(-4834.6665f), half = (b - a) / 2;
    double r = 1 / std::sqrt(half * half + 1e-5);
    require_close(z, {-half * r, half * r}, 1e-6, 1e-7);
}

TEST_CASE("layer_norm: float32 gradients at a mean that is no float, far above the spread",
          "[ops][norm]") {
    // Two entries 51 and 51.05 (eps 1e-5): dx = rstd w (1 - xhat^2) (g1 - g2) / 2 keeps
    // 1.6% of its terms, so the saved mean's rounding to float (1.9e-6 against a deviation of
    // 0.025) became a 1% error of dx; PyTorch's float32 is within 0.1%. The backward now takes
    // the rounding off x - m.
    Tensor x64 =
        tensor({51.0, 51.05, -81.38603, -81.82202}, {2, 2}, DType::float32).to(DType::float64);
    Tensor w64 = tensor({0.5668755, 1.1743215}, {2}, DType::float64);
    Tensor g64 = tensor({0.23368172, 2.516095, 0.4320797, 0.79900193}, {2, 2}, DType::float64);
    auto grads = [&](DType dtype) {
        Tensor x = x64.to(dtype).detach().requires_grad_();
        Tensor w = w64.to(dtype).detach().requires_grad_();
        layer_norm(x, {2}, w, {}, 1e-5).backward(g64.to(dtype));
        return std::vector<Tensor>{x.grad().to(DType::float64), w.grad().to(DType::float64)};
    };
    std::vector<Tensor> want = grads(DType::float64), got = grads(DType::float32);
    require_close(got[0], want[0].to_vector<double>(), 1e-3, 1e-6);
    require_close(got[1], want[1].to_vector<double>(), 1e-5, 1e-6);
}
