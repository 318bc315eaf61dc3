// Sliding-window and slice-by-slice inference (train/inference.h): identity predictors give the
// input back (padding included); window starts and constant/Gaussian blending against values
// worked out by hand; the Gaussian map against its formula; batching of windows and of slices
// does not change results; no gradients are recorded; every bad argument is named.
#include <cmath>

#include "support/gradcheck.h"
#include "train/inference.h"

using namespace lumen;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using train::SlidingWindowOptions;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
    return max(abs(sub(a.to(DType::float64), b.to(DType::float64)))).item<double>();
}

SlidingWindowOptions window_options(std::vector<int64_t> roi, double overlap,
                                    const std::string& mode = "constant",
                                    int64_t sw_batch_size = 1) {
    SlidingWindowOptions o;
    o.roi_size = std::move(roi);
    o.overlap = overlap;
    o.mode = mode;
    o.sw_batch_size = sw_batch_size;
    return o;
}

// An image whose value at (h, w) is 100 h + w, so a window's first element names its start.
Tensor coordinates(int64_t height, int64_t width) {
    std::vector<double> values;
    for (int64_t h = 0; h < height; ++h)
        for (int64_t w = 0; w < width; ++w) values.push_back(double(100 * h + w));
    return from_vector(values, {1, 1, height, width}).to(DType::float32);
}

// Fills window number n (counted over all calls) with the constant n.
struct Counter {
    int64_t windows = 0, calls = 0;
    Tensor operator()(const Tensor& x) {
        ++calls;
        std::vector<Tensor> parts;
        Shape one = x.shape();
        one[0] = 1;
        for (int64_t i = 0; i < x.size(0); ++i)
            parts.push_back(full(one, double(windows++), DType::float32));
        return cat(parts, 0);
    }
};

}  // namespace

TEST_CASE("sliding window: the identity gives the input back", "[inference]") {
    auto identity = [](const Tensor& x) { return x; };
    struct Case {
        Shape shape;
        std::vector<int64_t> roi;
    };
    // 10 x 7 and 9 x 6 x 5 are no multiple of the step; 3 x 4 and 3 x 2 x 5 are smaller than
    // the window along some dims (padded); -1 takes the image's size.
    const std::vector<Case> cases{{{2, 1, 10, 7}, {4, 4}},
                                  {{1, 2, 9, 6, 5}, {4, 4, 4}},
                                  {{1, 1, 3, 4}, {4, 4}},
                                  {{1, 1, 3, 2, 5}, {4, 4, 4}},
                                  {{1, 3, 8, 5}, {-1, 3}}};
    for (const Case& c : cases)
        for (double overlap : {0.0, 0.25, 0.5})
            for (const char* mode : {"constant", "gaussian"})
                for (int64_t sw_batch_size : {1, 3}) {
                    Tensor x = testing::random_input(c.shape, 5).to(DType::float32);
                    auto o = window_options(c.roi, overlap, mode, sw_batch_size);
                    Tensor y = train::sliding_window_inference(x, identity, o);
                    REQUIRE(y.shape() == x.shape());
                    REQUIRE(y.dtype() == DType::float32);
                    // sum(w x) / sum(w) is x up to float rounding.
                    CHECK(max_abs_diff(y, x) < 1e-6);
                }
}

TEST_CASE("sliding window: window starts in 2-D, worked out by hand", "[inference]") {
    // 10 x 7, window 4 x 4, overlap 0.5: step int(4 * 0.5) = 2. Along H: 0 2 4 6 (6 + 4 reaches
    // 10). Along W: 0 2, then 4 shifted back to 7 - 4 = 3. Row-major: 12 windows.
    std::vector<double> firsts;
    auto record = [&](const Tensor& x) {
        REQUIRE(x.shape() == Shape{1, 1, 4, 4});
        firsts.push_back(x.at<double>({0, 0, 0, 0}));
        return x;
    };
    train::sliding_window_inference(coordinates(10, 7), record, window_options({4, 4}, 0.5));
    CHECK(firsts == std::vector<double>{0, 2, 3, 200, 202, 203, 400, 402, 403, 600, 602, 603});

    // Overlap 0.9: int(4 * 0.1) = 0, so the step is 1. roi -1 along H is the whole height 4,
    // and a window as large as the image is the only one there.
    firsts.clear();
    train::sliding_window_inference(coordinates(4, 7), record, window_options({-1, 4}, 0.9));
    CHECK(firsts == std::vector<double>{0, 1, 2, 3});
}

