// Losses: cross_entropy (class indices with weights, ignore_index and label smoothing, N-D
// segmentation, unbatched, class probabilities) and nll_loss against a naive float64 version
// of PyTorch's composite formulas; the pointwise losses against their definitions; float64
// gradchecks for every loss and reduction; thread-count independence; errors; oracle vectors.
#include <cmath>
#include <limits>
#include <string>

#include "conformance/check_vectors.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

const char* const kReductions[] = {"none", "mean", "sum"};

struct Layout {
    int64_t n = 1, c = 1, s = 1;
};

Layout layout_of(const Tensor& x) {
    Layout l;
    if (x.ndim() == 1) {
        l.c = x.size(0);
        return l;
    }
    l.n = x.size(0);
    l.c = x.size(1);
    for (int64_t d = 2; d < x.ndim(); ++d) l.s *= x.size(d);
    return l;
}

// log_softmax over the class dim, naively in double, laid out (N, C, S).
std::vector<double> log_softmax_reference(const std::vector<double>& x, const Layout& l) {
    std::vector<double> out(x.size());
    for (int64_t n = 0; n < l.n; ++n) {
        for (int64_t s = 0; s < l.s; ++s) {
            auto at = [&](int64_t c) { return size_t((n * l.c + c) * l.s + s); };
            double max = -std::numeric_limits<double>::infinity(), total = 0;
            for (int64_t c = 0; c < l.c; ++c) max = std::max(max, x[at(c)]);
            for (int64_t c = 0; c < l.c; ++c) total += std::exp(x[at(c)] - max);
            for (int64_t c = 0; c < l.c; ++c) out[at(c)] = x[at(c)] - max - std::log(total);
        }
    }
    return out;
}

std::vector<double> reduce_reference(const std::vector<double>& losses, const std::string& mode,
                                     double divisor) {
    if (mode == "none") return losses;
    double total = 0;
    for (double v : losses) total += v;
    return {mode == "sum" ? total : total / divisor};
}

// PyTorch's cross_entropy (from_logits) or nll_loss with class indices:
// (1 - ls) nll_loss(lp, t, w) + ls / C * smooth, both divided by sum w[t] for "mean".
std::vector<double> class_reference(const Tensor& x, const Tensor& target, const Tensor& weight,
                                    int64_t ignore, const std::string& mode, double ls,
                                    bool from_logits) {
    Layout l = layout_of(x);
    std::vector<double> values = x.to_vector<double>();
    std::vector<double> lp = from_logits ? log_softmax_reference(values, l) : values;
    std::vector<int64_t> t = target.to_vector<int64_t>();
    std::vector<double> w =
        weight.defined() ? weight.to_vector<double>() : std::vector<double>(size_t(l.c), 1.0);
    std::vector<double> losses(t.size(), 0.0);
    double total_weight = 0;
    for (int64_t n = 0; n < l.n; ++n) {
        for (int64_t s = 0; s < l.s; ++s) {
            size_t i = size_t(n * l.s + s);
            if (t[i] == ignore) continue;
            auto at = [&](int64_t c) { return size_t((n * l.c + c) * l.s + s); };
            double smooth = 0;
            for (int64_t c = 0; c < l.c; ++c) smooth -= w[size_t(c)] * lp[at(c)];
            double nll = -w[size_t(t[i])] * lp[at(t[i])];
            losses[i] = (1 - ls) * nll + ls / double(l.c) * smooth;
            total_weight += w[size_t(t[i])];
        }
    }
    return reduce_reference(losses, mode, total_weight);
}

