// interpolate: hand-computed values (checked against PyTorch 1.13), a naive float64 reference
// that sums the 2^k corner products of PyTorch's per-dim source positions, the scale_factor
// rule, upsampling from 1x1(x1), gradients against finite differences, errors, and the
// PyTorch oracle vectors.
#include <cmath>
#include <string>

#include "conformance/check_vectors.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

struct Tap {
    int64_t index0 = 0, index1 = 0;
    double lambda0 = 1, lambda1 = 0;
};

// PyTorch's source position for output o (UpSample.h): nearest with a float scale, linear with
// half-pixel centres clamped at 0 or with aligned corners; scale_factor 0 means "from sizes".
Tap reference_tap(const std::string& mode, int64_t o, int64_t in, int64_t out, bool align,
                  double scale_factor) {
    Tap tap;
    if (mode == "nearest" || mode == "nearest-exact") {
        // The float64 form of PyTorch's NCHW kernel: scale in double, position through float.
        double scale = scale_factor > 0 ? 1.0 / scale_factor : double(in) / double(out);
        float position = mode == "nearest" ? float(scale * double(o)) : float((o + 0.5) * scale);
        tap.index0 = tap.index1 = std::min(int64_t(std::floor(position)), in - 1);
        return tap;
    }
    if (in == out) {
        tap.index0 = tap.index1 = o;
        return tap;
    }
    double scale = align ? (out > 1 ? double(in - 1) / double(out - 1) : 0.0)
                         : (scale_factor > 0 ? 1.0 / scale_factor : double(in) / double(out));
    double source = align ? scale * double(o) : std::max(scale * (o + 0.5) - 0.5, 0.0);
    tap.index0 = std::min(int64_t(source), in - 1);
    tap.index1 = std::min(tap.index0 + 1, in - 1);
    tap.lambda1 = source - double(tap.index0);
    tap.lambda0 = 1 - tap.lambda1;
    return tap;
}

// y[b, c, o...] = sum over corners of prod(lambda) * x[b, c, index...], naively.
std::vector<double> reference(const Tensor& x, const Dims& out, const std::string& mode, bool align,
                              const std::vector<double>& scale_factor = {}) {
    int spatial = int(x.ndim()) - 2;
    std::vector<double> values = x.to_vector<double>(), result;
    Dims in(x.shape().begin() + 2, x.shape().end());
    int64_t in_plane = 1, out_plane = 1;
    for (int i = 0; i < spatial; ++i) in_plane *= in[size_t(i)], out_plane *= out[size_t(i)];
    for (int64_t p = 0; p < x.size(0) * x.size(1); ++p) {
        for (int64_t flat = 0; flat < out_plane; ++flat) {
            std::vector<Tap> taps(static_cast<size_t>(spatial));
            for (int i = spatial - 1, rest = int(flat); i >= 0; --i) {
                double factor = scale_factor.empty() ? 0.0 : scale_factor[size_t(i)];
                taps[size_t(i)] = reference_tap(mode, rest % out[size_t(i)], in[size_t(i)],
                                                out[size_t(i)], align, factor);
                rest /= int(out[size_t(i)]);
            }
            double total = 0;
            for (int corner = 0; corner < (1 << spatial); ++corner) {
                double weight = 1;
                int64_t at = 0;
                for (int i = 0; i < spatial; ++i) {
                    bool second = (corner >> i) & 1;
                    const Tap& t = taps[size_t(i)];
                    weight *= second ? t.lambda1 : t.lambda0;
                    at = at * in[size_t(i)] + (second ? t.index1 : t.index0);
                }
                total += weight * values[size_t(p * in_plane + at)];
            }
            result.push_back(total);
        }
    }
    return result;
}

Tensor run(const Tensor& x, const Dims& size, const std::string& mode,
           std::optional<bool> align = std::nullopt) {
    return interpolate(x, size, {}, mode, align);
}

}  // namespace

