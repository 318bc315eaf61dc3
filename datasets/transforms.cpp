// Image transforms as plain loops over contiguous float32 data: they run per sample on the
// loader's worker threads, so they stay single-threaded and allocate only their output.
#include "datasets/transforms.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "datasets/random_stream.h"

namespace lumen::datasets {

namespace {

// The image as a contiguous float32 CPU (C, H, W) tensor, or an error naming `name`.
Tensor checked_image(const Tensor& image, const char* name) {
    LUMEN_CHECK(image.defined(), name, "got an undefined tensor");
    LUMEN_CHECK(image.ndim() == 3, name, "expects an image (C, H, W), got shape ", image.shape());
    LUMEN_CHECK(image.dtype() == DType::float32, name, "expects float32, got ", image.dtype());
    LUMEN_CHECK(image.is_cpu(), name, "runs on CPU tensors, got one on ", image.device());
    return image.contiguous();
}

void check_probability(double p, const char* name) {
    LUMEN_CHECK(p >= 0.0 && p <= 1.0, name, "p must lie in [0, 1], got ", p);
}

double radians(double degrees) { return degrees * std::numbers::pi / 180.0; }

// One output pixel's bilinear taps: up to 4 source offsets (within a plane) and weights,
// weight 0 for taps outside the image (zero fill).
struct Taps {
    int64_t offset[4];
    float weight[4];
};

Taps bilinear_taps(double sx, double sy, int64_t H, int64_t W) {
    Taps taps{};
    // Clamped so that the int conversion cannot overflow (a tiny scale maps pixels far away);
    // beyond -1 or W every tap is outside anyway.
    sx = std::clamp(sx, -2.0, double(W) + 1.0);
    sy = std::clamp(sy, -2.0, double(H) + 1.0);
    double x0 = std::floor(sx), y0 = std::floor(sy);
    double fx = sx - x0, fy = sy - y0;
    const double weights[4] = {(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy};
    for (int k = 0; k < 4; ++k) {
        int64_t x = int64_t(x0) + (k & 1), y = int64_t(y0) + (k >> 1);
        bool inside = x >= 0 && x < W && y >= 0 && y < H;
        taps.offset[k] = inside ? y * W + x : 0;
        taps.weight[k] = inside ? float(weights[k]) : 0.0f;
    }
    return taps;
}

}  // namespace

Tensor hflip(const Tensor& image) {
    Tensor in = checked_image(image, "hflip");
    Tensor out = empty_like(in);
    int64_t W = in.size(2), rows = in.size(0) * in.size(1);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t x = 0; x < W; ++x) dst[r * W + x] = src[r * W + W - 1 - x];
    }
    return out;
}

Tensor vflip(const Tensor& image) {
    Tensor in = checked_image(image, "vflip");
    Tensor out = empty_like(in);
    int64_t C = in.size(0), H = in.size(1), W = in.size(2);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t c = 0; c < C; ++c) {
        for (int64_t y = 0; y < H; ++y) {
            const float* row = src + (c * H + H - 1 - y) * W;
            std::copy(row, row + W, dst + (c * H + y) * W);
        }
    }
    return out;
}

Tensor warp_affine(const Tensor& image, const std::array<double, 6>& inverse) {
    Tensor in = checked_image(image, "warp_affine");
    Tensor out = empty_like(in);
    int64_t C = in.size(0), H = in.size(1), W = in.size(2), plane = H * W;
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t y = 0; y < H; ++y) {
        for (int64_t x = 0; x < W; ++x) {
            double sx = inverse[0] * double(x) + inverse[1] * double(y) + inverse[2];
            double sy = inverse[3] * double(x) + inverse[4] * double(y) + inverse[5];
            Taps taps = bilinear_taps(sx, sy, H, W);
            for (int64_t c = 0; c < C; ++c) {
                const float* p = src + c * plane;
                dst[c * plane + y * W + x] =
                    taps.weight[0] * p[taps.offset[0]] + taps.weight[1] * p[taps.offset[1]] +
                    taps.weight[2] * p[taps.offset[2]] + taps.weight[3] * p[taps.offset[3]];
            }
        }
    }
    return out;
}

