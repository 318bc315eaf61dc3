// Pooling: hand-computed values, naive float64 references (every tap visited, PyTorch's size and
// divisor rules written out) over 2-D and 3-D, batched and unbatched, contiguous or not;
// gradients against finite differences; argmax routing; errors; the PyTorch oracle vectors.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "conformance/check_vectors.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

struct PoolArgs {
    Dims kernel, stride, padding, dilation;
    bool ceil_mode = false;
    bool count_include_pad = true;
    int64_t divisor = 0;  // 0: none
};

// Values that differ by at least 1 / numel, so a gradcheck step never changes an argmax.
Tensor distinct_input(const Shape& shape, uint64_t seed) {
    std::vector<double> noise = random_input(shape, seed).to_vector<double>();
    std::vector<size_t> order(noise.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return noise[a] < noise[b]; });
    std::vector<double> values(noise.size());
    for (size_t rank = 0; rank < order.size(); ++rank)
        values[order[rank]] = double(rank) / double(order.size()) - 0.5;
    return from_vector<double>(values, shape);
}

int64_t reference_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
    double span = double(in + 2 * p - d * (k - 1) - 1) / double(s);
    int64_t out = int64_t(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
    if (ceil_mode && (out - 1) * s >= in + p) --out;
    return out;
}

// The taps of one output index along one dim: in-range input positions, plus how many taps
// fall before the end of the padded input (the count_include_pad divisor).
struct Taps {
    std::vector<int64_t> positions;
    int64_t padded = 0;
};

// Naive pooling of x (leading dims, then `spatial` dims) in double. `taps(dim, o)` gives the
// window of output o along spatial dim `dim`; `max` picks the first maximum and its flat index.
template <typename TapsFn>
std::pair<std::vector<double>, std::vector<double>> naive_pool(const Tensor& x, int spatial,
                                                               const Dims& out, bool max,
                                                               const TapsFn& taps,
                                                               const PoolArgs& args) {
    std::vector<double> values = x.to_vector<double>(), result, indices;
    int64_t in[3] = {1, 1, 1}, o3[3] = {1, 1, 1};
    for (int i = 0; i < spatial; ++i) {
        in[3 - spatial + i] = x.size(x.ndim() - spatial + i);
        o3[3 - spatial + i] = out[size_t(i)];
    }
    int64_t plane = in[0] * in[1] * in[2], planes = x.numel() / plane;
    auto along = [&](int dim, int64_t o) { return taps(dim - (3 - spatial), o); };
    Taps none{{0}, 1};
    for (int64_t p = 0; p < planes; ++p) {
        for (int64_t od = 0; od < o3[0]; ++od) {
            Taps td = spatial == 3 ? along(0, od) : none;
            for (int64_t oh = 0; oh < o3[1]; ++oh) {
                Taps th = along(1, oh);
                for (int64_t ow = 0; ow < o3[2]; ++ow) {
                    Taps tw = along(2, ow);
                    double best = -INFINITY, total = 0;
                    int64_t best_at = -1, count = 0;
                    for (int64_t d : td.positions)
                        for (int64_t h : th.positions)
                            for (int64_t w : tw.positions) {
                                int64_t at = (d * in[1] + h) * in[2] + w;
                                double v = values[size_t(p * plane + at)];
                                if (v > best) best = v, best_at = at;
                                total += v;
                                ++count;
                            }
                    if (max) {
                        result.push_back(best);
                        indices.push_back(double(best_at));
                        continue;
                    }
                    int64_t divisor = args.divisor             ? args.divisor
                                      : args.count_include_pad ? td.padded * th.padded * tw.padded
                                                               : count;
                    result.push_back(count ? total / double(divisor) : 0.0);
                }
            }
        }
    }
    return {result, indices};
}

Taps window_taps(const PoolArgs& a, int i, int64_t o, int64_t in) {
    Taps t;
    for (int64_t k = 0; k < a.kernel[size_t(i)]; ++k) {
        int64_t pos = o * a.stride[size_t(i)] - a.padding[size_t(i)] + k * a.dilation[size_t(i)];
        if (pos >= 0 && pos < in) t.positions.push_back(pos);
        if (pos < in + a.padding[size_t(i)]) ++t.padded;
    }
    return t;
}

Taps cell_taps(int64_t o, int64_t in, int64_t out) {
    Taps t;
    int64_t begin = int64_t(std::floor(double(o * in) / double(out)));
    int64_t end = int64_t(std::ceil(double((o + 1) * in) / double(out)));
    for (int64_t pos = begin; pos < end; ++pos) t.positions.push_back(pos);
    t.padded = end - begin;
    return t;
}