TEST_CASE("sliding window: window starts in 3-D, worked out by hand", "[inference]") {
    // 5 x 4 x 6, window 3 x 4 x 4, overlap 0.25. D: step int(2.25) = 2, starts 0 2. H: the
    // window is the image, one start. W: step 3, starts 0, then 3 shifted back to 2.
    std::vector<std::vector<int64_t>> starts;
    auto record = [&](const Tensor& x) {
        // Voxel value 100 d + 10 h + w.
        const int64_t v = int64_t(x.at<float>({0, 0, 0, 0, 0}));
        starts.push_back({v / 100, v / 10 % 10, v % 10});
        return x;
    };
    std::vector<double> values;
    for (int64_t i = 0; i < 5 * 4 * 6; ++i)
        values.push_back(double(i / 24 * 100 + i / 6 % 4 * 10 + i % 6));
    Tensor volume = from_vector(values, {1, 1, 5, 4, 6});
    Tensor y = train::sliding_window_inference(volume, record, window_options({3, 4, 4}, 0.25));
    CHECK(starts == std::vector<std::vector<int64_t>>{{0, 0, 0}, {0, 0, 2}, {2, 0, 0}, {2, 0, 2}});
    CHECK(max_abs_diff(y, volume) < 1e-4);
}

TEST_CASE("sliding window: constant blending averages the windows, by hand", "[inference]") {
    // Windows as above (H starts 0 2 4 6, W starts 0 2 3); window (hi, wi) has number
    // 3 hi + wi, one window per call, so the counter is the call index. H row h is covered by
    // hi in {h/2 - 1, h/2} within 0..3; W: w 0-1 by {0}, 2 by {0, 1}, 3 by {0, 1, 2}, 4-5 by
    // {1, 2}, 6 by {2}. A voxel's value is 3 mean(hi) + mean(wi).
    Counter counter;
    Tensor y = train::sliding_window_inference(zeros({1, 1, 10, 7}), std::ref(counter),
                                               window_options({4, 4}, 0.5));
    CHECK(counter.calls == 12);
    REQUIRE(y.shape() == Shape{1, 1, 10, 7});
    auto at = [&](int64_t h, int64_t w) { return y.at<double>({0, 0, h, w}); };
    CHECK(at(0, 0) == 0.0);
    CHECK(at(0, 3) == 1.0);   // hi {0}, wi {0, 1, 2}
    CHECK(at(2, 2) == 2.0);   // hi {0, 1}, wi {0, 1}: 1.5 + 0.5
    CHECK(at(3, 3) == 2.5);   // hi {0, 1}, wi {0, 1, 2}: 1.5 + 1
    CHECK(at(5, 4) == 6.0);   // hi {1, 2}, wi {1, 2}: 4.5 + 1.5
    CHECK(at(7, 6) == 9.5);   // hi {2, 3}, wi {2}: 7.5 + 2
    CHECK(at(9, 6) == 11.0);  // hi {3}, wi {2}
    // Every voxel, from the same starts.
    const std::vector<int64_t> h_starts{0, 2, 4, 6}, w_starts{0, 2, 3};
    for (int64_t h = 0; h < 10; ++h)
        for (int64_t w = 0; w < 7; ++w) {
            double sum = 0, count = 0;
            for (int64_t hi = 0; hi < 4; ++hi)
                for (int64_t wi = 0; wi < 3; ++wi)
                    if (h >= h_starts[hi] && h < h_starts[hi] + 4 && w >= w_starts[wi] &&
                        w < w_starts[wi] + 4) {
                        sum += double(3 * hi + wi);
                        count += 1;
                    }
            CHECK_THAT(at(h, w), WithinAbs(sum / count, 1e-6));
        }
}

