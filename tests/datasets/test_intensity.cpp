// Intensity transforms: exact values on small hand-made 2-D and 3-D images (percentiles worked
// out by hand with numpy's 'linear' method), label/target/affine untouched, seeding and p,
// noise statistics on a large image, and every error message.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "core/tensor.h"
#include "datasets/intensity.h"
#include "ops/ops.h"

using namespace lumen;
using namespace lumen::datasets;
using Catch::Contains;

namespace {

// REQUIREs |got - want| <= atol + rtol |want| elementwise.
void require_close(const Tensor& got, const std::vector<double>& want, double rtol = 1e-6,
                   double atol = 1e-6) {
    std::vector<double> values = got.to_vector<double>();
    REQUIRE(values.size() == want.size());
    for (size_t i = 0; i < values.size(); ++i) {
        INFO("element " << i);
        REQUIRE(std::abs(values[i] - want[i]) <= atol + rtol * std::abs(want[i]));
    }
}

Sample sample_of_values(const std::vector<float>& values, const Shape& shape) {
    Sample sample;
    sample.image = from_vector(values, shape);
    return sample;
}

// The transform's image for `sample` with a generator seeded `seed`.
Tensor apply(const SampleTransform& transform, const Sample& sample, uint64_t seed = 0) {
    Generator generator(seed);
    return transform(sample, generator).image;
}

// A (C, *spatial) float32 image with values in [-1, 1) fixed by seed.
Tensor random_image(const Shape& shape, uint64_t seed) {
    Generator generator(seed);
    return rand(shape, DType::float32, &generator) * 2.0 - 1.0;
}
Sample random_sample(const Shape& shape, uint64_t seed = 1) {
    Sample sample;
    sample.image = random_image(shape, seed);
    return sample;
}

}  // namespace

// ---- deterministic ----

TEST_CASE("intensity: ClipWindow clips to a CT window and rescales", "[datasets][intensity]") {
    std::vector<float> hu = {-200, -125, 0, 100, 275, 400};
    Sample two_d = sample_of_values(hu, {1, 2, 3});
    Sample three_d = sample_of_values(hu, {2, 1, 3, 1});
    for (const Sample& sample : {two_d, three_d}) {
        Tensor clipped = apply(ClipWindow(-125, 275), sample);
        CHECK(clipped.shape() == sample.image.shape());
        require_close(clipped, {-125, -125, 0, 100, 275, 275});
        // TransUNet's Synapse window: (clip(x) + 125) / 400.
        require_close(apply(ClipWindow(-125, 275, true), sample), {0, 0, 0.3125, 0.5625, 1, 1});
    }
}

TEST_CASE("intensity: PercentileClip matches numpy.percentile's linear method",
          "[datasets][intensity]") {
    // Channel 0 sorted: 1 2 3 4 6 10. P25 at position 1.25 -> 2 + 0.25 (3 - 2) = 2.25;
    // P75 at 3.75 -> 4 + 0.75 (6 - 4) = 5.5.
    // Channel 1 sorted: 0 0 5 6 7 8. P25 at 1.25 -> 0 + 0.25 (5 - 0) = 1.25; P75 at 3.75 ->
    // 6 + 0.75 (7 - 6) = 6.75. Over the nonzero voxels 5 6 7 8: P25 at 0.75 -> 5.75, P75 at
    // 2.25 -> 7.25, and the zeros stay 0.
    std::vector<float> values = {10, 3, 1, 4, 2, 6, 0, 7, 5, 0, 8, 6};
    Sample sample = sample_of_values(values, {2, 2, 3});
    require_close(apply(PercentileClip(25, 75), sample),
                  {5.5, 3, 2.25, 4, 2.25, 5.5, 1.25, 6.75, 5, 1.25, 6.75, 6});
    require_close(apply(PercentileClip(25, 75, true), sample),
                  {5.5, 3, 2.25, 4, 2.25, 5.5, 0, 7, 5.75, 0, 7.25, 6});
    // 0 and 100 are the min and max: nothing changes.
    require_close(apply(PercentileClip(0, 100), sample), sample.image.to_vector<double>());
}

