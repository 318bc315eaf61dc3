// Segmentation metrics (PVT-GDLA's and the context-length study's): the distance transform and
// surface distances against brute force (with spacing), HD95 on shapes worked out by hand, the
// TransUNet protocol's cases, MONAI's validation Dice, accuracy, torchmetrics' per-sample Dice,
// errors, and the vectors.
#include <cmath>
#include <limits>

#include "support/gradcheck.h"
#include "train/metrics_seg.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// A 0/1 int64 mask of `shape` with about `fraction` ones, fixed by `seed`.
Tensor random_mask(const Shape& shape, double fraction, uint64_t seed) {
    return lt(random_input(shape, seed, 0.0, 1.0), fraction).to(DType::int64);
}

double distance(const Shape& a, const Shape& b, const std::vector<double>& spacing) {
    double total = 0;
    for (size_t d = 0; d < a.size(); ++d) {
        double step = double(a[d] - b[d]) * spacing[d];
        total += step * step;
    }
    return std::sqrt(total);
}

// Border by definition: a mask element with a face neighbour outside the mask or the array.
std::vector<bool> brute_border(const std::vector<int64_t>& m, const Shape& shape) {
    std::vector<bool> out(m.size(), false);
    for (size_t i = 0; i < m.size(); ++i) {
        if (!m[i]) continue;
        Shape c = unravel(int64_t(i), shape);
        for (size_t d = 0; d < shape.size(); ++d)
            for (int64_t step : {-1, 1}) {
                Shape n = c;
                n[d] += step;
                if (n[d] < 0 || n[d] >= shape[d] || !m[size_t(ravel(n, shape))]) out[i] = true;
            }
    }
    return out;
}

std::vector<double> brute_surface_distances(const Tensor& a, const Tensor& b,
                                            const std::vector<double>& spacing) {
    const Shape& shape = a.shape();
    std::vector<bool> ba = brute_border(a.to_vector<int64_t>(), shape);
    std::vector<bool> bb = brute_border(b.to_vector<int64_t>(), shape);
    std::vector<double> out;
    for (size_t i = 0; i < ba.size(); ++i) {
        if (!ba[i]) continue;
        double best = std::numeric_limits<double>::infinity();
        for (size_t j = 0; j < bb.size(); ++j)
            if (bb[j])
                best = std::min(best, distance(unravel(int64_t(i), shape),
                                               unravel(int64_t(j), shape), spacing));
        out.push_back(best);
    }
    return out;
}

}  // namespace

TEST_CASE("distance_transform_edt equals brute force in 1-D, 2-D and 3-D with spacing",
          "[train][metrics]") {
    struct Case {
        Shape shape;
        std::vector<double> spacing;
    };
    for (const Case& c : {Case{{17}, {1.0}}, Case{{9, 13}, {1.0, 1.0}}, Case{{9, 13}, {2.5, 0.7}},
                          Case{{5, 6, 7}, {1.0, 1.0, 1.0}}, Case{{5, 6, 7}, {3.0, 1.0, 0.5}}}) {
        Tensor mask = random_mask(c.shape, 0.8, c.shape.size() + 7);
        std::vector<int64_t> m = mask.to_vector<int64_t>();
        std::vector<double> got =
            train::distance_transform_edt(mask, c.spacing).to_vector<double>();
        INFO("shape " << text(c.shape));
        for (size_t i = 0; i < m.size(); ++i) {
            double best = m[i] ? std::numeric_limits<double>::infinity() : 0.0;
            for (size_t j = 0; j < m.size(); ++j)
                if (!m[j])
                    best = std::min(best, distance(unravel(int64_t(i), c.shape),
                                                   unravel(int64_t(j), c.shape), c.spacing));
            CHECK(got[i] == Approx(best).epsilon(1e-12));
        }
    }
    // No zero element: every distance is infinite.
    CHECK(std::isinf(train::distance_transform_edt(ones({3, 3})).to_vector<double>()[4]));
    require_error(
        [] {
            train::distance_transform_edt(ones({3, 3}), {1.0});
        },
        {"[distance_transform_edt]", "2"});
    require_error(
        [] {
            train::distance_transform_edt(ones({3, 3}), {1.0, 0.0});
        },
        {"[distance_transform_edt]", "spacing"});
}