TEST_CASE("sliding window: Gaussian blending, by hand", "[inference]") {
    // 1 x 6, window 1 x 4, overlap 0.5: starts 0 and 2 along W, predictions 0 and 1. sigma =
    // 0.125 * 4 = 0.5, centre 1.5: the weights along the window are exp(-(d^2 - 1/4) / (2
    // sigma^2)) for d = 1.5 0.5 0.5 1.5, i.e. e^-4, 1, 1, e^-4 (H: one value, 1).
    const double edge = std::exp(-4.0);
    Counter counter;
    Tensor y = train::sliding_window_inference(zeros({1, 1, 1, 6}), std::ref(counter),
                                               window_options({1, 4}, 0.5, "gaussian"));
    // w 2: window 0 at its position 2 (weight 1), window 1 at its position 0 (e^-4).
    CHECK_THAT(y.at<double>({0, 0, 0, 2}), WithinAbs(edge / (1 + edge), 1e-6));
    CHECK_THAT(y.at<double>({0, 0, 0, 3}), WithinAbs(1 / (1 + edge), 1e-6));
    CHECK(y.at<double>({0, 0, 0, 0}) == 0.0);
    CHECK(y.at<double>({0, 0, 0, 5}) == 1.0);

    // sigma_scale 0.01: the edge weights underflow and are clamped at 1e-3.
    Counter narrow;
    auto o = window_options({1, 4}, 0.5, "gaussian");
    o.sigma_scale = 0.01;
    y = train::sliding_window_inference(zeros({1, 1, 1, 6}), std::ref(narrow), o);
    CHECK_THAT(y.at<double>({0, 0, 0, 2}), WithinAbs(1e-3 / (1 + 1e-3), 1e-6));
}

TEST_CASE("sliding window: an input smaller than the window is padded around it", "[inference]") {
    // H 3 in a window of 6: 3 rows of padding, 1 before and 2 after; W 4 fits.
    Tensor x = testing::random_input({1, 1, 3, 4}, 3).to(DType::float32);
    Tensor seen;
    auto record = [&](const Tensor& window) {
        seen = window.clone();
        return window;
    };
    auto o = window_options({6, 4}, 0.25);
    o.padding_value = 7.0;
    Tensor y = train::sliding_window_inference(x, record, o);
    REQUIRE(seen.shape() == Shape{1, 1, 6, 4});
    CHECK(max_abs_diff(seen.narrow(2, 0, 1), full({1, 1, 1, 4}, 7.0)) == 0);
    CHECK(max_abs_diff(seen.narrow(2, 1, 3), x) == 0);
    CHECK(max_abs_diff(seen.narrow(2, 4, 2), full({1, 1, 2, 4}, 7.0)) == 0);
    CHECK(max_abs_diff(y, x) == 0);
}

TEST_CASE("sliding window: the Gaussian map against its formula", "[inference]") {
    // roi 5 x 4, sigma_scale 0.5: sigmas 2.5 and 2, centres 2 and 1.5. The maximum is at
    // (2, 1) and (2, 2): exp(-0.25 / 8).
    Tensor map = train::gaussian_importance_map({5, 4}, 0.5);
    REQUIRE(map.shape() == Shape{5, 4});
    REQUIRE(map.dtype() == DType::float32);
    auto g = [](double x, double c, double s) {
        return std::exp(-(x - c) * (x - c) / (2 * s * s));
    };
    const double top = g(1, 1.5, 2);
    for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 4; ++j) {
            const double expected = g(double(i), 2, 2.5) * g(double(j), 1.5, 2) / top;
            CHECK_THAT(map.at<double>({i, j}), WithinAbs(expected, 1e-6));
            // Symmetric about the centre along both dims.
            CHECK(map.at<float>({i, j}) == map.at<float>({4 - i, j}));
            CHECK(map.at<float>({i, j}) == map.at<float>({i, 3 - j}));
        }
    CHECK(max(map).item<double>() == 1.0);
    CHECK(map.at<double>({2, 1}) == 1.0);

    // 3-D, sigma_scale 0.25: sigmas 0.75, 0.5, 1; centres 1, 0.5, 1.5.
    Tensor cube = train::gaussian_importance_map({3, 2, 4}, 0.25);
    const double top3 = g(0, 0.5, 0.5) * g(1, 1.5, 1);
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 2; ++j)
            for (int64_t k = 0; k < 4; ++k) {
                const double value =
                    g(double(i), 1, 0.75) * g(double(j), 0.5, 0.5) * g(double(k), 1.5, 1) / top3;
                CHECK_THAT(cube.at<double>({i, j, k}), WithinAbs(std::max(value, 1e-3), 1e-6));
            }
    CHECK(max(cube).item<double>() == 1.0);

    // Tails below 1e-3 are raised to 1e-3: roi 64, sigma 3.2, exp(-31.5^2 / 20.48) ~ 1e-21.
    Tensor line = train::gaussian_importance_map({64}, 0.05);
    CHECK(min(line).item<double>() == double(float(1e-3)));
    CHECK(line.at<double>({0}) == double(float(1e-3)));
    CHECK(max(line).item<double>() == 1.0);
}

