// Sliding-window and slice-by-slice inference (train/inference.h): identity predictors give the
// input back for every overlap, mode and size (padding included); window positions and
// blending against values worked out by hand; the Gaussian map against its formula; batching
// of windows does not change results; errors.
#include <cmath>

#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "support/gradcheck.h"
#include "train/inference.h"

using namespace lumen;
using Catch::Matchers::Contains;
using train::SlidingWindowOptions;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
    return max(abs(sub(a.to(DType::float64), b.to(DType::float64)))).item<double>();
}

}  // namespace

TEST_CASE("sliding window: the identity gives the input back", "[inference]") {
    auto identity = [](const Tensor& x) { return x; };
    for (const Shape& shape : {Shape{2, 1, 10, 7}, Shape{1, 2, 9, 6, 5}, Shape{1, 1, 3, 4}})
        for (double overlap : {0.0, 0.25, 0.5})
            for (const char* mode : {"constant", "gaussian"}) {
                Tensor x = testing::random_input(shape, 5).to(DType::float32);
                SlidingWindowOptions o;
                o.roi_size = std::vector<int64_t>(shape.size() - 2, 4);
                o.overlap = overlap;
                o.mode = mode;
                o.sw_batch_size = 3;
                Tensor y = train::sliding_window_inference(x, identity, o);
                REQUIRE(y.shape() == x.shape());
                CHECK(max_abs_diff(y, x) < 1e-6);
            }
}

TEST_CASE("sliding window: positions and constant blending by hand", "[inference]") {
    // A 10 x 7 image, window 4 x 4, overlap 0.5: step 2; starts along H 0 2 4 6, along W 0 2 3
    // (the last shifted back to end at 7). The predictor fills window number n (row-major over
    // the starts, 12 windows) with n.
    int calls = 0;
    auto counter = [&](const Tensor& x) {
        std::vector<Tensor> parts;
        for (int64_t i = 0; i < x.size(0); ++i)
            parts.push_back(full({1, 1, 4, 4}, double(calls++), DType::float32));
        return cat(parts, 0);
    };
    SlidingWindowOptions o;
    o.roi_size = {4, 4};
    o.overlap = 0.5;
    o.sw_batch_size = 5;
    Tensor y = train::sliding_window_inference(zeros({1, 1, 10, 7}, DType::float32), counter, o);
    CHECK(calls == 12);
    auto at = [&](int64_t h, int64_t w) {
        return y.select(0, 0).select(0, 0).select(0, h).select(0, w).item<double>();
    };
    // Window (hi, wi) has number 3 hi + wi. (0, 0): only window 0. (0, 3): windows 1 (w 2-5)
    // and 2 (w 3-6): 1.5. (3, 3): H windows 0 (0-3) and 1 (2-5), W windows 1 and 2:
    // (1 + 2 + 4 + 5) / 4 = 3. (9, 6): window 11 only.
    CHECK(at(0, 0) == 0.0);
    CHECK(at(0, 3) == 1.5);
    CHECK(at(3, 3) == 3.0);
    CHECK(at(9, 6) == 11.0);
}

TEST_CASE("sliding window: the Gaussian map", "[inference]") {
    Tensor map = train::importance_map({5, 4}, "gaussian", 0.5);
    REQUIRE(map.shape() == Shape{5, 4});
    // Centres 5 / 2 = 2 and 4 / 2 = 2, sigmas 2.5 and 2.
    auto g = [](double x, double c, double s) { return std::exp(-(x - c) * (x - c) / (2 * s * s)); };
    for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 4; ++j)
            CHECK_THAT(map.select(0, i).select(0, j).item<double>(),
                       Catch::Matchers::WithinAbs(g(double(i), 2, 2.5) * g(double(j), 2, 2), 1e-6));
    CHECK(max(map).item<double>() == 1.0);
    // Symmetric about the centre along H (odd size).
    CHECK(map.select(0, 0).select(0, 1).item<double>() == map.select(0, 4).select(0, 1).item<double>());
    // Clamped below at 1e-3 where the tails vanish.
    CHECK(min(train::importance_map({64}, "gaussian", 0.05)).item<double>() >= 1e-3);
}