TEST_CASE("intensity: PercentileClip at nnU-Net's 0.5 and 99.5 on a 3-D image",
          "[datasets][intensity]") {
    // 0, 1, 4, ..., 100 (i^2, n = 11), shuffled. P0.5 at position 0.05 -> 0 + 0.05 (1 - 0) =
    // 0.05; P99.5 at 9.95 -> 81 + 0.95 (100 - 81) = 99.05 (numpy: 100 - 0.05 * 19).
    std::vector<float> squares = {49, 0, 100, 4, 81, 1, 9, 64, 16, 36, 25};
    Sample sample = sample_of_values(squares, {1, 11, 1, 1});
    require_close(apply(PercentileClip(0.5, 99.5), sample),
                  {49, 0.05, 99.05, 4, 81, 1, 9, 64, 16, 36, 25}, 1e-6, 1e-6);
    // A channel with no nonzero voxel is left alone in nonzero mode.
    Sample zeros = sample_of_values({0, 0, 0, 0}, {1, 2, 2, 1});
    require_close(apply(PercentileClip(10, 90, true), zeros), {0, 0, 0, 0});
}

TEST_CASE("intensity: ZScore subtracts the mean and divides by the population std",
          "[datasets][intensity]") {
    // Channel 0: mean 2.5, population std sqrt(1.25); channel 1 constant: std 0, mean only.
    Sample sample = sample_of_values({1, 2, 3, 4, 5, 5, 5, 5}, {2, 1, 4});
    double s = std::sqrt(1.25);
    require_close(apply(ZScore(false, true), sample),
                  {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s, 0, 0, 0, 0}, 1e-6, 1e-6);
    // Whole image: mean 3.75, population variance 17.5 / 8.
    double w = std::sqrt(17.5 / 8);
    std::vector<double> want;
    for (double v : {1, 2, 3, 4, 5, 5, 5, 5}) want.push_back((v - 3.75) / w);
    require_close(apply(ZScore(), sample), want, 1e-6, 1e-6);
    // A constant image only loses its mean.
    require_close(apply(ZScore(), sample_of_values({7, 7, 7, 7}, {1, 2, 2})), {0, 0, 0, 0});
}

TEST_CASE("intensity: ZScore nonzero uses and changes only the nonzero voxels",
          "[datasets][intensity]") {
    // Channel 0 nonzero 2, 4: mean 3, std 1. Channel 1 all zero: unchanged. Channel 2 nonzero
    // 3 3 3: std 0, mean subtracted, its zero stays.
    Sample sample = sample_of_values({0, 2, 0, 4, 0, 0, 0, 0, 3, 3, 0, 3}, {3, 2, 2});
    require_close(apply(ZScore(true, true), sample), {0, -1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0});
    // 3-D, one channel: nonzero 1 2 3, mean 2, std sqrt(2/3).
    double s = std::sqrt(2.0 / 3.0);
    Sample volume = sample_of_values({0, 1, 2, 3}, {1, 2, 1, 2});
    require_close(apply(ZScore(true), volume), {0, -1 / s, 0, 1 / s}, 1e-6, 1e-6);
    // Whole-image nonzero statistics across channels: nonzero 2 4 3 3 3, mean 3, std
    // sqrt(2/5).
    double t = std::sqrt(2.0 / 5.0);
    require_close(apply(ZScore(true, false), sample), {0, -1 / t, 0, 1 / t, 0, 0, 0, 0, 0, 0, 0, 0},
                  1e-6, 1e-6);
}

TEST_CASE("intensity: ScaleRange maps a_min..a_max to b_min..b_max", "[datasets][intensity]") {
    Sample sample = sample_of_values({-1500, -1000, 0, 500, 1000, 2000}, {1, 2, 3});
    require_close(apply(ScaleRange(-1000, 1000, 0, 1), sample), {-0.25, 0, 0.5, 0.75, 1, 1.5});
    require_close(apply(ScaleRange(-1000, 1000, 0, 1, true), sample), {0, 0, 0.5, 0.75, 1, 1});
    Sample volume = sample_of_values({-1500, -1000, 0, 500, 1000, 2000}, {2, 1, 1, 3});
    require_close(apply(ScaleRange(-1000, 1000, -1, 1, true), volume), {-1, -1, 0, 0.5, 1, 1});
}

TEST_CASE("intensity: ScaleToUnit rescales each channel, a constant one to 0",
          "[datasets][intensity]") {
    Sample sample = sample_of_values({2, 4, 6, 10, 3, 3, 3, 3}, {2, 2, 2});
    require_close(apply(ScaleToUnit(), sample), {0, 0.25, 0.5, 1, 0, 0, 0, 0});
    Sample volume = sample_of_values({-3, 1, 5, 2, 2, 2, 2, 2}, {2, 2, 2, 1});
    require_close(apply(ScaleToUnit(), volume), {0, 0.5, 1, 0.625, 0, 0, 0, 0});
}