TEST_CASE("sliding window: batching windows, batch items and channels", "[inference]") {
    // 3 channels from 1: x, x^2 and the window's mean, which depends on where the window is.
    auto three = [](const Tensor& x) {
        Tensor m = mean(x, {2, 3}, true).expand(x.shape());
        return cat({x, mul(x, x), m}, 1);
    };
    Tensor x = testing::random_input({2, 1, 11, 9}, 7).to(DType::float32);
    auto o = window_options({5, 5}, 0.25, "gaussian");
    Tensor one = train::sliding_window_inference(x, three, o);
    REQUIRE(one.shape() == Shape{2, 3, 11, 9});
    for (int64_t sw_batch_size : {3, 100}) {
        o.sw_batch_size = sw_batch_size;
        CHECK(max_abs_diff(train::sliding_window_inference(x, three, o), one) == 0);
    }
    CHECK(max_abs_diff(one.narrow(1, 1, 1), mul(x, x)) < 1e-6);

    // Windows run over (item, grid): 2 items x 12 windows in calls of 5, 5, 5, 5, 4; item 1
    // gets the numbers 12..23, so its voxels are item 0's plus 12.
    Counter counter;
    std::vector<int64_t> sizes;
    auto sized = [&](const Tensor& t) {
        sizes.push_back(t.size(0));
        return counter(t);
    };
    Tensor y = train::sliding_window_inference(zeros({2, 1, 10, 7}), sized,
                                               window_options({4, 4}, 0.5, "constant", 5));
    CHECK(sizes == std::vector<int64_t>{5, 5, 5, 5, 4});
    CHECK(max_abs_diff(y.narrow(0, 1, 1), add(y.narrow(0, 0, 1), 12.0)) < 1e-5);
    CHECK(y.at<double>({0, 0, 3, 3}) == 2.5);
}

TEST_CASE("sliding window: integer and float64 inputs, and no gradients", "[inference]") {
    Tensor x = from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {1, 1, 2, 3});
    DType seen = DType::int64;
    auto identity = [&](const Tensor& t) {
        seen = t.dtype();
        return t;
    };
    Tensor y = train::sliding_window_inference(x, identity, window_options({2, 2}, 0.5));
    CHECK(seen == DType::float32);
    CHECK(max_abs_diff(y, x) == 0);
    y = train::sliding_window_inference(x.to(DType::float64), identity,
                                        window_options({2, 2}, 0.5));
    CHECK(seen == DType::float64);
    CHECK(y.dtype() == DType::float32);

    Tensor weight = full({1}, 2.0).requires_grad_();
    Tensor input = testing::random_input({1, 1, 6, 6}, 2).to(DType::float32).requires_grad_();
    auto scaled = [&](const Tensor& t) { return mul(t, weight); };
    y = train::sliding_window_inference(input, scaled, window_options({4, 4}, 0.5));
    CHECK_FALSE(y.requires_grad());
    CHECK(grad_enabled());
    CHECK(max_abs_diff(y, mul(input.detach(), 2.0)) < 1e-6);
}