TEST_CASE("sliding window: batching windows and channels", "[inference]") {
    // A predictor that depends on the window's content: 3 channels x, x^2, mean(x).
    auto three = [](const Tensor& x) {
        Tensor m = mean(x, {2, 3}, true).expand(x.shape());
        return cat({x, mul(x, x), m}, 1);
    };
    Tensor x = testing::random_input({2, 1, 11, 9}, 7).to(DType::float32);
    SlidingWindowOptions o;
    o.roi_size = {5, 5};
    o.mode = "gaussian";
    Tensor one = train::sliding_window_inference(x, three, o);
    o.sw_batch_size = 4;
    Tensor four = train::sliding_window_inference(x, three, o);
    REQUIRE(one.shape() == Shape{2, 3, 11, 9});
    CHECK(max_abs_diff(one, four) < 1e-6);
    CHECK(max_abs_diff(one.narrow(1, 1, 1), mul(x, x)) < 1e-5);
}

TEST_CASE("slice by slice: along each axis", "[inference]") {
    Tensor v = testing::random_input({2, 1, 3, 4, 5}, 9).to(DType::float32);
    auto twice = [](const Tensor& x) { return mul(x, 2.0); };
    // Adds each slice's own mean: the result shows which axis was cut.
    auto plus_mean = [](const Tensor& x) { return add(x, mean(x, {1, 2, 3}, true)); };
    for (int64_t axis : {2, 3, 4}) {
        CHECK(max_abs_diff(train::slice_by_slice_inference(v, twice, axis, 2), mul(v, 2.0)) < 1e-6);
        std::vector<int64_t> other;
        for (int64_t d = 1; d <= 4; ++d)
            if (d != axis) other.push_back(d);
        Tensor expected = add(v, mean(v, other, true));
        CHECK(max_abs_diff(train::slice_by_slice_inference(v, plus_mean, axis, 3), expected) <
              1e-5);
    }
}

TEST_CASE("inference: bad arguments are named", "[inference]") {
    auto identity = [](const Tensor& x) { return x; };
    Tensor x = zeros({1, 1, 8, 8}, DType::float32);
    SlidingWindowOptions o;
    o.roi_size = {4};
    CHECK_THROWS_WITH(train::sliding_window_inference(x, identity, o),
                      Contains("needs one value per spatial dim"));
    o.roi_size = {4, 4};
    o.overlap = 1.0;
    CHECK_THROWS_WITH(train::sliding_window_inference(x, identity, o), Contains("overlap"));
    o.overlap = 0.5;
    o.mode = "cosine";
    CHECK_THROWS_WITH(train::sliding_window_inference(x, identity, o),
                      Contains("constant or gaussian"));
    o.mode = "gaussian";
    o.sw_batch_size = 0;
    CHECK_THROWS_WITH(train::sliding_window_inference(x, identity, o), Contains("sw_batch_size"));
    o.sw_batch_size = 1;
    auto shrink = [](const Tensor& t) { return t.narrow(2, 0, 2); };
    CHECK_THROWS_WITH(train::sliding_window_inference(x, shrink, o),
                      Contains("the predictor must give"));
    CHECK_THROWS_WITH(train::sliding_window_inference(zeros({8, 8}), identity, o),
                      Contains("expects (B, C, H, W)"));
    CHECK_THROWS_WITH(train::slice_by_slice_inference(x, identity), Contains("expects a volume"));
    CHECK_THROWS_WITH(train::slice_by_slice_inference(zeros({1, 1, 2, 2, 2}), identity, 1),
                      Contains("axis must be 2, 3 or 4"));
}