// cross_entropy with class probabilities: -sum_c w_c q_c lp_c, q = (1 - ls) p + ls / C;
// "mean" divides by the number of samples.
std::vector<double> probability_reference(const Tensor& x, const Tensor& target,
                                          const Tensor& weight, const std::string& mode,
                                          double ls) {
    Layout l = layout_of(x);
    std::vector<double> lp = log_softmax_reference(x.to_vector<double>(), l);
    std::vector<double> p = target.to_vector<double>();
    std::vector<double> w =
        weight.defined() ? weight.to_vector<double>() : std::vector<double>(size_t(l.c), 1.0);
    std::vector<double> losses(size_t(l.n * l.s), 0.0);
    for (int64_t n = 0; n < l.n; ++n) {
        for (int64_t s = 0; s < l.s; ++s) {
            for (int64_t c = 0; c < l.c; ++c) {
                size_t at = size_t((n * l.c + c) * l.s + s);
                double q = (1 - ls) * p[at] + ls / double(l.c);
                losses[size_t(n * l.s + s)] -= w[size_t(c)] * q * lp[at];
            }
        }
    }
    return reduce_reference(losses, mode, double(l.n * l.s));
}

// Rows of probabilities along the class dim.
Tensor probabilities(const Shape& shape, uint64_t seed) {
    return softmax(mul(random_input(shape, seed), 2.0), shape.size() == 1 ? 0 : 1);
}

Shape without_class_dim(const Shape& shape) {
    Shape out = shape;
    out.erase(out.begin() + (shape.size() == 1 ? 0 : 1));
    return out;
}

}  // namespace

TEST_CASE(
    "cross_entropy: class indices match PyTorch's formula with weights, ignore_index and "
    "label smoothing",
    "[ops][loss]") {
    for (Shape shape : {Shape{7, 5}, Shape{3, 4, 5, 2}, Shape{2, 3, 70}, Shape{6}}) {
        Tensor x = mul(random_input(shape, 3), 4.0);
        int64_t classes = layout_of(x).c;
        Tensor weight = random_input({classes}, 4, 0.2, 2.0);
        for (int64_t ignore : {int64_t(-100), int64_t(1)}) {
            Tensor target = class_targets(without_class_dim(shape), classes, ignore, 5);
            for (bool weighted : {false, true}) {
                Tensor w = weighted ? weight : Tensor();
                for (double ls : {0.0, 0.3}) {
                    for (const char* mode : kReductions) {
                        INFO("shape " << text(shape) << " ignore " << ignore << " weighted "
                                      << weighted << " ls " << ls << " " << mode);
                        auto want = class_reference(x, target, w, ignore, mode, ls, true);
                        require_close(cross_entropy(x, target, w, ignore, mode, ls), want, 1e-12,
                                      1e-12);
                        Tensor w32 = weighted ? w.to(DType::float32) : Tensor();
                        require_close(
                            cross_entropy(x.to(DType::float32), target, w32, ignore, mode, ls),
                            want, 2e-6, 2e-6);
                    }
                }
            }
        }
    }
}

TEST_CASE("cross_entropy: non-contiguous input, unbatched shapes and 0-d results", "[ops][loss]") {
    Tensor x = mul(random_input({6, 9}, 8), 3.0);
    Tensor target = class_targets({6}, 9, -100, 9);
    require_close(cross_entropy(noncontiguous(x), target, Tensor(), -100, "none", 0.1),
                  class_reference(x, target, Tensor(), -100, "none", 0.1, true), 1e-12, 1e-12);
    CHECK(cross_entropy(x, target).ndim() == 0);
    Tensor single = random_input({9}, 10);
    Tensor loss = cross_entropy(single, from_vector(std::vector<int64_t>{4}, {1}).reshape({}),
                                Tensor(), -100, "none");
    CHECK(loss.ndim() == 0);
    std::vector<double> lp = log_softmax(single, 0).to_vector<double>();
    require_close(loss, {-lp[4]}, 1e-12);
}

