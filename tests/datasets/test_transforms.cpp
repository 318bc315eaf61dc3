// Transforms: flips exact, a 90-degree rotation equal to np.rot90, translations and scaling,
// normalize exact, the noise statistics on a large image, seeding, composition and errors.
#include <cmath>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::datasets;

namespace {

// A float32 image (C, H, W) with values in [0, 1) fixed by seed.
Tensor image(const Shape& shape, uint64_t seed = 1) {
    return random_input(shape, seed, 0.0, 1.0).to(DType::float32);
}

// The image's values in a plain reference layout.
float pixel(const Tensor& x, int64_t c, int64_t y, int64_t w) { return x.at<float>({c, y, w}); }

}  // namespace

TEST_CASE("transforms: flips mirror exactly", "[datasets][transforms]") {
    Tensor x = image({2, 3, 4});
    Tensor h = hflip(x), v = vflip(x);
    for (int64_t c = 0; c < 2; ++c) {
        for (int64_t y = 0; y < 3; ++y) {
            for (int64_t w = 0; w < 4; ++w) {
                REQUIRE(pixel(h, c, y, w) == pixel(x, c, y, 3 - w));
                REQUIRE(pixel(v, c, y, w) == pixel(x, c, 2 - y, w));
            }
        }
    }
    Generator generator(0);
    CHECK(RandomHorizontalFlip(1.0)(x, generator).to_vector<float>() == h.to_vector<float>());
    CHECK(RandomVerticalFlip(1.0)(x, generator).to_vector<float>() == v.to_vector<float>());
    CHECK(RandomHorizontalFlip(0.0)(x, generator).to_vector<float>() == x.to_vector<float>());
    // Non-contiguous input: a transposed view.
    Tensor t = x.transpose(1, 2).contiguous().transpose(1, 2);
    REQUIRE_FALSE(t.is_contiguous());
    CHECK(hflip(t).to_vector<float>() == h.to_vector<float>());
}

TEST_CASE("transforms: random flips happen with probability p", "[datasets][transforms]") {
    Tensor x = image({1, 2, 2});
    RandomHorizontalFlip flip(0.3);
    int flipped = 0;
    for (uint64_t seed = 0; seed < 2000; ++seed) {
        Generator generator(seed);
        flipped += flip(x, generator).to_vector<float>() != x.to_vector<float>();
    }
    CHECK(std::abs(flipped / 2000.0 - 0.3) < 0.04);
}

TEST_CASE("transforms: rotate by 90 degrees is np.rot90", "[datasets][transforms]") {
    Tensor x = image({2, 5, 5});
    Tensor r = rotate(x, 90), back = rotate(x, -90), half = rotate(x, 180);
    Tensor flipped = hflip(vflip(x));
    for (int64_t c = 0; c < 2; ++c) {
        for (int64_t y = 0; y < 5; ++y) {
            for (int64_t w = 0; w < 5; ++w) {
                // counter-clockwise: out[y][x] = in[x][W - 1 - y]; clockwise the inverse
                REQUIRE(pixel(r, c, y, w) == Approx(pixel(x, c, w, 4 - y)).margin(1e-6));
                REQUIRE(pixel(back, c, y, w) == Approx(pixel(x, c, 4 - w, y)).margin(1e-6));
                REQUIRE(pixel(half, c, y, w) == Approx(pixel(flipped, c, y, w)).margin(1e-6));
            }
        }
    }
    CHECK(rotate(x, 0).to_vector<float>() == x.to_vector<float>());
    CHECK(affine(x, 0, {0, 0}, 1, 0).to_vector<float>() == x.to_vector<float>());
    CHECK(max(abs(rotate(x, 360) - x)).item<double>() < 1e-6);
}

TEST_CASE("transforms: affine translates with zero fill and scales about the centre",
          "[datasets][transforms]") {
    Tensor x = image({1, 4, 6});
    Tensor shifted = affine(x, 0, {2, -1}, 1, 0);  // 2 right, 1 up
    for (int64_t y = 0; y < 4; ++y) {
        for (int64_t w = 0; w < 6; ++w) {
            bool inside = w - 2 >= 0 && y + 1 < 4;
            float want = inside ? pixel(x, 0, y + 1, w - 2) : 0.0f;
            REQUIRE(pixel(shifted, 0, y, w) == Approx(want).margin(1e-6));
        }
    }
    // Scale 2 about the centre (2.5, 1.5): output (3, 2) samples ((3, 2) + (2.5, 1.5)) / 2 =
    // (2.75, 1.75), bilinear weights 1/16, 3/16, 3/16, 9/16.
    Tensor zoomed = affine(x, 0, {0, 0}, 2, 0);
    float want = (pixel(x, 0, 1, 2) + 3 * pixel(x, 0, 1, 3) + 3 * pixel(x, 0, 2, 2) +
                  9 * pixel(x, 0, 2, 3)) /
                 16;
    CHECK(pixel(zoomed, 0, 2, 3) == Approx(want).margin(1e-6));
    // A shear of 45 degrees moves row y right by y - 1.5 pixels: output (4, 3) samples (2.5, 3).
    Tensor sheared = affine(x, 0, {0, 0}, 1, 45);
    float mid = (pixel(x, 0, 3, 2) + pixel(x, 0, 3, 3)) / 2;
    CHECK(pixel(sheared, 0, 3, 4) == Approx(mid).margin(1e-6));
    // A vanishing scale samples far outside: all zero fill, no overflow.
    CHECK(max(abs(affine(x, 0, {0, 0}, 1e-300, 0))).item<double>() == 0.0);
}