Shape with_spatial(const Tensor& x, int spatial, const Dims& out) {
    Shape shape(x.shape().begin(), x.shape().end() - spatial);
    shape.insert(shape.end(), out.begin(), out.end());
    return shape;
}

// Checks max or avg pooling of x against the naive reference, in float64 and float32.
void check_window_pool(const Tensor& x, int spatial, bool max, const PoolArgs& a) {
    Dims out;
    for (int i = 0; i < spatial; ++i)
        out.push_back(reference_size(x.size(x.ndim() - spatial + i), a.kernel[size_t(i)],
                                     a.stride[size_t(i)], a.padding[size_t(i)],
                                     a.dilation[size_t(i)], a.ceil_mode));
    auto taps = [&](int i, int64_t o) {
        return window_taps(a, i, o, x.size(x.ndim() - spatial + i));
    };
    auto [want, want_indices] = naive_pool(x, spatial, out, max, taps, a);
    std::optional<int64_t> divisor;
    if (a.divisor) divisor = a.divisor;
    for (DType dtype : {DType::float64, DType::float32}) {
        Tensor input = x.to(dtype);
        Tensor y;
        if (max) {
            ValuesIndices r = spatial == 2
                                  ? max_pool2d_with_indices(input, a.kernel, a.stride, a.padding,
                                                            a.dilation, a.ceil_mode)
                                  : max_pool3d_with_indices(input, a.kernel, a.stride, a.padding,
                                                            a.dilation, a.ceil_mode);
            y = r.values;
            CHECK(r.indices.dtype() == DType::int64);
            require_close(r.indices, want_indices, 0, 0);
        } else {
            y = spatial == 2 ? avg_pool2d(input, a.kernel, a.stride, a.padding, a.ceil_mode,
                                          a.count_include_pad, divisor)
                             : avg_pool3d(input, a.kernel, a.stride, a.padding, a.ceil_mode,
                                          a.count_include_pad, divisor);
        }
        REQUIRE(y.shape() == with_spatial(x, spatial, out));
        require_close(y, want, dtype == DType::float64 ? 1e-12 : 1e-5, 1e-6);
    }
}

void check_adaptive(const Tensor& x, int spatial, const Dims& out) {
    auto taps = [&](int i, int64_t o) {
        return cell_taps(o, x.size(x.ndim() - spatial + i), out[size_t(i)]);
    };
    auto [want_max, want_indices] = naive_pool(x, spatial, out, true, taps, PoolArgs{});
    auto [want_avg, unused] =
        naive_pool(x, spatial, out, false, taps, PoolArgs{{}, {}, {}, {}, false, false, 0});
    for (DType dtype : {DType::float64, DType::float32}) {
        Tensor input = x.to(dtype);
        double rtol = dtype == DType::float64 ? 1e-12 : 1e-5;
        Tensor avg =
            spatial == 2 ? adaptive_avg_pool2d(input, out) : adaptive_avg_pool3d(input, out);
        ValuesIndices max = spatial == 2 ? adaptive_max_pool2d_with_indices(input, out)
                                         : adaptive_max_pool3d_with_indices(input, out);
        REQUIRE(avg.shape() == with_spatial(x, spatial, out));
        require_close(avg, want_avg, rtol, 1e-6);
        require_close(max.values, want_max, rtol, 1e-6);
        require_close(max.indices, want_indices, 0, 0);
    }
}

}  // namespace

TEST_CASE("max_pool2d and avg_pool2d: hand-computed values", "[ops][pool]") {
    Tensor x = arange(0, 16, 1, DType::float64).reshape({1, 1, 4, 4});
    ValuesIndices r = max_pool2d_with_indices(x, {2});
    require_close(r.values, {5, 7, 13, 15});
    require_close(r.indices, {5, 7, 13, 15}, 0, 0);
    require_close(avg_pool2d(x, {2}), {2.5, 4.5, 10.5, 12.5});
    // Padding 1, kernel 3, stride 2: corner window {0, 1, 4, 5} is divided by 9 or by 4.
    require_close(avg_pool2d(x, {3}, {2}, {1}).narrow(2, 0, 1).narrow(3, 0, 1), {10.0 / 9});
    require_close(avg_pool2d(x, {3}, {2}, {1}, false, false).narrow(2, 0, 1).narrow(3, 0, 1),
                  {2.5});
    require_close(avg_pool2d(x, {2}, {}, {0}, false, true, 2), {5, 9, 21, 25});
    // ceil_mode: a 5-wide input with kernel 2 gives 3 outputs, the last window is 1 wide.
    Tensor row = arange(0, 5, 1, DType::float64).reshape({1, 1, 5});
    require_close(max_pool2d(row, {1, 2}, {}, {0}, {1}, true), {1, 3, 4});
    require_close(avg_pool2d(row, {1, 2}, {}, {0}, true), {0.5, 2.5, 4});
    // Dilation 2: taps 0 and 2.
    require_close(max_pool2d(tensor({3, 9, 1, 0, 2}, {1, 1, 5}), {1, 2}, {1}, {0}, {1, 2}),
                  {3, 9, 2});
    // NaN wins the max.
    Tensor with_nan = tensor({1, NAN, 3, 2}, {1, 1, 2, 2});
    CHECK(std::isnan(max_pool2d(with_nan, {2}).item<double>()));
}