TEST_CASE("slice by slice: along each axis", "[inference]") {
    // Values 0..7 in a 2 x 2 x 2 volume (d, h, w) -> 4 d + 2 h + w. A predictor that adds each
    // slice's mean shows which axis was cut: along D the slice means are 1.5 and 5.5, along H
    // 2.5 and 4.5 (0 1 4 5; 2 3 6 7), along W 3 and 4 (0 2 4 6; 1 3 5 7).
    Tensor v = from_vector(std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 2, 2, 2});
    auto plus_mean = [](const Tensor& x) { return add(x, mean(x, {1, 2, 3}, true)); };
    const std::vector<std::vector<double>> expected{{1.5, 2.5, 3.5, 4.5, 9.5, 10.5, 11.5, 12.5},
                                                    {2.5, 3.5, 6.5, 7.5, 6.5, 7.5, 10.5, 11.5},
                                                    {3, 5, 5, 7, 7, 9, 9, 11}};
    for (int64_t axis : {2, 3, 4}) {
        Tensor y = train::slice_by_slice_inference(v, plus_mean, axis, 1);
        REQUIRE(y.shape() == Shape{1, 1, 2, 2, 2});
        REQUIRE(y.dtype() == DType::float32);
        CHECK(y.to_vector<double>() == expected[size_t(axis - 2)]);
    }

    // A larger volume with batches that do not divide the slice counts, against the same
    // predictors applied through ops.
    Tensor big = testing::random_input({2, 3, 3, 4, 5}, 9).to(DType::float32);
    auto twice = [](const Tensor& x) { return mul(x, 2.0); };
    for (int64_t axis : {2, 3, 4})
        for (int64_t batch : {1, 2, 3, 10}) {
            CHECK(max_abs_diff(train::slice_by_slice_inference(big, twice, axis, batch),
                               mul(big, 2.0)) == 0);
            std::vector<int64_t> other;
            for (int64_t d = 1; d <= 4; ++d)
                if (d != axis) other.push_back(d);
            CHECK(max_abs_diff(train::slice_by_slice_inference(big, plus_mean, axis, batch),
                               add(big, mean(big, other, true))) < 1e-6);
        }
}

TEST_CASE("slice by slice: call order and more output channels", "[inference]") {
    // B 2, D 3, 2 slices per call: call 1 holds (item 0, d 0), (0, 1), (1, 0), (1, 1) as rows
    // 0..3, call 2 holds (0, 2), (1, 2) as rows 4 and 5. Two output channels from one.
    Counter counter;
    auto two = [&](const Tensor& x) {
        REQUIRE(x.shape()[1] == 1);
        Tensor c = counter(x);
        return cat({c, neg(c)}, 1);
    };
    Tensor y = train::slice_by_slice_inference(zeros({2, 1, 3, 2, 2}), two, 2, 2);
    REQUIRE(y.shape() == Shape{2, 2, 3, 2, 2});
    CHECK(counter.calls == 2);
    const double row[2][3] = {{0, 1, 4}, {2, 3, 5}};
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t d = 0; d < 3; ++d) {
            CHECK(y.at<double>({b, 0, d, 1, 0}) == row[b][d]);
            CHECK(y.at<double>({b, 1, d, 0, 1}) == -row[b][d]);
        }
}