TEST_CASE("interpolate: hand-computed values match PyTorch", "[ops][interpolate]") {
    Tensor ramp = arange(0, 4, 1, DType::float64).reshape({1, 1, 4});
    // nearest: src = floor(dst * 4 / 6), but with scale_factor 1.7 the scale is 1 / 1.7.
    require_close(run(ramp, {6}, "nearest"), {0, 0, 1, 2, 2, 3});
    require_close(interpolate(ramp, {}, {1.7}), {0, 0, 1, 1, 2, 2});
    require_close(run(ramp, {6}, "nearest-exact"), {0, 1, 1, 2, 3, 3});
    require_close(run(ramp, {3}, "area"), {0.5, 1.5, 2.5});
    // The nearest scale has the input's precision: 11 * (26 / 22) is 13 in double but just
    // under 13 in float, so PyTorch picks input 13 for float64 and 12 for float32.
    Tensor long_ramp = arange(0, 26, 1, DType::float64).reshape({1, 1, 26});
    CHECK(run(long_ramp, {22}, "nearest").at<double>({0, 0, 11}) == 13.0);
    CHECK(run(long_ramp.to(DType::float32), {22}, "nearest").at<double>({0, 0, 11}) == 12.0);
    // linear, half-pixel: 2 -> 4 gives src -0.25 (clamped), 0.25, 0.75, 1.25.
    Tensor pair = tensor({1, 3}, {1, 1, 2});
    require_close(run(pair, {4}, "linear"), {1, 1.5, 2.5, 3});
    require_close(run(pair, {3}, "linear", true), {1, 2, 3});
    // scale_factor 2.5 maps through 1 / 2.5 = 0.4, not 3 / 7.
    Tensor three = tensor({1, 5, 2}, {1, 1, 3});
    require_close(interpolate(three, {}, {2.5}, "linear", false), {1, 1.4, 3, 4.6, 4.1, 2.9, 2});
    require_close(interpolate(three, {}, {2.5}, "linear", false, true),
                  {1, 11.0 / 7, 23.0 / 7, 5, 26.0 / 7, 17.0 / 7, 2});
    // bilinear with aligned corners: the centre of a 2x2 -> 3x3 upsample is the mean.
    Tensor square = tensor({1, 2, 3, 4}, {1, 1, 2, 2});
    require_close(run(square, {3}, "bilinear", true), {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
    require_close(run(square, {4}, "nearest"), {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

TEST_CASE("interpolate: upsampling from 1x1 and 1x1x1 copies the value", "[ops][interpolate]") {
    Tensor one2 = tensor({2.5, -1}, {1, 2, 1, 1});
    Tensor one3 = tensor({2.5, -1}, {2, 1, 1, 1, 1});
    for (bool align : {false, true}) {
        Tensor y2 = run(one2, {3, 4}, "bilinear", align);
        require_close(y2.narrow(1, 0, 1), std::vector<double>(12, 2.5));
        require_close(y2.narrow(1, 1, 1), std::vector<double>(12, -1));
        Tensor y3 = run(one3, {2, 3, 2}, "trilinear", align);
        require_close(y3.narrow(0, 1, 1), std::vector<double>(12, -1));
    }
    require_close(run(one2, {2}, "nearest").narrow(1, 0, 1), {2.5, 2.5, 2.5, 2.5});
}

TEST_CASE("interpolate: every mode matches a naive reference", "[ops][interpolate]") {
    struct Case {
        Shape shape;
        Dims out;
        std::string mode;
    };
    std::vector<Case> cases = {
        {{2, 3, 7}, {15}, "linear"},
        {{2, 3, 9}, {4}, "linear"},
        {{2, 3, 7, 5}, {15, 8}, "bilinear"},
        {{1, 2, 9, 6}, {4, 11}, "bilinear"},
        {{2, 2, 5, 1}, {5, 3}, "bilinear"},
        {{1, 2, 3, 4, 5}, {5, 7, 4}, "trilinear"},
        {{2, 1, 4, 3, 2}, {2, 3, 5}, "trilinear"},
        {{2, 3, 7, 5}, {14, 10}, "nearest"},
        {{2, 3, 7, 5}, {5, 12}, "nearest"},
        {{1, 2, 3, 4, 5}, {7, 3, 6}, "nearest"},
        {{2, 3, 11}, {4}, "nearest"},
        {{2, 3, 7, 5}, {9, 3}, "nearest-exact"},
    };
    for (const Case& c : cases) {
        Tensor base = random_input(c.shape, 21);
        for (const Tensor& x : {base, noncontiguous(base)}) {
            bool linear = c.mode != "nearest" && c.mode != "nearest-exact";
            for (bool align : linear ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
                INFO(c.mode << " " << text(x.shape()) << " -> " << text(c.out) << " align "
                            << align);
                std::optional<bool> flag;
                if (linear) flag = align;
                std::vector<double> want = reference(x, c.out, c.mode, align);
                require_close(run(x, c.out, c.mode, flag), want, 1e-12, 1e-13);
                require_close(run(x.to(DType::float32), c.out, c.mode, flag), want, 1e-5, 1e-6);
            }
        }
    }
    // scale_factor per dim, kept (PyTorch default) or recomputed from the sizes.
    Tensor x = random_input({2, 2, 5, 6}, 22);
    for (std::string mode : {"bilinear", "nearest"}) {
        std::optional<bool> flag;
        if (mode == "bilinear") flag = false;
        Dims out = {int64_t(5 * 1.7), int64_t(6 * 2.4)};
        INFO(mode);
        require_close(interpolate(x, {}, {1.7, 2.4}, mode, flag),
                      reference(x, out, mode, false, {1.7, 2.4}), 1e-12, 1e-13);
        require_close(interpolate(x, {}, {1.7, 2.4}, mode, flag, true),
                      reference(x, out, mode, false), 1e-12, 1e-13);
    }
    // area is the adaptive average pool.
    require_close(interpolate(x, {3, 4}, {}, "area"), adaptive_avg_pool2d(x, {3, 4}));
    require_close(interpolate(x, {}, {0.5}, "area"), adaptive_avg_pool2d(x, {2, 3}));
}

TEST_CASE("interpolate: gradients match finite differences", "[ops][interpolate][gradcheck]") {
    auto check = [](const Tensor& x, const Dims& size, const std::string& mode,
                    std::optional<bool> align, const std::vector<double>& scale = {}) {
        INFO(mode << " " << text(x.shape()) << " -> " << text(size));
        gradcheck(
            [&](const std::vector<Tensor>& in) {
                return interpolate(in[0], size, scale, mode, align);
            },
            {x});
    };
    Tensor x1 = random_input({2, 3, 5}, 31), x2 = random_input({2, 2, 5, 4}, 32);
    Tensor x3 = random_input({1, 2, 3, 4, 3}, 33);
    for (const Tensor& x : {x2, noncontiguous(x2)}) {
        for (bool align : {false, true}) {
            check(x, {9, 7}, "bilinear", align);
            check(x, {3, 3}, "bilinear", align);
        }
        check(x, {}, "bilinear", false, {1.5, 2.5});
        check(x, {11, 3}, "nearest", std::nullopt);
        check(x, {7, 9}, "nearest-exact", std::nullopt);
        check(x, {3, 3}, "area", std::nullopt);
    }
    for (bool align : {false, true}) {
        check(x1, {8}, "linear", align);
        check(x3, {5, 2, 6}, "trilinear", align);
        check(noncontiguous(x3), {4, 5, 2}, "trilinear", align);
        check(random_input({2, 1, 1, 1}, 34), {3, 4}, "bilinear", align);
    }
    check(x1, {12}, "nearest", std::nullopt);
    check(x3, {6, 8, 5}, "nearest", std::nullopt);
}

TEST_CASE("interpolate: errors name the op and the bad values", "[ops][interpolate]") {
    Tensor x = zeros({1, 2, 4, 4});
    require_error([&] { interpolate(x, {8}, {2.0}); }, {"[interpolate]", "only one of", "[8]"});
    require_error([&] { interpolate(x); }, {"[interpolate]", "either size or scale_factor"});
    require_error([&] { interpolate(x, {8}, {}, "trilinear"); },
                  {"[interpolate]", "trilinear", "5-D", "[1, 2, 4, 4]"});
    require_error(
        [&] {
            interpolate(zeros({1, 2, 4}), {8}, {}, "bilinear");
        },
        {"[interpolate]", "bilinear", "4-D"});
    require_error([&] { interpolate(x, {8}, {}, "nearest", true); },
                  {"[interpolate]", "align_corners", "nearest"});
    require_error(
        [&] {
            interpolate(x, {8, 8, 8}, {}, "bilinear");
        },
        {"[interpolate]", "size", "1 or 2", "[8, 8, 8]"});
    require_error([&] { interpolate(x, {8}, {}, "bicubic"); }, {"[interpolate]", "bicubic"});
    require_error([&] { interpolate(zeros({4, 4}), {8}); }, {"[interpolate]", "[4, 4]"});
    require_error([&] { interpolate(x, {0, 3}); }, {"[interpolate]", "positive", "[0, 3]"});
    require_error([&] { interpolate(x, {}, {0.1}); }, {"[interpolate]", "positive"});
    require_error([&] { interpolate(x, {8}, {}, "nearest", std::nullopt, true); },
                  {"[interpolate]", "recompute_scale_factor"});
    require_error(
        [&] {
            interpolate(arange(0, 16).reshape({1, 1, 4, 4}), {8});
        },
        {"[interpolate]", "int64"});
}

TEST_CASE("interpolate: the PyTorch oracle vectors pass with their tolerances",
          "[ops][interpolate][oracle]") {
    require_oracle_vectors({"interp_bilinear_ac0", "interp_bilinear_ac1", "interp_nearest",
                            "interp_trilinear_ac0", "interp_trilinear_ac1"});
}

TEST_CASE("pool, interpolate and pad: results do not depend on the thread count",
          "[ops][interpolate][pool][pad]") {
    // Shapes large enough to be split across threads (forward by rows, backward by planes).
    Tensor x4 = random_input({4, 16, 33, 29}, 61), x5 = random_input({2, 8, 9, 17, 15}, 62);
    std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
        {"bilinear",
         [&](const Tensor& t) {
             return interpolate(t, {61, 45}, {}, "bilinear", false);
         }},
        {"trilinear",
         [&](const Tensor& t) {
             return interpolate(t, {17, 9, 30}, {}, "trilinear", true);
         }},
        {"nearest",
         [&](const Tensor& t) {
             return interpolate(t, {50, 20});
         }},
        {"max_pool2d", [&](const Tensor& t) { return max_pool2d(t, {3}, {2}, {1}); }},
        {"avg_pool3d", [&](const Tensor& t) { return avg_pool3d(t, {3}, {2}, {1}, true, false); }},
        {"adaptive_avg_pool2d",
         [&](const Tensor& t) {
             return adaptive_avg_pool2d(t, {7, 5});
         }},
        {"adaptive_max_pool3d",
         [&](const Tensor& t) {
             return adaptive_max_pool3d(t, {4, 5, 6});
         }},
        {"pad reflect",
         [&](const Tensor& t) {
             return pad(t, {3, 2, 1, 4}, "reflect");
         }},
        {"pad constant",
         [&](const Tensor& t) {
             return pad(t, {3, -2, 1, 4}, "constant", 1.5);
         }},
    };
    int threads = get_num_threads();
    for (auto& [name, op] : ops) {
        for (const Tensor& x : {x4, x5}) {
            bool three_d =
                name == "trilinear" || name == "avg_pool3d" || name == "adaptive_max_pool3d";
            if (three_d != (x.ndim() == 5)) continue;
            INFO(name);
            std::vector<Tensor> results;
            for (int count : {1, 2}) {
                set_num_threads(count);
                Tensor leaf = x.to(DType::float32).requires_grad_();
                Tensor y = op(leaf);
                y.backward(full_like(y, 0.5));
                results.push_back(y);
                results.push_back(leaf.grad());
            }
            set_num_threads(threads);
            require_close(results[2], results[0], 0, 0);
            require_close(results[3], results[1], 0, 0);
        }
    }
}