TEST_CASE("mask_border and surface_distances equal brute force", "[train][metrics]") {
    // A 3x4 block: its border is all but the 1x2 interior.
    Tensor block = zeros({5, 6}, DType::int64);
    block.narrow(0, 1, 3).narrow(1, 1, 4).fill_(1.0);
    CHECK(sum(train::mask_border(block)).item<int64_t>() == 10);
    // The image edge counts as background.
    CHECK(sum(train::mask_border(ones({3, 3}))).item<int64_t>() == 8);
    for (uint64_t seed : {1, 2, 3}) {
        for (const std::vector<double>& spacing :
             {std::vector<double>{1, 1, 1}, std::vector<double>{2.0, 1.0, 0.5}}) {
            Tensor a = random_mask({4, 6, 5}, 0.3, seed), b = random_mask({4, 6, 5}, 0.3, seed + 9);
            std::vector<double> got = train::surface_distances(a, b, spacing);
            std::vector<double> want = brute_surface_distances(a, b, spacing);
            REQUIRE(got.size() == want.size());
            for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-12));
        }
    }
}

TEST_CASE("hd95 and binary_dice on shapes worked out by hand", "[train][metrics]") {
    // Single pixels at (0, 0) and (3, 4): every distance is 5.
    Tensor p = zeros({6, 6}, DType::int64), g = zeros({6, 6}, DType::int64);
    p.narrow(0, 0, 1).narrow(1, 0, 1).fill_(1.0);
    g.narrow(0, 3, 1).narrow(1, 4, 1).fill_(1.0);
    CHECK(train::hd95(p, g) == Approx(5.0));
    CHECK(train::hd95(p, g, {2.0, 1.0}) == Approx(std::sqrt(36.0 + 16.0)));
    CHECK(train::binary_dice(p, g) == 0.0);
    // G gets a second pixel at (0, 3): P->G {3}, G->P {3, 5}; sorted (3, 3, 5), the 95th
    // percentile sits at index 1.9: 3 + 0.9 (5 - 3) = 4.8.
    g.narrow(0, 0, 1).narrow(1, 3, 1).fill_(1.0);
    CHECK(train::hd95(p, g) == Approx(4.8).epsilon(1e-12));
    // 3-D: voxels (0, 0, 0) and (1, 2, 2) are 3 apart.
    Tensor a = zeros({2, 3, 3}, DType::int64), b = zeros({2, 3, 3}, DType::int64);
    a.narrow(0, 0, 1).narrow(1, 0, 1).narrow(2, 0, 1).fill_(1.0);
    b.narrow(0, 1, 1).narrow(1, 2, 1).narrow(2, 2, 1).fill_(1.0);
    CHECK(train::hd95(a, b) == Approx(3.0));
    // Identical masks: 0 and Dice 1; two squares shifted by one pixel: Dice 2 * 12 / 32.
    Tensor square = zeros({8, 8}, DType::int64);
    square.narrow(0, 2, 4).narrow(1, 2, 4).fill_(1.0);
    Tensor shifted = zeros({8, 8}, DType::int64);
    shifted.narrow(0, 2, 4).narrow(1, 3, 4).fill_(1.0);
    CHECK(train::hd95(square, square) == 0.0);
    CHECK(train::binary_dice(square, shifted) == Approx(0.75));
    // Border rings of two 4x4 squares one column apart: every distance is 0 or 1.
    CHECK(train::hd95(square, shifted) == Approx(1.0));
    CHECK(train::binary_dice(zeros({2, 2}), zeros({2, 2})) == 1.0);
    require_error([&] { train::hd95(p, zeros({6, 6})); }, {"[surface_distances]", "empty"});
    require_error([&] { train::binary_dice(p, zeros({6, 5})); }, {"[binary_dice]", "[6, 5]"});
}