TEST_CASE("cross_entropy: class probabilities with weights and label smoothing", "[ops][loss]") {
    for (Shape shape : {Shape{5, 4}, Shape{2, 3, 4, 3}, Shape{7}}) {
        Tensor x = mul(random_input(shape, 11), 3.0);
        Tensor p = probabilities(shape, 12);
        int64_t classes = layout_of(x).c;
        Tensor weight = random_input({classes}, 13, 0.2, 2.0);
        for (bool weighted : {false, true}) {
            for (double ls : {0.0, 0.2}) {
                for (const char* mode : kReductions) {
                    INFO("shape " << text(shape) << " weighted " << weighted << " ls " << ls << " "
                                  << mode);
                    Tensor w = weighted ? weight : Tensor();
                    require_close(cross_entropy(x, p, w, -100, mode, ls),
                                  probability_reference(x, p, w, mode, ls), 1e-12, 1e-12);
                }
            }
        }
    }
}

TEST_CASE("nll_loss: matches -w[t] x[t] with ignore_index and the weighted mean", "[ops][loss]") {
    for (Shape shape : {Shape{8, 5}, Shape{2, 5, 3, 4}, Shape{5}}) {
        Tensor lp = log_softmax(random_input(shape, 14), shape.size() == 1 ? 0 : 1);
        Tensor target = class_targets(without_class_dim(shape), 5, 2, 15);
        Tensor weight = random_input({5}, 16, 0.5, 1.5);
        for (const char* mode : kReductions) {
            INFO("shape " << text(shape) << " " << mode);
            require_close(nll_loss(lp, target, weight, 2, mode),
                          class_reference(lp, target, weight, 2, mode, 0.0, false), 1e-12, 1e-14);
            require_close(nll_loss(lp, target, Tensor(), 2, mode),
                          class_reference(lp, target, Tensor(), 2, mode, 0.0, false), 1e-12, 1e-14);
        }
    }
}

TEST_CASE("cross_entropy: large logits stay finite, all-ignored mean is NaN with zero gradient",
          "[ops][loss]") {
    Tensor x = tensor({1e4, -1e4, 0, 3e4, 3e4, -3e4}, {2, 3}, DType::float64);
    Tensor target = from_vector(std::vector<int64_t>{1, 0}, {2});
    // Row 0: lse = 1e4, loss = 2e4; row 1: lse = 3e4 + log 2, loss = log 2.
    require_close(cross_entropy(x, target, Tensor(), -100, "none"), {2e4, std::log(2.0)}, 1e-12);
    require_close(cross_entropy(x.to(DType::float32), target, Tensor(), -100, "none"),
                  {2e4, std::log(2.0)}, 1e-6);
    Tensor logits = random_input({3, 4}, 17).requires_grad_(true);
    Tensor ignored = full({3}, -100.0, DType::int64);
    Tensor loss = cross_entropy(logits, ignored, Tensor(), -100, "mean", 0.1);
    CHECK(std::isnan(loss.item<double>()));
    loss.backward();
    require_close(logits.grad(), zeros({3, 4}, DType::float64), 0, 0);
}