TEST_CASE("max and avg pools match a naive reference in 2-D and 3-D", "[ops][pool]") {
    std::vector<PoolArgs> cases2d = {
        {{3, 3}, {2, 2}, {1, 1}, {1, 1}},
        {{2, 3}, {1, 2}, {1, 0}, {2, 1}},
        {{3, 2}, {2, 2}, {1, 1}, {1, 1}, true},
        {{3, 3}, {3, 2}, {1, 1}, {1, 1}, true, false},
        {{2, 2}, {2, 2}, {0, 1}, {1, 1}, false, true, 3},
        {{1, 1}, {2, 3}, {0, 0}, {1, 1}, true},
    };
    for (const Tensor& base : {random_input({2, 3, 7, 8}, 1), random_input({3, 9, 5}, 2)}) {
        for (const Tensor& x : {base, noncontiguous(base)}) {
            for (size_t i = 0; i < cases2d.size(); ++i) {
                INFO("shape " << text(x.shape()) << " case " << i);
                check_window_pool(x, 2, true, cases2d[i]);
                PoolArgs avg = cases2d[i];
                avg.dilation = {1, 1};
                check_window_pool(x, 2, false, avg);
            }
        }
    }
    std::vector<PoolArgs> cases3d = {
        {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}},
        {{3, 2, 3}, {2, 1, 2}, {1, 1, 0}, {1, 1, 1}, true},
        {{3, 3, 2}, {1, 2, 2}, {1, 0, 1}, {1, 2, 1}, false, false},
    };
    for (const Tensor& base : {random_input({2, 2, 5, 6, 7}, 3), random_input({2, 4, 5, 5}, 4)}) {
        for (const Tensor& x : {base, noncontiguous(base)}) {
            for (size_t i = 0; i < cases3d.size(); ++i) {
                INFO("shape " << text(x.shape()) << " case " << i);
                check_window_pool(x, 3, true, cases3d[i]);
                PoolArgs avg = cases3d[i];
                avg.dilation = {1, 1, 1};
                check_window_pool(x, 3, false, avg);
            }
        }
    }
}

TEST_CASE("adaptive pools match a naive reference, also when upsampling", "[ops][pool]") {
    Tensor x2 = random_input({2, 3, 11, 9}, 5);
    for (Dims out : {Dims{3, 2}, Dims{1, 1}, Dims{11, 9}, Dims{4, 7}, Dims{15, 13}}) {
        INFO("output " << text(out));
        check_adaptive(x2, 2, out);
        check_adaptive(noncontiguous(x2), 2, out);
    }
    check_adaptive(random_input({3, 5, 4}, 6), 2, {2, 6});  // unbatched
    Tensor x3 = random_input({2, 2, 5, 6, 3}, 7);
    for (Dims out : {Dims{2, 3, 2}, Dims{1, 1, 1}, Dims{7, 4, 5}}) {
        INFO("output " << text(out));
        check_adaptive(x3, 3, out);
    }
    check_adaptive(random_input({2, 3, 4, 5}, 8), 3, {3, 3, 3});  // unbatched
    // One value for every dim; global pooling is the mean.
    require_close(adaptive_avg_pool2d(x2, {1}), mean(x2, {2, 3}, true));
}

TEST_CASE("max pool backward routes each gradient to its argmax and adds overlaps", "[ops][pool]") {
    // The centre is the maximum of all four 2x2 windows.
    Tensor x = tensor({1, 2, 3, 4, 9, 5, 6, 7, 8}, {1, 1, 3, 3}).requires_grad_();
    max_pool2d(x, {2}, {1}).backward(ones({1, 1, 2, 2}));
    require_close(x.grad(), {0, 0, 0, 0, 4, 0, 0, 0, 0});
    Tensor z = tensor({1, 2, 3, 4, 9, 5, 6, 7, 8}, {1, 1, 3, 3}).requires_grad_();
    adaptive_max_pool2d(z, {2}).backward(tensor({1, 2, 3, 4}, {1, 1, 2, 2}));
    require_close(z.grad(), {0, 0, 0, 0, 10, 0, 0, 0, 0});
}