TEST_CASE("inference: bad arguments are named", "[inference]") {
    auto identity = [](const Tensor& x) { return x; };
    auto call = [&](const Tensor& x, const SlidingWindowOptions& o,
                    const train::Predictor& p = nullptr) {
        return train::sliding_window_inference(x, p ? p : train::Predictor(identity), o);
    };
    Tensor x = zeros({1, 1, 8, 8});
    auto o = window_options({4, 4}, 0.5);
    CHECK_THROWS_WITH(call(Tensor(), o),
                      Contains("[sliding_window_inference]") && Contains("undefined"));
    CHECK_THROWS_WITH(train::sliding_window_inference(x, nullptr, o), Contains("empty function"));
    CHECK_THROWS_WITH(call(zeros({1, 8, 8}), o), Contains("expects an input (B, C, H, W)"));
    CHECK_THROWS_WITH(call(zeros({1, 0, 8, 8}), o), Contains("no empty dim"));
    CHECK_THROWS_WITH(call(x, window_options({4}, 0.5)), Contains("one value per spatial dim"));
    for (double overlap : {1.0, -0.1, std::nan("")})
        CHECK_THROWS_WITH(call(x, window_options({4, 4}, overlap)), Contains("overlap must be"));
    CHECK_THROWS_WITH(call(x, window_options({4, 4}, 0.5, "cosine")),
                      Contains("'constant' or 'gaussian', got 'cosine'"));
    for (double sigma : {0.0, -1.0, double(INFINITY)}) {
        auto bad = o;
        bad.sigma_scale = sigma;
        CHECK_THROWS_WITH(call(x, bad), Contains("sigma_scale must be"));
    }
    CHECK_THROWS_WITH(call(x, window_options({4, 4}, 0.5, "constant", 0)),
                      Contains("sw_batch_size must be >= 1, got 0"));
    auto padded = o;
    padded.padding_value = NAN;
    CHECK_THROWS_WITH(call(x, padded), Contains("padding_value must be finite"));
    CHECK_THROWS_WITH(call(x, window_options({int64_t(1) << 40, int64_t(1) << 40}, 0.5)),
                      Contains("too many elements"));

    // Predictor outputs.
    auto shrink = [](const Tensor& t) { return t.narrow(2, 0, 2); };
    CHECK_THROWS_WITH(call(x, o, shrink), Contains("must give (N, C_out, *window) = (1, C_out, "
                                                   "[4, 4]), got [1, 1, 2, 4]"));
    auto batch_of_two = [](const Tensor& t) { return cat({t, t}, 0); };
    CHECK_THROWS_WITH(call(x, o, batch_of_two), Contains("got [2, 1, 4, 4]"));
    CHECK_THROWS_WITH(call(x, o, [](const Tensor&) { return Tensor(); }),
                      Contains("returned an undefined tensor"));
    int calls = 0;
    auto growing = [&](const Tensor& t) { return ++calls == 1 ? t : cat({t, t}, 1); };
    CHECK_THROWS_WITH(call(x, o, growing), Contains("gave 1 channels on its first call and 2"));

    // Slice by slice.
    Tensor v = zeros({1, 1, 2, 3, 4});
    CHECK_THROWS_WITH(train::slice_by_slice_inference(Tensor(), identity),
                      Contains("[slice_by_slice_inference] the volume is an undefined"));
    CHECK_THROWS_WITH(train::slice_by_slice_inference(v, nullptr), Contains("empty function"));
    CHECK_THROWS_WITH(train::slice_by_slice_inference(x, identity), Contains("expects a volume"));
    CHECK_THROWS_WITH(train::slice_by_slice_inference(zeros({1, 1, 0, 2, 2}), identity),
                      Contains("no empty dim"));
    for (int64_t axis : {1, 5, -1})
        CHECK_THROWS_WITH(train::slice_by_slice_inference(v, identity, axis),
                          Contains("axis must be 2, 3 or 4"));
    CHECK_THROWS_WITH(train::slice_by_slice_inference(v, identity, 2, 0),
                      Contains("batch must be >= 1, got 0"));
    auto transpose = [](const Tensor& t) { return t.transpose(2, 3); };
    CHECK_THROWS_WITH(train::slice_by_slice_inference(v, transpose, 2),
                      Contains("(1, C_out, [3, 4]), got [1, 1, 4, 3]"));
    calls = 0;
    CHECK_THROWS_WITH(train::slice_by_slice_inference(v, growing, 2),
                      Contains("[slice_by_slice_inference] the predictor gave 1 channels"));

    // The Gaussian map.
    CHECK_THROWS_WITH(train::gaussian_importance_map({}, 0.1), Contains("1 to 3 values"));
    CHECK_THROWS_WITH(train::gaussian_importance_map({2, 2, 2, 2}, 0.1), Contains("1 to 3 values"));
    CHECK_THROWS_WITH(train::gaussian_importance_map({4, 0}, 0.1),
                      Contains("[gaussian_importance_map] roi_size values must be >= 1"));
    CHECK_THROWS_WITH(train::gaussian_importance_map({4, 4}, 0.0), Contains("sigma_scale"));
}