TEST_CASE("cross_entropy: float32 gradients of large logits keep the softmax's precision",
          "[ops][loss]") {
    // The backward forms softmax_c = e^((x_c - max) - log_sum): with the float sum lse =
    // max + log_sum instead, lse's rounding (ulp(1e4) / 2 = 5e-4) turned into a relative
    // error of every probability, and p_t - 1 lost ~0.4% ([[10000, 10003]], target 1).
    // Each form (rows, positions, class probabilities) against float64 on the same values.
    auto grads = [](const Tensor& x64, const Tensor& target, DType dtype, bool soft) {
        Tensor x = x64.detach().to(dtype).detach().requires_grad_(true);
        Tensor t = soft ? target.detach().to(dtype).detach().requires_grad_(true) : target;
        cross_entropy(x, t, Tensor(), -100, "sum", soft ? 0.1 : 0.0).backward();
        std::vector<Tensor> out = {x.grad().to(DType::float64)};
        if (soft) out.push_back(t.grad().to(DType::float64));
        return out;
    };
    for (double offset : {1e4, 300.0, -5e3}) {
        INFO("logits near " << offset);
        Tensor rows = tensor({offset, offset + 3}, {1, 2}, DType::float64);
        Tensor row_target = from_vector(std::vector<int64_t>{1}, {1});
        Tensor positions = add(random_input({2, 3, 5}, 3, -4, 4), offset);
        positions = positions.to(DType::float32).to(DType::float64);  // float32-exact
        Tensor position_target =
            from_vector(std::vector<int64_t>{0, 1, 2, 1, 0, 2, 2, 1, 0, 1}, {2, 5});
        Tensor probabilities = softmax(random_input({2, 3, 5}, 4, -2, 2), 1);
        probabilities = probabilities.to(DType::float32).to(DType::float64);
        struct Case {
            Tensor x, target;
            bool soft;
        };
        for (const Case& c :
             {Case{rows, row_target, false}, Case{positions, position_target, false},
              Case{positions, probabilities, true}}) {
            std::vector<Tensor> want = grads(c.x, c.target, DType::float64, c.soft);
            std::vector<Tensor> got = grads(c.x, c.target, DType::float32, c.soft);
            for (size_t i = 0; i < want.size(); ++i)
                require_close(got[i], want[i].to_vector<double>(), 2e-6, 2e-7);
        }
    }
    // The case: p_1 - 1 = -e^-3 / (1 + e^-3).
    Tensor x = tensor({1e4, 1e4 + 3}, {1, 2}, DType::float32).requires_grad_(true);
    cross_entropy(x, from_vector(std::vector<int64_t>{1}, {1}), Tensor(), -100, "sum").backward();
    double p0 = std::exp(-3.0) / (1 + std::exp(-3.0));
    require_close(x.grad(), {p0, -p0}, 1e-6, 1e-8);
}

TEST_CASE("cross_entropy: the class-weight gradient of no samples is 0", "[ops][loss]") {
    // "mean" over no samples divides by 0; the weight gradient sums nothing and must stay 0
    // (PyTorch), not 0 times NaN.
    for (const char* mode : kReductions) {
        INFO(mode);
        Tensor x = zeros({0, 3, 2}).requires_grad_(true);
        Tensor q = zeros({0, 3, 2});
        Tensor w = tensor({0.5, 1, 2}, {3}).requires_grad_(true);
        Tensor loss = cross_entropy(x, q, w, -100, mode, 0.1);
        (std::string(mode) == "none" ? sum(loss) : loss).backward();
        require_close(w.grad(), {0, 0, 0}, 0, 0);
    }
}

TEST_CASE("binary_cross_entropy_with_logits: the target gradient of small logits is -x",
          "[ops][loss]") {
    // d/dy = pw softplus(-x) - softplus(x) = (pw - 1) softplus(-x) - x; formed as the
    // difference of the two softplus terms (each ~log 2) it lost |x| / log 2 of the result
    // (5e-4 relative at x ~ 1e-4), where PyTorch returns -x exactly.
    Tensor x = tensor({4.76869e-4, -2.79069e-4, 1.252752e-3, 9.5895717e-5}, {4}, DType::float32);
    Tensor y = tensor({0, 1, 0, 1}, {4}, DType::float32).requires_grad_(true);
    binary_cross_entropy_with_logits(x, y, Tensor(), "sum").backward();
    require_close(y.grad(), neg(x).to_vector<double>(), 1e-6, 0);
    Tensor pw = tensor({2.0}, {1}, DType::float32);
    Tensor y2 = y.detach().requires_grad_(true);
    binary_cross_entropy_with_logits(x, y2, Tensor(), "sum", pw).backward();
    std::vector<double> want;
    for (double v : x.to_vector<double>()) want.push_back(std::log1p(std::exp(-v)) - v);
    require_close(y2.grad(), want, 1e-6, 0);
}