TEST_CASE("transforms: normalize is exact per channel", "[datasets][transforms]") {
    Tensor x = image({2, 3, 3});
    Generator generator(0);
    Tensor y = Normalize({0.25, 0.5}, {2.0, 0.5})(x, generator);
    for (int64_t c = 0; c < 2; ++c) {
        float mean = c == 0 ? 0.25f : 0.5f, inv_std = c == 0 ? 0.5f : 2.0f;
        for (int64_t i = 0; i < 3; ++i) {
            REQUIRE(pixel(y, c, i, 1) == (pixel(x, c, i, 1) - mean) * inv_std);
        }
    }
    Tensor one = Normalize({0.5}, {0.25})(x, generator);  // one value for every channel
    CHECK(pixel(one, 1, 2, 2) == (pixel(x, 1, 2, 2) - 0.5f) * 4.0f);
    require_error(
        [&] {
            Normalize({0.1, 0.2, 0.3}, {1.0})(x, generator);
        },
        {"[Normalize]", "3 means", "expected 1 or 2"});
    require_error([] { Normalize({0.0}, {0.0}); }, {"[Normalize]", "std must be > 0"});
}

TEST_CASE("transforms: Gaussian noise has mean 0 and std sigma", "[datasets][transforms]") {
    Tensor x = full({1, 512, 512}, 0.5, DType::float32);
    Generator generator(42);
    Tensor noisy = GaussianNoise(0.2)(x, generator);
    std::vector<float> values = noisy.to_vector<float>();
    double sum = 0, square = 0;
    for (float v : values) {
        sum += v - 0.5;
        square += (v - 0.5) * (v - 0.5);
    }
    double n = double(values.size()), mean = sum / n;
    double std = std::sqrt(square / n - mean * mean);
    CHECK(std::abs(mean) < 0.002);  // 5 standard errors: 0.2 / 512 = 0.0004
    CHECK(std::abs(std - 0.2) < 0.002);
    Generator again(42);
    CHECK(GaussianNoise(0.2)(x, again).to_vector<float>() == values);
}

TEST_CASE("transforms: salt and pepper replaces a fraction amount, half each way",
          "[datasets][transforms]") {
    Tensor x = full({2, 256, 256}, 0.5, DType::float32);
    Generator generator(3);
    std::vector<float> values = SaltAndPepper(0.2, -1.0, 2.0)(x, generator).to_vector<float>();
    double pepper = 0, salt = 0;
    for (float v : values) {
        pepper += v == -1.0f;
        salt += v == 2.0f;
        REQUIRE((v == -1.0f || v == 2.0f || v == 0.5f));
    }
    double n = double(values.size());
    CHECK(std::abs(pepper / n - 0.1) < 0.004);  // standard error 0.0008
    CHECK(std::abs(salt / n - 0.1) < 0.004);
    Generator other(3);
    CHECK(SaltAndPepper(0.0)(x, other).to_vector<float>() == x.to_vector<float>());
}

TEST_CASE("transforms: random rotation and affine are seeded", "[datasets][transforms]") {
    Tensor x = image({1, 8, 8});
    RandomAffine random_affine(
        {.degrees = 30, .translate = {0.2, 0.1}, .scale = {0.8, 1.2}, .shear = 15});
    RandomRotation rotation(45);
    for (const Transform* t : std::vector<const Transform*>{&random_affine, &rotation}) {
        Generator a(9), b(9), c(10);
        std::vector<float> first = (*t)(x, a).to_vector<float>();
        CHECK(first == (*t)(x, b).to_vector<float>());
        CHECK(first != (*t)(x, c).to_vector<float>());
        CHECK(first != (*t)(x, a).to_vector<float>());  // a advanced
    }
    Generator g(0);
    CHECK(RandomRotation(0)(x, g).to_vector<float>() == rotate(x, 0).to_vector<float>());
}

TEST_CASE("transforms: Compose applies in order", "[datasets][transforms]") {
    Tensor x = image({1, 3, 3});
    Generator generator(0);
    Compose both(Normalize({1.0}, {1.0}), Normalize({0.0}, {2.0}));
    CHECK(pixel(both(x, generator), 0, 1, 2) == (pixel(x, 0, 1, 2) - 1.0f) * 0.5f);
    Compose flips(RandomHorizontalFlip(1.0), RandomVerticalFlip(1.0));
    CHECK(flips(x, generator).to_vector<float>() == hflip(vflip(x)).to_vector<float>());
    require_error([] { Compose({TransformPtr()}); }, {"[Compose]", "transform 0 is null"});
}

TEST_CASE("transforms: bad images and options are errors", "[datasets][transforms]") {
    Generator generator(0);
    require_error([] { hflip(zeros({3, 4})); }, {"[hflip]", "(C, H, W)", "[3, 4]"});
    require_error([] { vflip(zeros({1, 3, 4}, DType::float64)); }, {"[vflip]", "float64"});
    require_error(
        [&] {
            GaussianNoise(0.1)(zeros({1, 2, 2}, DType::uint8), generator);
        },
        {"[GaussianNoise]", "uint8"});
    require_error([] { RandomHorizontalFlip(1.5); }, {"[RandomHorizontalFlip]", "1.5"});
    require_error([] { RandomRotation(-1); }, {"[RandomRotation]", "-1"});
    require_error([] { RandomAffine({.scale = {1.2, 0.8}}); }, {"[RandomAffine]", "scale"});
    require_error([] { RandomAffine({.shear = 90}); }, {"[RandomAffine]", "shear"});
    require_error([] { SaltAndPepper(-0.1); }, {"[SaltAndPepper]", "amount"});
    require_error([] { GaussianNoise(-1); }, {"[GaussianNoise]", "sigma"});
    require_error([] { affine(zeros({1, 2, 2}), 0, {0, 0}, 0, 0); }, {"[affine]", "scale"});
}