// ---- random ----

TEST_CASE("intensity: RandomGamma raises the image's [0, 1] rescaling to gamma",
          "[datasets][intensity]") {
    // min 1, max 5 over the whole image: (x - 1) / 4 = 0, .25, .5, 1 -> squared * 4 + 1.
    Sample sample = sample_of_values({1, 2, 3, 5}, {2, 1, 2});
    require_close(apply(RandomGamma({2, 2}, 1.0), sample), {1, 1.25, 2, 5});
    Sample volume = sample_of_values({1, 2, 3, 5}, {1, 2, 1, 2});
    require_close(apply(RandomGamma({0.5, 0.5}, 1.0), volume), {1, 3, 1 + 4 * std::sqrt(0.5), 5},
                  1e-6);
    // A constant image is unchanged.
    require_close(apply(RandomGamma({2, 2}, 1.0), sample_of_values({4, 4}, {1, 1, 2})), {4, 4});
    // gamma is drawn from the range: the midpoint 0.5 becomes 0.5^gamma.
    Sample ramp = sample_of_values({0, 0.5f, 1}, {1, 1, 3});
    std::vector<double> gammas;
    for (uint64_t seed = 0; seed < 20; ++seed) {
        double middle = apply(RandomGamma({0.7, 1.5}, 1.0), ramp, seed).to_vector<double>()[1];
        gammas.push_back(std::log(middle) / std::log(0.5));
        CHECK(gammas.back() >= 0.7 - 1e-5);
        CHECK(gammas.back() <= 1.5 + 1e-5);
    }
    CHECK(*std::max_element(gammas.begin(), gammas.end()) -
              *std::min_element(gammas.begin(), gammas.end()) >
          0.3);
}

TEST_CASE("intensity: RandomBrightnessContrast is nnU-Net's multiply then contrast",
          "[datasets][intensity]") {
    // x 2 = 2 4 6 12, mean 6: (y - 6) 0.5 + 6 = 4 5 6 9, inside [2, 12].
    Sample sample = sample_of_values({1, 2, 3, 6}, {1, 2, 2});
    require_close(apply(RandomBrightnessContrast({2, 2}, {0.5, 0.5}, 1.0), sample), {4, 5, 6, 9});
    // Contrast 1.5 with per-channel means 3 and 15, clipped to each channel's min and max:
    // channel 0 (x - 3) 1.5 + 3 = -1.5 0 1.5 12 -> [0, 9]; channel 1 7.5 13.5 16.5 22.5 ->
    // [10, 20].
    Sample volume = sample_of_values({0, 1, 2, 9, 10, 14, 16, 20}, {2, 2, 1, 2});
    require_close(apply(RandomBrightnessContrast({1, 1}, {1.5, 1.5}, 1.0), volume),
                  {0, 0, 1.5, 9, 10, 13.5, 16.5, 20});
}

TEST_CASE("intensity: noise has mean 0 and std sigma on a large image", "[datasets][intensity]") {
    Sample flat = sample_of_values(std::vector<float>(2 * 128 * 128, 3.0f), {2, 128, 128});
    Sample volume = sample_of_values(std::vector<float>(32 * 32 * 32, 3.0f), {1, 32, 32, 32});
    for (const Sample& sample : {flat, volume}) {
        Tensor noise = apply(RandomGaussianNoise(0.5, 1.0), sample, 7) - sample.image;
        CHECK(std::abs(mean(noise).item<double>()) < 0.01);
        CHECK(std::abs(lumen::std(noise).item<double>() - 0.5) < 0.01);
    }
    // A sigma range: each draw's std lies within it.
    for (uint64_t seed = 0; seed < 5; ++seed) {
        Tensor noise = apply(RandomGaussianNoise({0.1, 0.3}, 1.0), flat, seed) - flat.image;
        double sigma = lumen::std(noise).item<double>();
        CHECK(sigma > 0.1 - 0.005);
        CHECK(sigma < 0.3 + 0.005);
    }
}