TEST_CASE("pointwise losses: values match their definitions", "[ops][loss]") {
    Tensor x = mul(random_input({4, 7}, 18), 2.0), y = mul(random_input({4, 7}, 19), 2.0);
    std::vector<double> xs = x.to_vector<double>(), ys = y.to_vector<double>();
    auto expect = [&](auto element) {
        std::vector<double> out;
        for (size_t i = 0; i < xs.size(); ++i) out.push_back(element(xs[i] - ys[i]));
        return out;
    };
    auto check = [&](const Tensor& got, const std::vector<double>& per_element) {
        require_close(got, per_element, 1e-12, 1e-14);
    };
    check(mse_loss(x, y, "none"), expect([](double d) { return d * d; }));
    check(l1_loss(x, y, "none"), expect([](double d) { return std::abs(d); }));
    check(smooth_l1_loss(x, y, "none", 0.5),
          expect([](double d) { return std::abs(d) < 0.5 ? d * d : std::abs(d) - 0.25; }));
    check(smooth_l1_loss(x, y, "none", 0.0), expect([](double d) { return std::abs(d); }));
    check(huber_loss(x, y, "none", 0.8), expect([](double d) {
              return std::abs(d) < 0.8 ? 0.5 * d * d : 0.8 * (std::abs(d) - 0.4);
          }));
    check(charbonnier_loss(x, y, 1e-3, "none"),
          expect([](double d) { return std::sqrt(d * d + 1e-6); }));
    // Reductions: mean and sum of the "none" values; float32 close to float64.
    std::vector<double> squares = mse_loss(x, y, "none").to_vector<double>();
    double total = 0;
    for (double v : squares) total += v;
    require_close(mse_loss(x, y, "sum"), {total}, 1e-12);
    require_close(mse_loss(x, y), {total / 28}, 1e-12);
    require_close(charbonnier_loss(x.to(DType::float32), y.to(DType::float32)),
                  charbonnier_loss(x, y).to_vector<double>(), 1e-6);
    // Broadcasting: (3, 1) against (4) is (3, 4).
    Tensor a = random_input({3, 1}, 20), b = random_input({4}, 21);
    require_close(mse_loss(a, b, "none"), mul(sub(a, b), sub(a, b)).to_vector<double>(), 1e-14);
}

TEST_CASE("binary cross entropy: stable logits form, pos_weight, weights and clamped logs",
          "[ops][loss]") {
    const DType f64 = DType::float64;
    Tensor x = tensor({-800, -3, 0, 2.5, 800, 1}, {2, 3}, f64);
    Tensor y = tensor({1, 0.25, 1, 0, 0, 0.5}, {2, 3}, f64);
    Tensor pos_weight = tensor({2, 0.5, 1}, {3}, f64), weight = tensor({1, 3}, {2, 1}, f64);
    std::vector<double> want;
    std::vector<double> xs = x.to_vector<double>(), ys = y.to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i) {
        double pw = pos_weight.to_vector<double>()[i % 3], w = i < 3 ? 1.0 : 3.0;
        // softplus(-x) written without overflow for the reference too.
        double softplus = std::max(-xs[i], 0.0) + std::log1p(std::exp(-std::abs(xs[i])));
        want.push_back(w * ((1 - ys[i]) * xs[i] + (1 + (pw - 1) * ys[i]) * softplus));
    }
    require_close(binary_cross_entropy_with_logits(x, y, weight, "none", pos_weight), want, 1e-12);
    require_close(binary_cross_entropy_with_logits(x.to(DType::float32), y.to(DType::float32),
                                                   weight.to(DType::float32), "none",
                                                   pos_weight.to(DType::float32)),
                  want, 1e-6);
    // binary_cross_entropy: log clamped at -100, so p = 0 or 1 gives 100, not inf.
    Tensor p = tensor({0, 1, 0.25, 0.5}, {4}, f64), t = tensor({1, 0, 1, 0.5}, {4}, f64);
    require_close(binary_cross_entropy(p, t, Tensor(), "none"),
                  {100, 100, -std::log(0.25), std::log(2.0)}, 1e-12);
    require_close(binary_cross_entropy(p, t, tensor({2}, {1}, f64), "sum"),
                  {2 * (200 - std::log(0.25) + std::log(2.0))}, 1e-12);
}