Tensor rotate(const Tensor& image, double angle) { return affine(image, angle, {0, 0}, 1, 0); }

Tensor affine(const Tensor& image, double angle, std::array<double, 2> translate, double scale,
              double shear) {
    LUMEN_CHECK(scale > 0, "affine", "scale must be > 0, got ", scale);
    LUMEN_CHECK(std::abs(shear) < 90, "affine", "shear must lie in (-90, 90) degrees, got ", shear);
    Tensor in = checked_image(image, "affine");
    // Forward linear part L = scale * R * Shear with rows downwards: a counter-clockwise
    // rotation on screen is R = [[cos, sin], [-sin, cos]]. Sampling needs L^-1.
    double cs = std::cos(radians(angle)), sn = std::sin(radians(angle));
    double t = std::tan(radians(shear));
    double l00 = scale * cs, l01 = scale * (cs * t + sn);
    double l10 = -scale * sn, l11 = scale * (cs - sn * t);
    double det = l00 * l11 - l01 * l10;  // = scale^2, never 0 here
    double i00 = l11 / det, i01 = -l01 / det, i10 = -l10 / det, i11 = l00 / det;
    // p_in = L^-1 (p_out - centre - translate) + centre
    double cx = double(in.size(2) - 1) / 2, cy = double(in.size(1) - 1) / 2;
    double ox = cx + translate[0], oy = cy + translate[1];
    return warp_affine(in,
                       {i00, i01, cx - i00 * ox - i01 * oy, i10, i11, cy - i10 * ox - i11 * oy});
}

Compose::Compose(std::vector<TransformPtr> transforms) : transforms_(std::move(transforms)) {
    for (size_t k = 0; k < transforms_.size(); ++k) {
        LUMEN_CHECK(transforms_[k] != nullptr, "Compose", "transform ", k, " is null");
    }
}

Tensor Compose::operator()(const Tensor& image, Generator& generator) const {
    Tensor out = image;
    for (const TransformPtr& transform : transforms_) out = (*transform)(out, generator);
    return out;
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
    check_probability(p, "RandomHorizontalFlip");
}

Tensor RandomHorizontalFlip::operator()(const Tensor& image, Generator& generator) const {
    RandomStream random(generator);
    return random.uniform() < p_ ? hflip(image) : checked_image(image, "RandomHorizontalFlip");
}

RandomVerticalFlip::RandomVerticalFlip(double p) : p_(p) {
    check_probability(p, "RandomVerticalFlip");
}

Tensor RandomVerticalFlip::operator()(const Tensor& image, Generator& generator) const {
    RandomStream random(generator);
    return random.uniform() < p_ ? vflip(image) : checked_image(image, "RandomVerticalFlip");
}

RandomRotation::RandomRotation(double degrees) : degrees_(degrees) {
    LUMEN_CHECK(degrees >= 0, "RandomRotation", "degrees must be >= 0, got ", degrees);
}

Tensor RandomRotation::operator()(const Tensor& image, Generator& generator) const {
    RandomStream random(generator);
    return rotate(image, random.uniform(-degrees_, degrees_));
}

RandomAffine::RandomAffine(const AffineOptions& options) : options_(options) {
    const AffineOptions& o = options;
    LUMEN_CHECK(o.degrees >= 0, "RandomAffine", "degrees must be >= 0, got ", o.degrees);
    for (double fraction : o.translate) {
        LUMEN_CHECK(fraction >= 0 && fraction <= 1, "RandomAffine",
                    "translate fractions must lie in [0, 1], got ", fraction);
    }
    LUMEN_CHECK(o.scale[0] > 0 && o.scale[0] <= o.scale[1], "RandomAffine",
                "scale range must satisfy 0 < low <= high, got [", o.scale[0], ", ", o.scale[1],
                "]");
    LUMEN_CHECK(o.shear >= 0 && o.shear < 90, "RandomAffine", "shear must lie in [0, 90), got ",
                o.shear);
}