TEST_CASE("intensity: random transforms are seeded, p = 0 is identity, p = 1 always applies",
          "[datasets][intensity]") {
    Sample sample = random_sample({2, 4, 5, 3});
    std::vector<SampleTransformPtr> always = {
        std::make_shared<RandomGamma>(std::array<double, 2>{0.5, 2.0}, 1.0),
        std::make_shared<RandomGaussianNoise>(std::array<double, 2>{0.1, 0.2}, 1.0),
        std::make_shared<RandomBrightnessContrast>(std::array<double, 2>{0.7, 1.3},
                                                   std::array<double, 2>{0.7, 1.3}, 1.0)};
    std::vector<SampleTransformPtr> never = {
        std::make_shared<RandomGamma>(std::array<double, 2>{0.5, 2.0}, 0.0),
        std::make_shared<RandomGaussianNoise>(0.1, 0.0),
        std::make_shared<RandomBrightnessContrast>(std::array<double, 2>{0.7, 1.3},
                                                   std::array<double, 2>{0.7, 1.3}, 0.0)};
    std::vector<float> input = sample.image.to_vector<float>();
    for (const SampleTransformPtr& transform : always) {
        std::vector<float> first = apply(*transform, sample, 3).to_vector<float>();
        CHECK(apply(*transform, sample, 3).to_vector<float>() == first);
        CHECK(apply(*transform, sample, 4).to_vector<float>() != first);
        for (uint64_t seed = 0; seed < 20; ++seed)
            CHECK(apply(*transform, sample, seed).to_vector<float>() != input);
    }
    for (const SampleTransformPtr& transform : never) {
        for (uint64_t seed = 0; seed < 20; ++seed)
            CHECK(apply(*transform, sample, seed).to_vector<float>() == input);
    }
    CHECK(sample.image.to_vector<float>() == input);  // never written in place
    // p = 0.3 fires about 30% of the time.
    int fired = 0;
    for (uint64_t seed = 0; seed < 1000; ++seed)
        fired += apply(RandomGaussianNoise(0.1, 0.3), sample, seed).to_vector<float>() != input;
    CHECK(std::abs(fired / 1000.0 - 0.3) < 0.05);
}

TEST_CASE("intensity: only the image changes, strided input is read correctly",
          "[datasets][intensity]") {
    Sample sample = random_sample({2, 3, 4, 5});
    sample.label = zeros({3, 4, 5}, DType::int64);
    sample.target = random_image({1, 3, 4, 5}, 2);
    sample.affine = {2, 0, 0, 10, 0, 3, 0, 20, 0, 0, 4, 30, 0, 0, 0, 1};
    std::vector<SampleTransformPtr> transforms = {
        std::make_shared<ClipWindow>(-0.5, 0.5, true),
        std::make_shared<PercentileClip>(10, 90),
        std::make_shared<ZScore>(true, true),
        std::make_shared<ScaleRange>(-1, 1, 0, 1),
        std::make_shared<ScaleToUnit>(),
        std::make_shared<RandomGamma>(std::array<double, 2>{2, 3}, 1.0),
        std::make_shared<RandomGaussianNoise>(0.1, 1.0),
        std::make_shared<RandomBrightnessContrast>(std::array<double, 2>{0.5, 0.6},
                                                   std::array<double, 2>{1.5, 2.0}, 1.0)};
    Sample strided = sample;
    strided.image = sample.image.transpose(2, 3).contiguous().transpose(2, 3);
    REQUIRE_FALSE(strided.image.is_contiguous());
    for (const SampleTransformPtr& transform : transforms) {
        Generator generator(5);
        Sample out = (*transform)(sample, generator);
        CHECK(out.image.shape() == sample.image.shape());
        CHECK(out.image.dtype() == DType::float32);
        CHECK(out.image.to_vector<float>() != sample.image.to_vector<float>());
        CHECK(out.label.impl() == sample.label.impl());
        CHECK(out.target.impl() == sample.target.impl());
        CHECK(out.affine == sample.affine);
        CHECK(apply(*transform, strided, 5).to_vector<float>() == out.image.to_vector<float>());
    }
}

// ---- errors ----