TEST_CASE("transunet_case_metrics: both present, false positive, missed class",
          "[train][metrics]") {
    Tensor target = zeros({8, 8}, DType::int64), pred = zeros({8, 8}, DType::int64);
    target.narrow(0, 2, 4).narrow(1, 2, 4).fill_(1.0);
    pred.narrow(0, 2, 4).narrow(1, 3, 4).fill_(1.0);
    pred.narrow(0, 7, 1).narrow(1, 7, 1).fill_(2.0);    // class 2 predicted, absent in target
    target.narrow(0, 0, 1).narrow(1, 0, 1).fill_(3.0);  // class 3 missed
    std::vector<train::CaseMetric> m = train::transunet_case_metrics(pred, target, 5);
    REQUIRE(m.size() == 4);
    CHECK(m[0].dice == Approx(0.75));
    CHECK(m[0].hd95 == Approx(1.0));
    CHECK((m[1].dice == 1.0 && m[1].hd95 == 0.0));
    CHECK((m[2].dice == 0.0 && m[2].hd95 == 0.0));
    CHECK((m[3].dice == 0.0 && m[3].hd95 == 0.0));  // absent in both: (0, 0) as TransUNet
    require_error([&] { train::transunet_case_metrics(pred, target, 1); },
                  {"[transunet_case_metrics]", "num_classes"});
    require_error([&] { train::transunet_case_metrics(pred.to(DType::float32), target, 3); },
                  {"[transunet_case_metrics]", "integer"});
}

TEST_CASE("foreground_dice, pixel_accuracy and samplewise_dice by hand", "[train][metrics]") {
    // Two samples of 4 pixels. Sample 0: target (1, 1, 0, 2), pred (1, 0, 0, 2);
    // sample 1: target (0, 0, 0, 0), pred (1, 0, 0, 0).
    Tensor target = from_vector(std::vector<int64_t>{1, 1, 0, 2, 0, 0, 0, 0}, {2, 4});
    Tensor pred = from_vector(std::vector<int64_t>{1, 0, 0, 2, 1, 0, 0, 0}, {2, 4});
    // Class 1 only defined in sample 0: 2 * 1 / (1 + 2); class 2: 1; class 3 never: NaN.
    std::vector<double> fg = train::foreground_dice(pred, target, 4);
    REQUIRE(fg.size() == 3);
    CHECK(fg[0] == Approx(2.0 / 3.0));
    CHECK(fg[1] == 1.0);
    CHECK(std::isnan(fg[2]));
    CHECK(train::pixel_accuracy(pred, target) == Approx((0.75 + 0.75) / 2));
    // Multiclass (3 classes): sample 0 F1: class 0 2/(2+1) ... class 0: TP 1, FP 1, FN 0 -> 2/3;
    // class 1: TP 1, FN 1 -> 2/3; class 2: 1 -> mean 7/9. Sample 1: class 0: TP 3, FN 1 -> 6/7,
    // class 1: FP 1 -> 0, class 2 absent -> mean 3/7.
    CHECK(train::samplewise_dice(pred, target, 3) == Approx((7.0 / 9.0 + 3.0 / 7.0) / 2));
    // Binary: F1 of class 1 per sample; sample with no class 1 anywhere scores 0.
    Tensor bt = from_vector(std::vector<int64_t>{1, 1, 0, 0, 0, 0}, {2, 3});
    Tensor bp = from_vector(std::vector<int64_t>{1, 0, 1, 0, 0, 0}, {2, 3});
    CHECK(train::samplewise_dice(bp, bt, 2) == Approx((2.0 / 4.0 + 0.0) / 2));
    require_error([&] { train::samplewise_dice(pred, target, 2); },
                  {"[samplewise_dice]", "[0, 2)"});
    require_error([&] { train::samplewise_dice(pred, bt, 3); }, {"[samplewise_dice]", "[2, 3]"});
}

TEST_CASE("segmentation metric vectors", "[train][metrics][oracle]") {
    require_oracle_vectors({"metric_dsc_hd95_K5_4x20x18", "metric_dsc_hd95_K2_24x21"}, "gdla");
    require_oracle_vectors({"metric_dice_binary", "metric_dice_multiclass", "metric_auroc"},
                           "context");
}