Tensor RandomAffine::operator()(const Tensor& image, Generator& generator) const {
    const AffineOptions& o = options_;
    Tensor in = checked_image(image, "RandomAffine");
    RandomStream random(generator);
    double angle = random.uniform(-o.degrees, o.degrees);
    double max_dx = o.translate[0] * double(in.size(2)),
           max_dy = o.translate[1] * double(in.size(1));
    std::array<double, 2> translate = {random.uniform(-max_dx, max_dx),
                                       random.uniform(-max_dy, max_dy)};
    double scale = random.uniform(o.scale[0], o.scale[1]);
    double shear = random.uniform(-o.shear, o.shear);
    return affine(in, angle, translate, scale, shear);
}

Normalize::Normalize(std::vector<double> mean, std::vector<double> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
    LUMEN_CHECK(!mean_.empty() && !std_.empty(), "Normalize", "needs a mean and a std, got ",
                mean_.size(), " means and ", std_.size(), " stds");
    for (double s : std_) LUMEN_CHECK(s > 0, "Normalize", "every std must be > 0, got ", s);
}

Tensor Normalize::operator()(const Tensor& image, Generator&) const {
    Tensor in = checked_image(image, "Normalize");
    int64_t C = in.size(0), plane = in.size(1) * in.size(2);
    auto fits = [C](size_t n) { return n == 1 || int64_t(n) == C; };
    LUMEN_CHECK(fits(mean_.size()) && fits(std_.size()), "Normalize", "has ", mean_.size(),
                " means and ", std_.size(), " stds, expected 1 or ", C, " for an image of shape ",
                in.shape());
    Tensor out = empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t c = 0; c < C; ++c) {
        float mean = float(mean_[mean_.size() == 1 ? 0 : c]);
        float inv_std = float(1.0 / std_[std_.size() == 1 ? 0 : c]);
        for (int64_t i = c * plane; i < (c + 1) * plane; ++i) dst[i] = (src[i] - mean) * inv_std;
    }
    return out;
}

GaussianNoise::GaussianNoise(double sigma) : sigma_(sigma) {
    LUMEN_CHECK(sigma >= 0, "GaussianNoise", "sigma must be >= 0, got ", sigma);
}

Tensor GaussianNoise::operator()(const Tensor& image, Generator& generator) const {
    Tensor in = checked_image(image, "GaussianNoise");
    Tensor out = empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    RandomStream random(generator);
    float sigma = float(sigma_), a = 0, b = 0;
    int64_t n = in.numel();
    for (int64_t i = 0; i < n; i += 2) {
        random.normal_pair(a, b);
        dst[i] = src[i] + sigma * a;
        if (i + 1 < n) dst[i + 1] = src[i + 1] + sigma * b;
    }
    return out;
}

SaltAndPepper::SaltAndPepper(double amount, double low, double high)
    : amount_(amount), low_(low), high_(high) {
    LUMEN_CHECK(amount >= 0 && amount <= 1, "SaltAndPepper", "amount must lie in [0, 1], got ",
                amount);
}

Tensor SaltAndPepper::operator()(const Tensor& image, Generator& generator) const {
    Tensor in = checked_image(image, "SaltAndPepper");
    Tensor out = empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    RandomStream random(generator);
    float half = float(amount_ / 2), low = float(low_), high = float(high_);
    for (int64_t i = 0, n = in.numel(); i < n; ++i) {
        float u = random.uniform_float();
        dst[i] = u < half ? low : (u < 2 * half ? high : src[i]);
    }
    return out;
}

}  // namespace lumen::datasets