TEST_CASE("intensity: constructors reject bad options", "[datasets][intensity]") {
    CHECK_THROWS_WITH(ClipWindow(275, -125),
                      Contains("[ClipWindow]") && Contains("low < high, got [275, -125]"));
    CHECK_THROWS_WITH(ClipWindow(1, 1), Contains("[ClipWindow]") && Contains("[1, 1]"));
    CHECK_THROWS_WITH(PercentileClip(-1, 50),
                      Contains("[PercentileClip]") && Contains("got lower -1 and upper 50"));
    CHECK_THROWS_WITH(PercentileClip(10, 101),
                      Contains("[PercentileClip]") && Contains("got lower 10 and upper 101"));
    CHECK_THROWS_WITH(PercentileClip(60, 40),
                      Contains("[PercentileClip]") && Contains("got lower 60 and upper 40"));
    CHECK_THROWS_WITH(PercentileClip(50, 50), Contains("got lower 50 and upper 50"));
    CHECK_THROWS_WITH(ScaleRange(1, -1, 0, 1),
                      Contains("[ScaleRange]") && Contains("a_min < a_max, got [1, -1]"));
    CHECK_THROWS_WITH(ScaleRange(-1, 1, 1, 0),
                      Contains("[ScaleRange]") && Contains("b_min < b_max, got [1, 0]"));
    CHECK_THROWS_WITH(RandomGamma({2, 1}),
                      Contains("[RandomGamma]") && Contains("gamma range") && Contains("[2, 1]"));
    CHECK_THROWS_WITH(RandomGamma({0, 1}),
                      Contains("[RandomGamma]") && Contains("gamma must be > 0, got [0, 1]"));
    CHECK_THROWS_WITH(RandomGamma({0.5, 1}, 1.5),
                      Contains("[RandomGamma]") && Contains("p must lie in [0, 1], got 1.5"));
    CHECK_THROWS_WITH(RandomGaussianNoise(-0.1),
                      Contains("[RandomGaussianNoise]") && Contains("sigma must be >= 0"));
    CHECK_THROWS_WITH(RandomGaussianNoise({0.3, 0.1}, 0.5), Contains("[RandomGaussianNoise]") &&
                                                                Contains("sigma range") &&
                                                                Contains("[0.3, 0.1]"));
    CHECK_THROWS_WITH(RandomGaussianNoise(0.1, -0.5),
                      Contains("[RandomGaussianNoise]") && Contains("got -0.5"));
    CHECK_THROWS_WITH(RandomBrightnessContrast({1.2, 0.8}, {0.75, 1.25}),
                      Contains("[RandomBrightnessContrast]") && Contains("brightness range") &&
                          Contains("[1.2, 0.8]"));
    CHECK_THROWS_WITH(
        RandomBrightnessContrast({0.8, 1.2}, {2, 1}),
        Contains("[RandomBrightnessContrast]") && Contains("contrast range") && Contains("[2, 1]"));
    CHECK_THROWS_WITH(RandomBrightnessContrast({0.8, 1.2}, {0.8, 1.2}, 2),
                      Contains("[RandomBrightnessContrast]") && Contains("got 2"));
}

TEST_CASE("intensity: applying to a bad image names the transform and the shape",
          "[datasets][intensity]") {
    std::vector<std::pair<std::string, SampleTransformPtr>> transforms = {
        {"ClipWindow", std::make_shared<ClipWindow>(0, 1)},
        {"PercentileClip", std::make_shared<PercentileClip>(1, 99)},
        {"ZScore", std::make_shared<ZScore>()},
        {"ScaleRange", std::make_shared<ScaleRange>(0, 1, 0, 1)},
        {"ScaleToUnit", std::make_shared<ScaleToUnit>()},
        {"RandomGamma", std::make_shared<RandomGamma>()},
        {"RandomGaussianNoise", std::make_shared<RandomGaussianNoise>()},
        {"RandomBrightnessContrast", std::make_shared<RandomBrightnessContrast>()}};
    Sample float64, flat, five_d, empty;
    float64.image = zeros({1, 4, 4}, DType::float64);
    flat.image = zeros({4, 4}, DType::float32);
    five_d.image = zeros({1, 2, 2, 2, 2}, DType::float32);
    for (const auto& [name, transform] : transforms) {
        Generator generator(0);
        std::string tag = "[" + name + "]";
        CHECK_THROWS_WITH((*transform)(float64, generator),
                          Contains(tag) && Contains("float64 [1, 4, 4]"));
        CHECK_THROWS_WITH((*transform)(flat, generator),
                          Contains(tag) && Contains("float32 [4, 4]"));
        CHECK_THROWS_WITH((*transform)(five_d, generator),
                          Contains(tag) && Contains("[1, 2, 2, 2, 2]"));
        CHECK_THROWS_WITH((*transform)(empty, generator),
                          Contains(tag) && Contains("without an image"));
    }
}
