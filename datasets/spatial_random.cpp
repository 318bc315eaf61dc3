// The spatial SampleTransforms of datasets/spatial.h: each checks its options once, draws its
// parameters from the generator through RandomStream and calls the functions of spatial.cpp, so
// the resampling and the affine update are written once.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "datasets/random_stream.h"
#include "datasets/spatial.h"

namespace lumen::datasets {

namespace {

void check_size_option(const Shape& size, const char* name) {
    bool valid = size.size() == 2 || size.size() == 3;
    for (int64_t s : size) valid = valid && s > 0;
    LUMEN_CHECK(valid, name, "size needs 2 or 3 entries, all > 0, got ", size);
}

void check_probability(double p, const char* name) {
    LUMEN_CHECK(p >= 0 && p <= 1, name, "p must lie in [0, 1], got ", p);
}

// The sample's spatial shape, checked to have as many dims as the transform's `size`.
Shape checked_spatial(const Sample& sample, const Shape& size, const char* name) {
    Shape spatial = check_sample(sample, name);
    LUMEN_CHECK(spatial.size() == size.size(), name, "has a size ", size,
                " for a sample of spatial shape ", spatial);
    return spatial;
}

// Where a patch of `size` starts along a dim of `extent` (the sampling offset): a dim smaller
// than the patch is padded symmetrically (a negative start), otherwise `start` is clamped so the
// patch fits.
int64_t patch_start(int64_t extent, int64_t size, int64_t start) {
    if (extent < size) return -((size - extent) / 2);
    return std::clamp<int64_t>(start, 0, extent - size);
}

// The linear index of a random voxel of `label` that is foreground (> 0) when `positive` and
// background (<= 0) otherwise, or nullopt when there is none. With num_classes, a positive draw
// first picks a class in [1, num_classes) present in the label, uniformly.
std::optional<int64_t> random_voxel(const Tensor& label, bool positive,
                                    std::optional<int64_t> num_classes, RandomStream& random) {
    Tensor flat = label.contiguous();
    const int64_t* values = flat.data_ptr<int64_t>();
    const int64_t n = flat.numel();
    int64_t wanted = -1;  // -1: any foreground class
    if (num_classes) {
        std::vector<int64_t> counts(size_t(*num_classes), 0);
        for (int64_t i = 0; i < n; ++i) {
            LUMEN_CHECK(values[i] >= 0 && values[i] < *num_classes, "RandomPosNegCrop",
                        "label values must lie in [0, num_classes = ", *num_classes, "), got ",
                        values[i]);
            ++counts[size_t(values[i])];
        }
        std::vector<int64_t> present;
        for (int64_t c = 1; c < *num_classes; ++c)
            if (counts[size_t(c)] > 0) present.push_back(c);
        if (positive && present.empty()) return std::nullopt;
        if (positive) wanted = present[random.below(present.size())];
    }
    auto hit = [positive, wanted](int64_t v) {
        if (!positive) return v <= 0;
        return wanted < 0 ? v > 0 : v == wanted;
    };
    int64_t count = std::count_if(values, values + n, hit);
    if (count == 0) return std::nullopt;
    int64_t k = int64_t(random.below(uint64_t(count)));
    for (int64_t i = 0; i < n; ++i) {
        if (hit(values[i]) && k-- == 0) return i;
    }
    return std::nullopt;  // not reached
}

// The 3x3 rotation by `angle` radians in the plane of axes (a, b), turning a towards b.
std::array<double, 9> plane_rotation(int a, int b, double angle) {
    std::array<double, 9> r = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    r[3 * a + a] = std::cos(angle);
    r[3 * a + b] = -std::sin(angle);
    r[3 * b + a] = std::sin(angle);
    r[3 * b + b] = std::cos(angle);
    return r;
}

std::array<double, 9> matmul3(const std::array<double, 9>& x, const std::array<double, 9>& y) {
    std::array<double, 9> out{};
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            for (int k = 0; k < 3; ++k) out[3 * r + c] += x[3 * r + k] * y[3 * k + c];
    return out;
}

}  // namespace

Reorient::Reorient(std::string code) : code_(std::move(code)) {
    std::string axes = code_;
    for (char& c : axes) c = c == 'L' ? 'R' : c == 'P' ? 'A' : c == 'I' ? 'S' : c;
    std::sort(axes.begin(), axes.end());
    LUMEN_CHECK(axes == "ARS", "Reorient",
                "code needs one of L/R, P/A and I/S each (as \"RAS\"), got \"", code_, "\"");
}

Sample Reorient::operator()(const Sample& sample, Generator&) const {
    return reorient(sample, code_);
}

ResampleToSpacing::ResampleToSpacing(std::vector<double> spacing) : spacing_(std::move(spacing)) {
    LUMEN_CHECK(spacing_.size() == 2 || spacing_.size() == 3, "ResampleToSpacing",
                "spacing needs 2 or 3 entries, got ", spacing_.size());
    for (double s : spacing_)
        LUMEN_CHECK(std::isfinite(s) && s > 0, "ResampleToSpacing",
                    "spacings must be finite and > 0, got ", s);
}

Sample ResampleToSpacing::operator()(const Sample& sample, Generator&) const {
    return resample_to_spacing(sample, spacing_);
}

Resize::Resize(Shape size) : size_(std::move(size)) { check_size_option(size_, "Resize"); }

Sample Resize::operator()(const Sample& sample, Generator&) const {
    checked_spatial(sample, size_, "Resize");
    return resize(sample, size_);
}

CenterCropOrPad::CenterCropOrPad(Shape size) : size_(std::move(size)) {
    check_size_option(size_, "CenterCropOrPad");
}

Sample CenterCropOrPad::operator()(const Sample& sample, Generator&) const {
    checked_spatial(sample, size_, "CenterCropOrPad");
    return center_crop_or_pad(sample, size_);
}

RandomCropOrPad::RandomCropOrPad(Shape size) : size_(std::move(size)) {
    check_size_option(size_, "RandomCropOrPad");
}

Sample RandomCropOrPad::operator()(const Sample& sample, Generator& generator) const {
    Shape spatial = checked_spatial(sample, size_, "RandomCropOrPad");
    RandomStream random(generator);
    VoxelMap map;
    for (size_t d = 0; d < spatial.size(); ++d) {
        int64_t positions = std::max<int64_t>(spatial[d] - size_[d] + 1, 1);
        int64_t start = int64_t(random.below(uint64_t(positions)));
        map.offset[d] = double(patch_start(spatial[d], size_[d], start));
    }
    return warp_affine_nd(sample, map, size_);
}

RandomPosNegCrop::RandomPosNegCrop(Shape size, double pos, double neg,
                                   std::optional<int64_t> num_classes)
    : size_(std::move(size)), pos_(pos), neg_(neg), num_classes_(num_classes) {
    check_size_option(size_, "RandomPosNegCrop");
    LUMEN_CHECK(pos >= 0 && neg >= 0 && pos + neg > 0 && std::isfinite(pos + neg),
                "RandomPosNegCrop", "pos and neg must be >= 0 with pos + neg > 0, got pos ", pos,
                " and neg ", neg);
    LUMEN_CHECK(!num_classes || *num_classes >= 2, "RandomPosNegCrop",
                "num_classes must be >= 2 (background and one class), got ",
                num_classes.value_or(0));
}

Sample RandomPosNegCrop::operator()(const Sample& sample, Generator& generator) const {
    Shape spatial = checked_spatial(sample, size_, "RandomPosNegCrop");
    const int64_t n = int64_t(spatial.size());
    RandomStream random(generator);
    bool positive = random.uniform() * (pos_ + neg_) < pos_;
    std::optional<int64_t> centre;
    if (sample.label.defined()) centre = random_voxel(sample.label, positive, num_classes_, random);
    Shape position(size_t(n), 0);  // the centre's index (the label is row-major)
    int64_t rest = centre.value_or(0);
    for (int64_t d = n - 1; d >= 0; --d) {
        position[d] = rest % spatial[d];
        rest /= spatial[d];
    }
    VoxelMap map;
    for (int64_t d = 0; d < n; ++d) {
        // MONAI centres the patch on the voxel (start = centre - size / 2) and shifts it to fit;
        // without a centre the start is uniform as in RandomCropOrPad.
        int64_t start =
            centre
                ? position[d] - size_[d] / 2
                : int64_t(random.below(uint64_t(std::max<int64_t>(spatial[d] - size_[d] + 1, 1))));
        map.offset[d] = double(patch_start(spatial[d], size_[d], start));
    }
    return warp_affine_nd(sample, map, size_);
}

RandomFlip::RandomFlip(std::vector<int64_t> axes, double p) : axes_(std::move(axes)), p_(p) {
    for (size_t i = 0; i < axes_.size(); ++i) {
        LUMEN_CHECK(axes_[i] >= 0 && axes_[i] < 3, "RandomFlip", "axes must lie in [0, 3), got ",
                    axes_);
        for (size_t j = 0; j < i; ++j)
            LUMEN_CHECK(axes_[j] != axes_[i], "RandomFlip", "axes must not repeat, got ", axes_);
    }
    check_probability(p, "RandomFlip");
}

Sample RandomFlip::operator()(const Sample& sample, Generator& generator) const {
    Shape spatial = check_sample(sample, "RandomFlip");
    for (int64_t axis : axes_) {
        LUMEN_CHECK(axis < int64_t(spatial.size()), "RandomFlip", "axis ", axis,
                    " does not exist for spatial shape ", spatial);
    }
    RandomStream random(generator);
    Sample out = sample;
    for (int64_t axis : axes_)
        if (random.uniform() < p_) out = flip(out, axis);
    return out;
}

RandomRot90::RandomRot90(double p, std::array<int64_t, 2> axes) : p_(p), axes_(axes) {
    check_probability(p, "RandomRot90");
    LUMEN_CHECK(axes[0] >= 0 && axes[0] < 3 && axes[1] >= 0 && axes[1] < 3 && axes[0] != axes[1],
                "RandomRot90", "axes must be two distinct dims in [0, 3), got [", axes[0], ", ",
                axes[1], "]");
}

Sample RandomRot90::operator()(const Sample& sample, Generator& generator) const {
    Shape spatial = check_sample(sample, "RandomRot90");
    int64_t n = int64_t(spatial.size());
    LUMEN_CHECK(axes_[0] < n && axes_[1] < n, "RandomRot90", "axes [", axes_[0], ", ", axes_[1],
                "] do not exist for spatial shape ", spatial);
    RandomStream random(generator);
    bool turn = random.uniform() < p_;
    int64_t k = 1 + int64_t(random.below(3));
    return turn ? rot90(sample, k, axes_) : sample;
}

SampleRandomAffine::SampleRandomAffine(SampleAffineOptions options) : options_(std::move(options)) {
    const SampleAffineOptions& o = options_;
    LUMEN_CHECK(o.degrees.size() == 1 || o.degrees.size() == 3, "SampleRandomAffine",
                "degrees needs 1 angle (2-D) or 3 (3-D), got ", o.degrees);
    for (double d : o.degrees) {
        LUMEN_CHECK(d >= 0 && std::isfinite(d), "SampleRandomAffine",
                    "degrees must be finite and >= 0, got ", o.degrees);
    }
    LUMEN_CHECK(o.scale[0] > 0 && o.scale[0] <= o.scale[1] && std::isfinite(o.scale[1]),
                "SampleRandomAffine", "scale range must satisfy 0 < low <= high, got [", o.scale[0],
                ", ", o.scale[1], "]");
    check_probability(o.p, "SampleRandomAffine");
}

Sample SampleRandomAffine::operator()(const Sample& sample, Generator& generator) const {
    const SampleAffineOptions& o = options_;
    Shape spatial = check_sample(sample, "SampleRandomAffine");
    const int n = int(spatial.size());
    size_t expected = n == 2 ? 1 : 3;
    LUMEN_CHECK(o.degrees.size() == expected, "SampleRandomAffine", "has ", o.degrees.size(),
                " rotation angles, expected ", expected, " for spatial shape ", spatial);
    RandomStream random(generator);
    if (random.uniform() >= o.p) return sample;
    // R = R2 R1 R0: about axis 0 (plane 1 -> 2) first; 2-D turns in plane 0 -> 1 (as R2).
    const int planes[3][2] = {{1, 2}, {2, 0}, {0, 1}};
    std::array<double, 9> rotation = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    for (size_t i = 0; i < expected; ++i) {
        double angle = random.uniform(-o.degrees[i], o.degrees[i]) * std::numbers::pi / 180;
        const int* plane = planes[n == 2 ? 2 : i];
        rotation = matmul3(plane_rotation(plane[0], plane[1], angle), rotation);
    }
    double scale = random.uniform(o.scale[0], o.scale[1]);
    // Forward p_out = scale R (p_in - c) + c, so the map is q = c + R^T (p - c) / scale.
    VoxelMap map;
    for (int r = 0; r < n; ++r) {
        double centre_r = double(spatial[size_t(r)] - 1) / 2;
        map.offset[size_t(r)] = centre_r;
        for (int c = 0; c < n; ++c) {
            map.matrix[size_t(3 * r + c)] = rotation[size_t(3 * c + r)] / scale;
            map.offset[size_t(r)] -=
                map.matrix[size_t(3 * r + c)] * double(spatial[size_t(c)] - 1) / 2;
        }
    }
    return warp_affine_nd(sample, map, spatial);
}

}  // namespace lumen::datasets