TEST_CASE("pools: gradients match finite differences", "[ops][pool][gradcheck]") {
    auto check = [](const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
        gradcheck([&](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
    };
    Tensor a = distinct_input({2, 3, 7, 6}, 11), b = distinct_input({3, 5, 6}, 12);
    Tensor c = distinct_input({2, 2, 5, 4, 3}, 13);
    for (const Tensor& x : {a, noncontiguous(a), b}) {
        INFO("shape " << text(x.shape()));
        check([](const Tensor& t) { return max_pool2d(t, {3}, {2}, {1}); }, x);
        check(
            [](const Tensor& t) {
                return max_pool2d(t, {2, 3}, {1, 2}, {1, 0}, {2, 1}, true);
            },
            x);
        check([](const Tensor& t) { return avg_pool2d(t, {3}, {2}, {1}, true); }, x);
        check([](const Tensor& t) { return avg_pool2d(t, {3, 2}, {1}, {1}, false, false); }, x);
        check([](const Tensor& t) { return avg_pool2d(t, {2}, {}, {1}, false, true, 3); }, x);
        check([](const Tensor& t) { return adaptive_avg_pool2d(t, {3, 4}); }, x);
        check([](const Tensor& t) { return adaptive_avg_pool2d(t, {9, 7}); }, x);
        check([](const Tensor& t) { return adaptive_avg_pool2d(t, {1}); }, x);  // global
        check([](const Tensor& t) { return adaptive_max_pool2d(t, {4, 5}); }, x);
    }
    for (const Tensor& x : {c, noncontiguous(c), distinct_input({2, 5, 4, 5}, 14)}) {
        INFO("shape " << text(x.shape()));
        check([](const Tensor& t) { return max_pool3d(t, {3, 2, 2}, {2, 1, 2}, {1, 1, 1}); }, x);
        check([](const Tensor& t) { return avg_pool3d(t, {2}, {1}, {1}, true, false); }, x);
        check([](const Tensor& t) { return adaptive_avg_pool3d(t, {2, 3, 2}); }, x);
        check([](const Tensor& t) { return adaptive_avg_pool3d(t, {1}); }, x);
        check([](const Tensor& t) { return adaptive_max_pool3d(t, {3, 2, 4}); }, x);
    }
}

TEST_CASE("pools: errors name the op and the bad values", "[ops][pool]") {
    Tensor x = zeros({2, 3, 8, 8});
    require_error(
        [&] {
            max_pool2d(zeros({8, 8}), {2});
        },
        {"[max_pool2d]", "(B, C, H, W)", "[8, 8]"});
    require_error([&] { max_pool3d(zeros({3, 8}), {2}); }, {"[max_pool3d]", "[3, 8]"});
    require_error([&] { max_pool2d(x, {0}); }, {"[max_pool2d]", "kernel_size"});
    require_error([&] { max_pool2d(x, {2}, {0}); }, {"[max_pool2d]", "stride [0, 0]"});
    require_error([&] { max_pool2d(x, {3}, {1}, {2}); },
                  {"[max_pool2d]", "padding [2, 2]", "half"});
    require_error([&] { avg_pool2d(x, {2}, {1}, {-1}); }, {"[avg_pool2d]", "padding"});
    require_error([&] { max_pool2d(x, {2, 2, 2}); }, {"[max_pool2d]", "kernel_size", "1 or 2"});
    require_error([&] { max_pool2d(x, {2}, {}, {0}, {0}); }, {"[max_pool2d]", "dilation"});
    require_error([&] { avg_pool2d(x, {9}); }, {"[avg_pool2d]", "too small"});
    require_error([&] { avg_pool2d(x, {2}, {}, {0}, false, true, 0); },
                  {"[avg_pool2d]", "divisor_override"});
    require_error([&] { adaptive_avg_pool2d(x, {0, 2}); }, {"[adaptive_avg_pool2d]", "positive"});
    require_error([&] { adaptive_max_pool3d(zeros({2, 3}), {2}); }, {"[adaptive_max_pool3d]"});
    require_error(
        [&] {
            max_pool2d(arange(0, 16).reshape({1, 4, 4}), {2});
        },
        {"[max_pool2d]", "int64"});
    require_error([&] { avg_pool2d(zeros({2, 0, 4, 4}), {2}); }, {"[avg_pool2d]", "non-zero"});
}

TEST_CASE("pools: the PyTorch oracle vectors pass with their tolerances", "[ops][pool][oracle]") {
    require_oracle_vectors({"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"});
}