TEST_CASE("losses: float64 gradients match finite differences for every reduction",
          "[ops][loss][gradcheck]") {
    Tensor weight = random_input({4}, 22, 0.3, 1.7);
    for (const char* mode : kReductions) {
        INFO(mode);
        for (Shape shape : {Shape{5, 4}, Shape{2, 4, 3, 2}, Shape{4}}) {
            INFO("shape " << text(shape));
            Tensor target = class_targets(without_class_dim(shape), 4, 3, 23);
            for (double ls : {0.0, 0.3}) {
                gradcheck(
                    [&](const std::vector<Tensor>& in) {
                        return cross_entropy(in[0], target, weight, 3, mode, ls);
                    },
                    {random_input(shape, 24)});
            }
            gradcheck(
                [&](const std::vector<Tensor>& in) {
                    return cross_entropy(in[0], in[1], weight, -100, mode, 0.2);
                },
                {random_input(shape, 25), probabilities(shape, 26)});
            // The class weights too (PyTorch differentiates them in the probability form; the
            // backward left them without a gradient).
            gradcheck(
                [&](const std::vector<Tensor>& in) {
                    return cross_entropy(in[0], in[1], in[2], -100, mode, 0.2);
                },
                {random_input(shape, 25), probabilities(shape, 26),
                 random_input({4}, 27, 0.3, 1.7)});
            gradcheck(
                [&](const std::vector<Tensor>& in) {
                    return nll_loss(in[0], target, weight, 3, mode);
                },
                {random_input(shape, 27)});
        }
        gradcheck(
            [&](const std::vector<Tensor>& in) {
                return cross_entropy(in[0], class_targets({3}, 6, -100, 28), Tensor(), -100, mode,
                                     0.1);
            },
            {noncontiguous(random_input({3, 6}, 29))});
        Tensor x = mul(random_input({3, 5}, 30), 3.0), y = random_input({3, 5}, 31, 0.0, 1.0);
        gradcheck(
            [&](const std::vector<Tensor>& in) {
                return binary_cross_entropy_with_logits(in[0], in[1],
                                                        random_input({3, 1}, 32, 0.5, 2), mode,
                                                        random_input({5}, 33, 0.5, 2));
            },
            {x, y});
        gradcheck(
            [&](const std::vector<Tensor>& in) {
                return binary_cross_entropy(in[0], in[1], random_input({5}, 34, 0.5, 2), mode);
            },
            {random_input({3, 5}, 35, 0.05, 0.95), y});
        Tensor a = mul(random_input({3, 5}, 36), 2.0), b = noncontiguous(random_input({3, 5}, 37));
        std::vector<std::function<Tensor(const std::vector<Tensor>&)>> pointwise = {
            [&](const auto& in) { return mse_loss(in[0], in[1], mode); },
            [&](const auto& in) { return l1_loss(in[0], in[1], mode); },
            [&](const auto& in) { return smooth_l1_loss(in[0], in[1], mode, 0.7); },
            [&](const auto& in) { return huber_loss(in[0], in[1], mode, 0.6); },
            [&](const auto& in) { return charbonnier_loss(in[0], in[1], 0.1, mode); },
        };
        for (const auto& f : pointwise) gradcheck(f, {a, b});
        gradcheck([&](const auto& in) { return mse_loss(in[0], in[1], mode); },
                  {random_input({3, 1}, 38), random_input({4}, 39)});
    }
}

