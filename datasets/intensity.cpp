// Intensity transforms (datasets/intensity.h) as plain loops over a contiguous float32 copy of
// the image, one channel (or the whole image) at a time. Statistics are accumulated in double:
// a float sum over a 512^3 CT volume loses the digits a mean needs.
#include "datasets/intensity.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/error.h"
#include "datasets/random_stream.h"

namespace lumen::datasets {

namespace {

// sample.image after checking it, or an error naming the transform. Transforms change a
// clone() of it (a fresh contiguous copy) in place.
const Tensor& checked_image(const Sample& sample, const char* name) {
    const Tensor& image = sample.image;
    LUMEN_CHECK(image.defined(), name, "got a sample without an image");
    LUMEN_CHECK((image.ndim() == 3 || image.ndim() == 4) && image.dtype() == DType::float32 &&
                    image.is_cpu(),
                name, "expects a (C, H, W) or (C, D, H, W) float32 CPU image, got ", image.dtype(),
                " ", image.shape(), " on ", image.device());
    return image;
}

Sample with_image(const Sample& sample, Tensor image) {
    Sample out = sample;
    out.image = std::move(image);
    return out;
}

// The image's values split into `groups` equal runs: each channel, or the whole image as one.
struct Run {
    float* data;
    int64_t size;
};
std::vector<Run> runs(Tensor& image, bool per_channel) {
    int64_t groups = per_channel ? image.size(0) : 1, size = image.numel() / groups;
    std::vector<Run> out;
    for (int64_t g = 0; g < groups; ++g) out.push_back({image.data_ptr<float>() + g * size, size});
    return out;
}

void check_probability(double p, const char* name) {
    LUMEN_CHECK(p >= 0.0 && p <= 1.0, name, "p must lie in [0, 1], got ", p);
}

void check_range(const std::array<double, 2>& range, const char* name, const char* what) {
    LUMEN_CHECK(range[0] <= range[1], name, what, " range must satisfy low <= high, got [",
                range[0], ", ", range[1], "]");
}

// Mean and population std (ddof 0) of the run's values, or of its nonzero ones; two passes,
// so the variance does not suffer the cancellation of E[x^2] - E[x]^2.
struct Moments {
    double mean = 0, std = 0;
    int64_t count = 0;
};
Moments moments(const Run& run, bool nonzero) {
    Moments m;
    double sum = 0;
    for (int64_t i = 0; i < run.size; ++i) {
        if (nonzero && run.data[i] == 0.0f) continue;
        sum += run.data[i];
        ++m.count;
    }
    if (m.count == 0) return m;
    m.mean = sum / double(m.count);
    double squares = 0;
    for (int64_t i = 0; i < run.size; ++i) {
        if (nonzero && run.data[i] == 0.0f) continue;
        double d = double(run.data[i]) - m.mean;
        squares += d * d;
    }
    m.std = std::sqrt(squares / double(m.count));
    return m;
}

std::pair<double, double> min_max(const Run& run) {
    if (run.size == 0) return {0.0, 0.0};
    auto [low, high] = std::minmax_element(run.data, run.data + run.size);
    return {*low, *high};
}

// numpy.percentile(values, q) with its default method 'linear': position q/100 (n - 1) in the
// sorted values, and numpy's _lerp between the order statistics either side of it (it
// interpolates from the nearer end, so t = 0 and t = 1 give the order statistics exactly).
// Reorders `values`; n >= 1.
double percentile(std::vector<float>& values, double q) {
    double position = double(values.size() - 1) * (q / 100.0);
    size_t below = size_t(std::floor(position)), above = std::min(below + 1, values.size() - 1);
    double t = position - double(below);
    std::nth_element(values.begin(), values.begin() + below, values.end());
    double a = values[below];
    // After nth_element everything past `below` is >= a: the next order statistic is their min.
    double b = above == below ? a : *std::min_element(values.begin() + below + 1, values.end());
    return t >= 0.5 ? b - (b - a) * (1.0 - t) : a + (b - a) * t;
}

}  // namespace

// ---- deterministic ----

ClipWindow::ClipWindow(double low, double high, bool rescale)
    : low_(low), high_(high), rescale_(rescale) {
    LUMEN_CHECK(low < high, "ClipWindow", "window must satisfy low < high, got [", low, ", ", high,
                "]");
}

Sample ClipWindow::operator()(const Sample& sample, Generator&) const {
    Tensor image = checked_image(sample, "ClipWindow").clone();
    float* x = image.data_ptr<float>();
    for (int64_t i = 0, n = image.numel(); i < n; ++i) {
        double v = std::clamp(double(x[i]), low_, high_);
        x[i] = float(rescale_ ? (v - low_) / (high_ - low_) : v);
    }
    return with_image(sample, image);
}

PercentileClip::PercentileClip(double lower_pct, double upper_pct, bool nonzero)
    : lower_pct_(lower_pct), upper_pct_(upper_pct), nonzero_(nonzero) {
    LUMEN_CHECK(0 <= lower_pct && lower_pct < upper_pct && upper_pct <= 100, "PercentileClip",
                "percentiles must satisfy 0 <= lower < upper <= 100, got lower ", lower_pct,
                " and upper ", upper_pct);
}

Sample PercentileClip::operator()(const Sample& sample, Generator&) const {
    Tensor image = checked_image(sample, "PercentileClip").clone();
    std::vector<float> values;
    for (const Run& run : runs(image, true)) {
        values.clear();
        for (int64_t i = 0; i < run.size; ++i) {
            if (!nonzero_ || run.data[i] != 0.0f) values.push_back(run.data[i]);
        }
        if (values.empty()) continue;
        double low = percentile(values, lower_pct_), high = percentile(values, upper_pct_);
        for (int64_t i = 0; i < run.size; ++i) {
            if (nonzero_ && run.data[i] == 0.0f) continue;
            run.data[i] = float(std::clamp(double(run.data[i]), low, high));
        }
    }
    return with_image(sample, image);
}

ZScore::ZScore(bool nonzero, bool per_channel) : nonzero_(nonzero), per_channel_(per_channel) {}

Sample ZScore::operator()(const Sample& sample, Generator&) const {
    Tensor image = checked_image(sample, "ZScore").clone();
    for (const Run& run : runs(image, per_channel_)) {
        Moments m = moments(run, nonzero_);
        if (m.count == 0) continue;
        double divisor = m.std == 0.0 ? 1.0 : m.std;  // MONAI: std 0 only subtracts the mean
        for (int64_t i = 0; i < run.size; ++i) {
            if (nonzero_ && run.data[i] == 0.0f) continue;
            run.data[i] = float((run.data[i] - m.mean) / divisor);
        }
    }
    return with_image(sample, image);
}

ScaleRange::ScaleRange(double a_min, double a_max, double b_min, double b_max, bool clip)
    : a_min_(a_min), a_max_(a_max), b_min_(b_min), b_max_(b_max), clip_(clip) {
    LUMEN_CHECK(a_min < a_max, "ScaleRange", "source range must satisfy a_min < a_max, got [",
                a_min, ", ", a_max, "]");
    LUMEN_CHECK(b_min < b_max, "ScaleRange", "target range must satisfy b_min < b_max, got [",
                b_min, ", ", b_max, "]");
}

Sample ScaleRange::operator()(const Sample& sample, Generator&) const {
    Tensor image = checked_image(sample, "ScaleRange").clone();
    float* x = image.data_ptr<float>();
    double scale = (b_max_ - b_min_) / (a_max_ - a_min_);
    for (int64_t i = 0, n = image.numel(); i < n; ++i) {
        double v = (x[i] - a_min_) * scale + b_min_;
        x[i] = float(clip_ ? std::clamp(v, b_min_, b_max_) : v);
    }
    return with_image(sample, image);
}

Sample ScaleToUnit::operator()(const Sample& sample, Generator&) const {
    Tensor image = checked_image(sample, "ScaleToUnit").clone();
    for (const Run& run : runs(image, true)) {
        auto [low, high] = min_max(run);
        for (int64_t i = 0; i < run.size; ++i)
            run.data[i] = high > low ? float((run.data[i] - low) / (high - low)) : 0.0f;
    }
    return with_image(sample, image);
}

// ---- random ----

RandomGamma::RandomGamma(std::array<double, 2> gamma, double p) : gamma_(gamma), p_(p) {
    check_range(gamma, "RandomGamma", "gamma");
    LUMEN_CHECK(gamma[0] > 0, "RandomGamma", "gamma must be > 0, got [", gamma[0], ", ", gamma[1],
                "]");
    check_probability(p, "RandomGamma");
}

Sample RandomGamma::operator()(const Sample& sample, Generator& generator) const {
    checked_image(sample, "RandomGamma");
    RandomStream random(generator);
    if (!(random.uniform() < p_)) return sample;
    Tensor image = sample.image.clone();
    double gamma = random.uniform(gamma_[0], gamma_[1]);
    Run run = runs(image, false)[0];
    auto [low, high] = min_max(run);
    if (high == low) return sample;
    for (int64_t i = 0; i < run.size; ++i) {
        double unit = (run.data[i] - low) / (high - low);
        run.data[i] = float(std::pow(unit, gamma) * (high - low) + low);
    }
    return with_image(sample, image);
}

RandomGaussianNoise::RandomGaussianNoise(double sigma, double p)
    : RandomGaussianNoise(std::array<double, 2>{sigma, sigma}, p) {}

RandomGaussianNoise::RandomGaussianNoise(std::array<double, 2> sigma, double p)
    : sigma_(sigma), p_(p) {
    check_range(sigma, "RandomGaussianNoise", "sigma");
    LUMEN_CHECK(sigma[0] >= 0, "RandomGaussianNoise", "sigma must be >= 0, got [", sigma[0], ", ",
                sigma[1], "]");
    check_probability(p, "RandomGaussianNoise");
}

Sample RandomGaussianNoise::operator()(const Sample& sample, Generator& generator) const {
    checked_image(sample, "RandomGaussianNoise");
    RandomStream random(generator);
    if (!(random.uniform() < p_)) return sample;
    Tensor image = sample.image.clone();
    float sigma = float(random.uniform(sigma_[0], sigma_[1])), a = 0, b = 0;
    float* x = image.data_ptr<float>();
    int64_t n = image.numel();
    for (int64_t i = 0; i < n; i += 2) {
        random.normal_pair(a, b);
        x[i] += sigma * a;
        if (i + 1 < n) x[i + 1] += sigma * b;
    }
    return with_image(sample, image);
}

RandomBrightnessContrast::RandomBrightnessContrast(std::array<double, 2> brightness,
                                                   std::array<double, 2> contrast, double p)
    : brightness_(brightness), contrast_(contrast), p_(p) {
    check_range(brightness, "RandomBrightnessContrast", "brightness");
    check_range(contrast, "RandomBrightnessContrast", "contrast");
    check_probability(p, "RandomBrightnessContrast");
}

Sample RandomBrightnessContrast::operator()(const Sample& sample, Generator& generator) const {
    checked_image(sample, "RandomBrightnessContrast");
    RandomStream random(generator);
    if (!(random.uniform() < p_)) return sample;
    Tensor image = sample.image.clone();
    for (const Run& run : runs(image, true)) {
        double multiplier = random.uniform(brightness_[0], brightness_[1]);
        double factor = random.uniform(contrast_[0], contrast_[1]);
        // nnU-Net MultiplicativeBrightnessTransform, then ContrastTransform(preserve_range):
        // its mean, min and max are those of the brightened channel.
        for (int64_t i = 0; i < run.size; ++i) run.data[i] = float(run.data[i] * multiplier);
        Moments m = moments(run, false);
        auto [low, high] = min_max(run);
        for (int64_t i = 0; i < run.size; ++i) {
            double v = (run.data[i] - m.mean) * factor + m.mean;
            run.data[i] = float(std::clamp(v, low, high));
        }
    }
    return with_image(sample, image);
}

}  // namespace lumen::datasets