TEST_CASE("losses: results do not depend on the number of threads", "[ops][loss]") {
    Tensor x = random_input({300, 257}, 40).to(DType::float32);
    Tensor target = class_targets({300}, 257, -100, 41);
    Tensor seg = random_input({2, 6, 150, 130}, 42).to(DType::float32);
    Tensor seg_target = class_targets({2, 150, 130}, 6, -100, 43);
    Tensor y = random_input({300, 257}, 44).to(DType::float32);
    auto run = [&] {
        return std::vector<double>{
            cross_entropy(x, target, Tensor(), -100, "mean", 0.1).item<double>(),
            cross_entropy(seg, seg_target).item<double>(), mse_loss(x, y, "sum").item<double>(),
            binary_cross_entropy_with_logits(x, sigmoid(y)).item<double>()};
    };
    set_num_threads(1);
    std::vector<double> single = run();
    set_num_threads(2);
    std::vector<double> two = run();
    set_num_threads(0);
    CHECK(single == two);
}

TEST_CASE("losses: bad arguments throw naming the op and the values", "[ops][loss]") {
    Tensor x = zeros({3, 4});
    Tensor target = from_vector(std::vector<int64_t>{0, 4, 1}, {3});
    require_error([&] { cross_entropy(x, target); },
                  {"[cross_entropy]", "target 4", "out of bounds", "4 classes"});
    require_error(
        [&] {
            nll_loss(x, from_vector(std::vector<int64_t>{0, -2, 1}, {3}));
        },
        {"[nll_loss]", "target -2", "4 classes"});
    require_error(
        [&] {
            cross_entropy(x, from_vector(std::vector<int64_t>{0, 1}, {2}));
        },
        {"[cross_entropy]", "target of shape [3]", "got [2]"});
    require_error([&] { cross_entropy(x, zeros({3})); }, {"[cross_entropy]", "int64", "float32"});
    require_error(
        [&] {
            cross_entropy(x, zeros({3, 4}, DType::int64));
        },
        {"[cross_entropy]", "probabilities", "int64"});
    require_error(
        [&] {
            cross_entropy(x, zeros({3, 4}), Tensor(), 2);
        },
        {"[cross_entropy]", "ignore_index (2)"});
    require_error([&] { cross_entropy(x, zeros({3}, DType::int64), ones({5})); },
                  {"[cross_entropy]", "weight", "4 elements", "[5]"});
    require_error([&] { cross_entropy(x, zeros({3}, DType::int64), ones({4}, DType::float64)); },
                  {"[cross_entropy]", "weight", "float64"});
    require_error([&] { cross_entropy(x, zeros({3}, DType::int64), Tensor(), -100, "avg"); },
                  {"[cross_entropy]", "'avg'"});
    require_error([&] { cross_entropy(x, zeros({3}, DType::int64), Tensor(), -100, "mean", 1.5); },
                  {"[cross_entropy]", "label_smoothing", "1.5"});
    require_error(
        [&] {
            cross_entropy(zeros({3, 4}, DType::int64), target);
        },
        {"[cross_entropy]", "int64"});
    require_error([&] { mse_loss(x, zeros({3, 4}, DType::float64)); }, {"[mse_loss]", "float64"});
    require_error([&] { l1_loss(x, zeros({2, 4})); }, {"[l1_loss]", "[3, 4]", "[2, 4]"});
    require_error([&] { binary_cross_entropy_with_logits(x, zeros({4})); },
                  {"[binary_cross_entropy_with_logits]", "[4]", "[3, 4]"});
    require_error([&] { binary_cross_entropy_with_logits(x, x, Tensor(), "mean", ones({3})); },
                  {"[binary_cross_entropy_with_logits]", "pos_weight", "[3]"});
    require_error(
        [&] {
            binary_cross_entropy(full({3, 4}, 1.5), x);
        },
        {"[binary_cross_entropy]", "between 0 and 1", "1.5"});
    require_error([&] { smooth_l1_loss(x, x, "mean", -1); }, {"[smooth_l1_loss]", "beta", "-1"});
    require_error([&] { huber_loss(x, x, "mean", 0); }, {"[huber_loss]", "delta"});
}

TEST_CASE("losses: the PyTorch oracle vectors pass with their tolerances", "[ops][loss][oracle]") {
    require_oracle_vectors({"bce_with_logits", "cross_entropy_seg", "cross_entropy_smooth"});
}
