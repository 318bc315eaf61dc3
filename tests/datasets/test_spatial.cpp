// Spatial transforms of a Sample (datasets/spatial.h), 2-D and 3-D: hand-computed values, image,
// label and target kept aligned, world positions kept by the affine, reorientation, resampling,
// the random transforms' draws, determinism and foreground sampling, and every error.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <set>

#include <catch2/catch.hpp>

#include "datasets/nifti.h"
#include "datasets/spatial.h"
#include "ops/creation.h"

using namespace lumen;
using namespace lumen::datasets;

namespace {

Shape spatial_of(const Tensor& x) { return Shape(x.shape().begin() + 1, x.shape().end()); }

Shape with_channels(int64_t channels, Shape spatial) {
    spatial.insert(spatial.begin(), channels);
    return spatial;
}

int64_t linear(const Shape& shape, const Shape& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < shape.size(); ++d) offset = offset * shape[d] + index[d];
    return offset;
}

// Calls fn(index) for every index of `shape`, the last dim fastest.
void for_each_index(const Shape& shape, const std::function<void(const Shape&)>& fn) {
    Shape index(shape.size());
    for (int64_t i = 0; i < shape_numel(shape); ++i) {
        for (int64_t d = int64_t(shape.size()) - 1, rest = i; d >= 0; --d) {
            index[size_t(d)] = rest % shape[size_t(d)];
            rest /= shape[size_t(d)];
        }
        fn(index);
    }
}

// world = A (p, 1) for a 2-D or 3-D voxel position p (a 2-D one has third coordinate 0).
template <typename T>
std::array<double, 3> world(const Affine& affine, const std::vector<T>& position) {
    std::vector<double> p(position.begin(), position.end());
    p.resize(3, 0.0);
    std::array<double, 3> out{};
    for (int r = 0; r < 3; ++r)
        out[r] = affine[4 * r] * p[0] + affine[4 * r + 1] * p[1] + affine[4 * r + 2] * p[2] +
                 affine[4 * r + 3];
    return out;
}

int64_t count_of(const Tensor& label, int64_t value) {
    auto values = label.to_vector<int64_t>();
    return std::count(values.begin(), values.end(), value);
}

bool same_point(const std::array<double, 3>& a, const std::array<double, 3>& b) {
    for (int r = 0; r < 3; ++r)
        if (std::abs(a[r] - b[r]) > 1e-9 * (1 + std::abs(a[r]))) return false;
    return true;
}

// A rotated, anisotropic, shifted voxel grid.
const Affine kGrid = {0.5 * 0.8, -2 * 0.6, 0, 10, 0.5 * 0.6, 2 * 0.8, 0, -5,
                      0,         0,        3, 7,  0,         0,       0, 1};

// A traceable sample: random labels in [0, classes), image channel 0 the label as float and
// channel 1 the voxel's row-major number, target that number + 0.5, affine kGrid.
Sample traced(const Shape& spatial, int64_t classes = 3, uint64_t seed = 1) {
    int64_t n = shape_numel(spatial);
    std::vector<int64_t> labels(n);
    std::vector<float> image(2 * n), target(n);
    uint64_t state = seed;
    for (int64_t i = 0; i < n; ++i) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        labels[size_t(i)] = int64_t((state >> 33) % uint64_t(classes));
        image[size_t(i)] = float(labels[size_t(i)]);
        image[size_t(n + i)] = float(i);
        target[size_t(i)] = float(i) + 0.5f;
    }
    Sample sample;
    sample.image = from_vector(image, with_channels(2, spatial));
    sample.label = from_vector(labels, spatial);
    sample.target = from_vector(target, with_channels(1, spatial));
    sample.affine = kGrid;
    return sample;
}

// Checks that `out` is `in` moved by an integer map: output voxel p holds input voxel source(p),
// or the fill outside the input (image_fill for the image, 0 for label and target), and that
// world(out.affine, p) == world(in.affine, source(p)).
void check_moved(const Sample& in, const Sample& out,
                 const std::function<Shape(const Shape&)>& source, float image_fill = 0) {
    Shape in_size = spatial_of(in.image), out_size = spatial_of(out.image);
    REQUIRE(out.label.shape() == out_size);
    REQUIRE(spatial_of(out.target) == out_size);
    int64_t n_in = shape_numel(in_size), n_out = shape_numel(out_size);
    auto image_in = in.image.to_vector<float>(), image_out = out.image.to_vector<float>();
    auto target_in = in.target.to_vector<float>(), target_out = out.target.to_vector<float>();
    auto label_in = in.label.to_vector<int64_t>(), label_out = out.label.to_vector<int64_t>();
    for_each_index(out_size, [&](const Shape& p) {
        Shape q = source(p);
        bool inside = true;
        for (size_t d = 0; d < q.size(); ++d) inside = inside && q[d] >= 0 && q[d] < in_size[d];
        int64_t from = inside ? linear(in_size, q) : 0, to = linear(out_size, p);
        for (int64_t c = 0; c < 2; ++c)
            REQUIRE(image_out[c * n_out + to] == (inside ? image_in[c * n_in + from] : image_fill));
        REQUIRE(label_out[to] == (inside ? label_in[from] : 0));
        REQUIRE(target_out[to] == (inside ? target_in[from] : 0.0f));
        REQUIRE(same_point(world(out.affine, p), world(in.affine, q)));
    });
}

// Image channel 0 equals the label wherever the label is defined (alignment kept).
void check_label_matches_image(const Sample& sample) {
    auto image = sample.image.to_vector<float>();
    auto label = sample.label.to_vector<int64_t>();
    for (size_t i = 0; i < label.size(); ++i) REQUIRE(image[i] == float(label[i]));
}

template <typename T>
bool same_values(const Tensor& a, const Tensor& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    return a.shape() == b.shape() && a.to_vector<T>() == b.to_vector<T>();
}

bool same(const Sample& a, const Sample& b) {
    return same_values<float>(a.image, b.image) && same_values<int64_t>(a.label, b.label) &&
           same_values<float>(a.target, b.target) && a.affine == b.affine;
}

// check_moved for a crop or pad of a kGrid sample, whose integer offset is read back from the
// moved affine's translation (kGrid's translation + L offset, L's inverse written out, det L = 1)
// and returned, for the caller to compare with the expected one.
Shape check_shifted(const Sample& in, const Sample& out, float image_fill = 0) {
    const Affine& a = out.affine;
    double dx = a[3] - kGrid[3], dy = a[7] - kGrid[7], dz = a[11] - kGrid[11];
    Shape offset = {std::llround(1.6 * dx + 1.2 * dy), std::llround(-0.3 * dx + 0.4 * dy),
                    std::llround(dz / 3)};
    offset.resize(size_t(in.spatial_dims()));
    auto source = [&](const Shape& p) {
        Shape q = p;
        for (size_t d = 0; d < q.size(); ++d) q[d] += offset[d];
        return q;
    };
    check_moved(in, out, source, image_fill);
    return offset;
}

Sample plain(const std::vector<float>& values, const Shape& spatial) {
    Sample sample;
    sample.image = from_vector(values, with_channels(1, spatial));
    return sample;
}

}  // namespace

TEST_CASE("spatial: flip and rot90 give hand-computed values", "[datasets][spatial]") {
    // (2, 3): [[0, 1, 2], [3, 4, 5]]
    Sample x = plain({0, 1, 2, 3, 4, 5}, {2, 3});
    CHECK(flip(x, 0).image.to_vector<float>() == std::vector<float>{3, 4, 5, 0, 1, 2});
    CHECK(flip(x, 1).image.to_vector<float>() == std::vector<float>{2, 1, 0, 5, 4, 3});
    // np.rot90(x, k): k = 1 [[2, 5], [1, 4], [0, 3]], k = 2 [[5, 4, 3], [2, 1, 0]],
    // k = 3 [[3, 0], [4, 1], [5, 2]]
    Sample r1 = rot90(x, 1), r2 = rot90(x, 2), r3 = rot90(x, 3);
    CHECK(r1.image.shape() == Shape{1, 3, 2});
    CHECK(r1.image.to_vector<float>() == std::vector<float>{2, 5, 1, 4, 0, 3});
    CHECK(r2.image.to_vector<float>() == std::vector<float>{5, 4, 3, 2, 1, 0});
    CHECK(r3.image.to_vector<float>() == std::vector<float>{3, 0, 4, 1, 5, 2});
    CHECK(rot90(x, -1).image.to_vector<float>() == r3.image.to_vector<float>());
    CHECK(rot90(x, 4).image.to_vector<float>() == x.image.to_vector<float>());
    CHECK(rot90(x, 1, {1, 0}).image.to_vector<float>() == r3.image.to_vector<float>());
}

TEST_CASE("spatial: flip and rot90 move every tensor and keep world positions",
          "[datasets][spatial]") {
    for (Shape size : {Shape{4, 5}, Shape{3, 4, 5}}) {
        Sample x = traced(size);
        int64_t n = int64_t(size.size());
        for (int64_t axis = 0; axis < n; ++axis) {
            check_moved(x, flip(x, axis), [&](const Shape& p) {
                Shape q = p;
                q[axis] = size[axis] - 1 - p[axis];
                return q;
            });
        }
        int64_t a = n - 1, b = 0;  // the plane (last, first): not the default order
        for (int64_t k = 1; k < 4; ++k) {
            Sample out = rot90(x, k, {a, b});
            check_moved(x, out, [&](const Shape& p) {
                Shape q = p;
                if (k == 1) q[a] = p[b], q[b] = size[b] - 1 - p[a];
                if (k == 2) q[a] = size[a] - 1 - p[a], q[b] = size[b] - 1 - p[b];
                if (k == 3) q[a] = size[a] - 1 - p[b], q[b] = p[a];
                return q;
            });
        }
    }
}

TEST_CASE("spatial: crop, pad and center_crop_or_pad use the right offsets",
          "[datasets][spatial]") {
    // (3, 4) ramp: crop rows 1-2, columns 1-2 -> [[5, 6], [9, 10]]
    Sample x = plain({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
    CHECK(crop(x, {1, 1}, {2, 2}).image.to_vector<float>() == std::vector<float>{5, 6, 9, 10});
    // one row before, two columns after, filled with -1
    Sample padded = pad(plain({1, 2, 3, 4}, {2, 2}), {1, 0}, {0, 2}, -1);
    CHECK(padded.image.to_vector<float>() ==
          std::vector<float>{-1, -1, -1, -1, 1, 2, -1, -1, 3, 4, -1, -1});
    for (Shape size : {Shape{5, 6}, Shape{4, 5, 6}}) {
        Sample s = traced(size);
        int64_t n = int64_t(size.size());
        Shape start(size_t(n), 1), box(size_t(n), 2), after(size_t(n), 1), before, minus_before;
        for (int64_t d = 0; d < n; ++d) before.push_back(d + 1), minus_before.push_back(-d - 1);
        CHECK(check_shifted(s, crop(s, start, box)) == start);
        CHECK(check_shifted(s, pad(s, before, after, 7.0), 7.0f) == minus_before);
        // The centre crop starts at old / 2 - new / 2 = 1 (MONAI), the pad of 9 - 6 puts 1 voxel
        // in front, the first dim is kept.
        Shape target = size, offset(size_t(n), 0);
        target[1] = 2, target[n - 1] = 9;
        offset[n - 1] = -1;
        if (n == 3) offset[1] = 1;
        CHECK(check_shifted(s, center_crop_or_pad(s, target)) == offset);
        Generator generator(3);
        CHECK(same(CenterCropOrPad(target)(s, generator), center_crop_or_pad(s, target)));
    }
}

TEST_CASE("spatial: resize matches torch's bilinear and nearest interpolation",
          "[datasets][spatial]") {
    // F.interpolate([[0, 1], [2, 3]], size=(4, 4), mode='bilinear', align_corners=False)
    Sample x = plain({0, 1, 2, 3}, {2, 2});
    x.label = from_vector(std::vector<int64_t>{1, 2, 3, 4}, {2, 2});
    Sample up = resize(x, {4, 4});
    std::vector<float> expected = {0,   0.25, 0.75, 1,   0.5, 0.75, 1.25, 1.5,
                                   1.5, 1.75, 2.25, 2.5, 2,   2.25, 2.75, 3};
    for (size_t i = 0; i < 16; ++i)
        CHECK(double(up.image.to_vector<float>()[i]) == Approx(expected[i]).margin(1e-6));
    CHECK(up.label.to_vector<int64_t>() ==
          std::vector<int64_t>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
    // 3 -> 2: source (p + 0.5) 1.5 - 0.5 = 0.25, 1.75; 'nearest' floor(p 1.5) = 0, 1
    Sample row = plain({0, 10, 20}, {1, 3});
    row.label = from_vector(std::vector<int64_t>{5, 6, 7}, {1, 3});
    Sample down = resize(row, {1, 2});
    CHECK(down.image.to_vector<float>() == std::vector<float>{2.5f, 17.5f});
    CHECK(down.label.to_vector<int64_t>() == std::vector<int64_t>{5, 6});
    // Trilinear on a linear function f = i + 2 j + 3 k is f at the clamped source point, and the
    // affine maps p to the world point of that source point.
    Shape in_size = {3, 4, 5}, out_size = {6, 3, 10};
    std::vector<float> ramp;
    for_each_index(in_size,
                   [&](const Shape& q) { ramp.push_back(float(q[0] + 2 * q[1] + 3 * q[2])); });
    Sample volume = plain(ramp, in_size);
    volume.affine = kGrid;
    Sample resized = resize(volume, out_size);
    Generator generator(3);
    CHECK(same(Resize(out_size)(volume, generator), resized));
    auto out = resized.image.to_vector<float>();
    for_each_index(out_size, [&](const Shape& p) {
        std::vector<double> q(3), clamped(3);
        for (size_t d = 0; d < 3; ++d) {
            double scale = double(in_size[d]) / double(out_size[d]);
            q[d] = (double(p[d]) + 0.5) * scale - 0.5;
            clamped[d] = std::clamp(q[d], 0.0, double(in_size[d] - 1));
        }
        REQUIRE(double(out[size_t(linear(out_size, p))]) ==
                Approx(clamped[0] + 2 * clamped[1] + 3 * clamped[2]).margin(1e-4));
        REQUIRE(same_point(world(resized.affine, p), world(kGrid, q)));
    });
}

TEST_CASE("spatial: reorient LPS to RAS and a permuted grid", "[datasets][spatial]") {
    Shape size = {3, 4, 5};
    Sample s = traced(size);
    s.affine = {-2, 0, 0, 10, 0, -3, 0, 20, 0, 0, 1.5, 30, 0, 0, 0, 1};
    REQUIRE(orientation_code(s.affine) == "LPS");
    Sample ras = reorient(s, "RAS");
    CHECK(orientation_code(ras.affine) == "RAS");
    check_moved(s, ras, [&](const Shape& p) { return Shape{2 - p[0], 3 - p[1], p[2]}; });
    CHECK(same(reorient(ras, "RAS"), ras));
    // Voxel axes along S, L, A: axis 0 -> z, axis 1 -> -x, axis 2 -> +y.
    s.affine = {0, -2, 0, 10, 0, 0, 3, 20, 1.5, 0, 0, 30, 0, 0, 0, 1};
    REQUIRE(orientation_code(s.affine) == "SLA");
    Sample canonical = reorient(s, "RAS");
    CHECK(canonical.image.shape() == Shape{2, 4, 5, 3});
    CHECK(orientation_code(canonical.affine) == "RAS");
    // new (i, j, k) = old (k, 3 - i, j)
    check_moved(s, canonical, [&](const Shape& p) { return Shape{p[2], 3 - p[0], p[1]}; });
    for (int c = 0; c < 3; ++c) CHECK(canonical.affine[size_t(5 * c)] > 0);
    check_moved(canonical, reorient(canonical, "SLA"), [&](const Shape& p) {
        return Shape{3 - p[1], p[2], p[0]};
    });
}

TEST_CASE("spatial: resample_to_spacing keeps the extent and the first voxel",
          "[datasets][spatial]") {
    for (Shape size : {Shape{4, 3}, Shape{4, 3, 2}}) {
        Sample s = traced(size);
        int64_t n = int64_t(size.size());
        s.affine = kGrid;
        s.affine[0] *= 4, s.affine[4] *= 4;  // axis 0 spacing 2, axis 1 spacing 2
        CHECK(voxel_spacing(s.affine, n)[0] == Approx(2.0));
        std::vector<double> spacing(size_t(n), 1.0);
        if (n == 3) spacing[2] = 1.5;  // 3 -> 1.5 doubles the last axis too
        Sample out = resample_to_spacing(s, spacing);
        Shape doubled = size;
        for (auto& v : doubled) v *= 2;
        REQUIRE(spatial_of(out.image) == doubled);
        std::vector<double> new_spacing = voxel_spacing(out.affine, n);
        for (int64_t d = 0; d < n; ++d) CHECK(new_spacing[d] == Approx(spacing[d]));
        auto image = out.image.to_vector<float>();
        auto label = out.label.to_vector<int64_t>(), label_in = s.label.to_vector<int64_t>();
        int64_t voxels = shape_numel(doubled);
        for_each_index(doubled, [&](const Shape& p) {
            // q = p / 2; the voxel number is linear in the index, so channel 1 interpolates
            // exactly: sum of q_d times the row-major stride, with q clamped at the far edge.
            std::vector<double> q(n);
            double expected = 0, stride = 1;
            Shape nearest(n);
            for (int64_t d = n - 1; d >= 0; --d) {
                q[d] = double(p[d]) / 2;
                expected += std::min(q[d], double(size[d] - 1)) * stride;
                stride *= double(size[d]);
                nearest[d] = std::min<int64_t>(int64_t(std::floor(q[d] + 0.5)), size[d] - 1);
            }
            int64_t at = linear(doubled, p);
            REQUIRE(double(image[size_t(voxels + at)]) == Approx(expected).margin(1e-4));
            REQUIRE(label[size_t(at)] == label_in[size_t(linear(size, nearest))]);
            REQUIRE(same_point(world(out.affine, p), world(s.affine, q)));
        });
    }
}

TEST_CASE("spatial: warp_affine_nd interpolates, fills and updates the affine",
          "[datasets][spatial]") {
    // A 90-degree rotation about the centre of a square is np.rot90 (up to rounding of cos).
    Sample s = traced({5, 5});
    double c = std::cos(std::numbers::pi / 2), sn = std::sin(std::numbers::pi / 2);
    VoxelMap map;  // q = R^T (p - 2) + 2 with R turning axis 0 towards axis 1
    map.matrix = {c, sn, 0, -sn, c, 0, 0, 0, 1};
    map.offset = {2 - 2 * (c + sn), 2 - 2 * (c - sn), 0};
    Sample warped = warp_affine_nd(s, map, {5, 5}), turned = rot90(s, 1);
    auto a = warped.image.to_vector<float>(), b = turned.image.to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) REQUIRE(double(a[i]) == Approx(b[i]).margin(1e-4));
    CHECK(warped.label.to_vector<int64_t>() == turned.label.to_vector<int64_t>());
    for (int i = 0; i < 16; ++i) CHECK(warped.affine[i] == Approx(turned.affine[i]).margin(1e-12));
    // A shift by 1.5 along the last axis averages two voxels, and reads `fill` past the end.
    Sample row = plain({0, 10, 20, 30}, {1, 4});
    VoxelMap shift;
    shift.offset = {0, 1.5, 0};
    CHECK(warp_affine_nd(row, shift, {1, 4}, PaddingMode::zeros, -10).image.to_vector<float>() ==
          std::vector<float>{15, 25, 10, -10});
    CHECK(warp_affine_nd(row, shift, {1, 4}, PaddingMode::border).image.to_vector<float>() ==
          std::vector<float>{15, 25, 30, 30});
}

TEST_CASE("spatial: RandomCropOrPad crops aligned patches that depend only on the seed",
          "[datasets][spatial]") {
    for (Shape size : {Shape{3, 10}, Shape{3, 6, 7}}) {
        Shape patch = size;
        patch[0] = 5, patch[1] = 4;  // pads the first dim (3 -> 5), crops the others
        Sample s = traced(size);
        RandomCropOrPad transform(patch);
        std::set<std::vector<float>> seen;
        for (uint64_t seed = 0; seed < 10; ++seed) {
            Generator generator(seed), again(seed);
            Sample out = transform(s, generator);
            REQUIRE(spatial_of(out.image) == patch);
            CHECK(same(out, transform(s, again)));
            check_label_matches_image(out);
            seen.insert(out.image.to_vector<float>());
            CHECK(check_shifted(s, out)[0] == -1);  // the symmetric pad of 2
        }
        CHECK(seen.size() > 1);
    }
}

TEST_CASE("spatial: RandomPosNegCrop centres patches on foreground or background",
          "[datasets][spatial]") {
    for (Shape size : {Shape{12, 3}, Shape{9, 8, 3}}) {
        Shape patch(size.size(), 4);  // the last dim (3) is smaller than the patch: padded
        Sample s = traced(size, 1);   // all background
        std::vector<int64_t> labels(size_t(shape_numel(size)), 0);
        labels[5] = 1;  // one foreground voxel
        s.label = from_vector(labels, size);
        RandomPosNegCrop positive(patch, 1, 0), negative(patch, 0, 1);
        for (uint64_t seed = 0; seed < 30; ++seed) {
            Generator generator(seed), again(seed);
            Sample out = positive(s, generator);
            REQUIRE(spatial_of(out.image) == patch);
            REQUIRE(count_of(out.label, 1) == 1);
            CHECK(same(out, positive(s, again)));
            check_shifted(s, out);
            REQUIRE(count_of(negative(s, generator).label, 0) > 0);
        }
    }
}

TEST_CASE("spatial: RandomPosNegCrop balances classes and falls back to uniform",
          "[datasets][spatial]") {
    Shape size = {40, 40};
    std::vector<int64_t> labels(1600, 0);
    for (size_t i = 0; i < 800; ++i) labels[i] = 1;  // class 1: the top half
    labels[1600 - 1] = 2;                            // class 2: one voxel in the corner
    Sample s = traced(size);
    s.label = from_vector(labels, size);
    RandomPosNegCrop uniform_foreground({4, 4}, 1, 0), balanced({4, 4}, 1, 0, 3);
    int plain_hits = 0, balanced_hits = 0;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        Generator a(seed), b(seed);
        plain_hits += count_of(uniform_foreground(s, a).label, 2);
        balanced_hits += count_of(balanced(s, b).label, 2);
    }
    CHECK(plain_hits < 10);     // 1 voxel of 801: rarely
    CHECK(balanced_hits > 70);  // class 2 picked about half of the time
    // No label, or no foreground: a uniform patch, still aligned.
    Sample unlabeled = traced(size);
    unlabeled.label = Tensor();
    Generator generator(1);
    CHECK(spatial_of(RandomPosNegCrop({5, 6}, 1, 0)(unlabeled, generator).image) == Shape{5, 6});
    Sample empty = traced(size, 1);
    check_label_matches_image(RandomPosNegCrop({5, 6}, 1, 0, 2)(empty, generator));
}

TEST_CASE("spatial: RandomFlip and RandomRot90 draw per call and stay aligned",
          "[datasets][spatial]") {
    for (Shape size : {Shape{4, 5}, Shape{3, 4, 5}}) {
        Sample s = traced(size);
        Generator generator(7);
        std::vector<int64_t> axes = {0, int64_t(size.size()) - 1};
        CHECK(same(RandomFlip(axes, 1.0)(s, generator), flip(flip(s, 0), axes[1])));
        CHECK(same(RandomFlip(axes, 0.0)(s, generator), s));
        CHECK(same(RandomRot90(0.0)(s, generator), s));
        std::set<int64_t> turns;
        std::set<std::vector<float>> flips;
        for (uint64_t seed = 0; seed < 40; ++seed) {
            Generator g(seed);
            Sample flipped = RandomFlip(axes, 0.5)(s, g);
            check_label_matches_image(flipped);
            flips.insert(flipped.image.to_vector<float>());
            Sample turned = RandomRot90(1.0, {0, 1})(s, g);
            check_label_matches_image(turned);
            for (int64_t k = 1; k < 4; ++k)
                if (same(turned, rot90(s, k))) turns.insert(k);
        }
        CHECK(turns == std::set<int64_t>{1, 2, 3});
        CHECK(flips.size() == 4);
    }
}

TEST_CASE("spatial: SampleRandomAffine moves image, label, target and affine together",
          "[datasets][spatial]") {
    for (Shape size : {Shape{9, 8}, Shape{7, 6, 8}}) {
        int64_t n = int64_t(size.size()), voxels = shape_numel(size);
        // The image's channels are the voxel coordinates: linear, so interpolation is exact.
        std::vector<float> coordinates(n * voxels);
        for_each_index(size, [&](const Shape& p) {
            for (int64_t d = 0; d < n; ++d)
                coordinates[size_t(d * voxels + linear(size, p))] = float(p[d]);
        });
        Sample s = traced(size, 4);
        s.image = from_vector(coordinates, with_channels(n, size));
        s.target = s.image.clone();
        s.affine = kIdentityAffine;
        SampleAffineOptions options = {std::vector<double>(n == 2 ? 1 : 3, 30.0), {0.8, 1.25}};
        SampleRandomAffine transform(options);
        auto label_in = s.label.to_vector<int64_t>();
        std::set<int64_t> allowed(label_in.begin(), label_in.end());  // and 0, the fill
        allowed.insert(0);
        for (uint64_t seed = 0; seed < 5; ++seed) {
            Generator generator(seed), again(seed);
            Sample out = transform(s, generator);
            REQUIRE(out.image.shape() == s.image.shape());
            CHECK(same(out, transform(s, again)));
            CHECK(out.target.to_vector<float>() == out.image.to_vector<float>());
            auto image = out.image.to_vector<float>();
            auto label = out.label.to_vector<int64_t>();
            for (int64_t v : label) REQUIRE(allowed.count(v) == 1);
            int inside_count = 0;
            for_each_index(size, [&](const Shape& p) {
                // With an identity input affine the new affine is the map: q = A' (p, 1).
                std::array<double, 3> q = world(out.affine, p);
                bool inside = true, tie = false;
                Shape nearest(n);
                for (int64_t d = 0; d < n; ++d) {
                    inside = inside && q[d] >= 0 && q[d] <= double(size[d] - 1);
                    tie = tie || std::abs(q[d] - std::floor(q[d]) - 0.5) < 1e-6;
                    nearest[d] = int64_t(std::floor(q[d] + 0.5));
                }
                if (!inside) return;
                ++inside_count;
                int64_t at = linear(size, p);
                for (int64_t d = 0; d < n; ++d)
                    REQUIRE(double(image[size_t(d * voxels + at)]) == Approx(q[d]).margin(1e-4));
                if (!tie) REQUIRE(label[size_t(at)] == label_in[size_t(linear(size, nearest))]);
            });
            CHECK(inside_count > voxels / 5);
        }
        // p = 0, and a zero rotation at scale 1, leave the sample as it is.
        Generator generator(1);
        CHECK(same(SampleRandomAffine({options.degrees, options.scale, 0})(s, generator), s));
        CHECK(same(
            SampleRandomAffine({std::vector<double>(options.degrees.size(), 0)})(s, generator), s));
    }
}

// CHECK_THROWS_WITH for a part of the message.
#define CHECK_ERROR(expr, message) CHECK_THROWS_WITH(expr, Catch::Contains(message))

TEST_CASE("spatial: errors name the transform and show the values", "[datasets][spatial]") {
    Sample s = traced({4, 5}), volume = traced({2, 3, 4});
    Sample no_channels = s, short_label = s, wide_target = s, flat = s, degenerate = volume;
    no_channels.image = zeros({4, 5});
    short_label.label = zeros({4, 4}, DType::int64);
    wide_target.target = zeros({1, 4, 6});
    flat.affine[0] = flat.affine[4] = 0;  // a zero-length first axis
    degenerate.affine[10] = 0;
    VoxelMap infinite;
    infinite.offset[0] = INFINITY;
    Generator generator(0);
    CHECK_ERROR(flip(no_channels, 0),
                "[flip] expects an image (C, H, W) or (C, D, H, W) float32 "
                "on the CPU, got float32 [4, 5]");
    CHECK_ERROR(crop(short_label, {0, 0}, {1, 1}),
                "[crop] expects an int64 CPU label of the image's spatial shape [4, 5], got int64 "
                "[4, 4]");
    CHECK_ERROR(resize(wide_target, {2, 2}),
                "[resize] expects a float32 CPU target (C', *spatial) with spatial shape [4, 5], "
                "got float32 [1, 4, 6]");
    CHECK_ERROR(resize(s, {2, 2, 2}),
                "[resize] size needs one entry per spatial dim (2), got [2, 2, 2]");
    CHECK_ERROR(resize(s, {2, 0}), "[resize] size entries must be > 0, got [2, 0]");
    CHECK_ERROR(crop(s, {3, 0}, {2, 2}),
                "[crop] the box at start [3, 0] of size [2, 2] does not "
                "fit the spatial shape [4, 5]");
    CHECK_ERROR(pad(s, {1, -1}, {0, 0}), "[pad] pad widths must be >= 0, got before [1, -1]");
    CHECK_ERROR(center_crop_or_pad(s, {3}), "[center_crop_or_pad] size needs one entry per");
    CHECK_ERROR(flip(s, 2), "[flip] axis must lie in [0, 2) for spatial shape [4, 5], got 2");
    CHECK_ERROR(rot90(s, 1, {1, 1}),
                "[rot90] axes must be two distinct spatial dims in [0, 2), "
                "got [1, 1]");
    CHECK_ERROR(reorient(s, "RAS"), "[reorient] needs a 3-D sample, got spatial shape [4, 5]");
    CHECK_ERROR(reorient(volume, "RAX"),
                "[reorient] code needs one of L/R, P/A and I/S each (as "
                "\"RAS\"), got \"RAX\"");
    CHECK_ERROR(reorient(volume, "RLS"), "got \"RLS\"");
    CHECK_ERROR(reorient(degenerate, "RAS"), "[reorient] the affine has no orientation");
    CHECK_ERROR(resample_to_spacing(s, {1, 0}),
                "[resample_to_spacing] spacing entries must be finite and > 0, got [1, 0]");
    CHECK_ERROR(resample_to_spacing(s, {1}),
                "spacing needs one entry per spatial dim (2), got [1]");
    CHECK_ERROR(resample_to_spacing(flat, {1, 1}), "zero-length axis, spacing [0, 2]");
    CHECK_ERROR(warp_affine_nd(s, infinite, {4, 5}),
                "[warp_affine_nd] the map must be finite, "
                "got offset inf");
    CHECK_ERROR(Resize({4}), "[Resize] size needs 2 or 3 entries, all > 0, got [4]");
    CHECK_ERROR(Resize({2, 2, 2})(s, generator),
                "[Resize] has a size [2, 2, 2] for a sample of "
                "spatial shape [4, 5]");
    CHECK_ERROR(CenterCropOrPad({4, -1}), "[CenterCropOrPad] size needs 2 or 3 entries");
    CHECK_ERROR(CenterCropOrPad({2, 2, 2})(s, generator), "[CenterCropOrPad] has a size [2, 2, 2]");
    CHECK_ERROR(RandomCropOrPad({0, 1}), "[RandomCropOrPad] size needs 2 or 3 entries");
    CHECK_ERROR(RandomCropOrPad({2, 2, 2})(s, generator), "[RandomCropOrPad] has a size");
    CHECK_ERROR(RandomPosNegCrop({2, 2}, -1, 1),
                "[RandomPosNegCrop] pos and neg must be >= 0 "
                "with pos + neg > 0, got pos -1 and neg 1");
    CHECK_ERROR(RandomPosNegCrop({2, 2}, 0, 0), "got pos 0 and neg 0");
    CHECK_ERROR(RandomPosNegCrop({2, 2}, 1, 1, 1), "[RandomPosNegCrop] num_classes must be >= 2");
    CHECK_ERROR(RandomPosNegCrop({2, 2, 2})(s, generator), "[RandomPosNegCrop] has a size");
    CHECK_ERROR(RandomPosNegCrop({2, 2}, 1, 0, 2)(s, generator),
                "[RandomPosNegCrop] label values must lie in [0, num_classes = 2), got 2");
    CHECK_ERROR(RandomFlip({0, 3}), "[RandomFlip] axes must lie in [0, 3), got [0, 3]");
    CHECK_ERROR(RandomFlip({1, 1}), "[RandomFlip] axes must not repeat, got [1, 1]");
    CHECK_ERROR(RandomFlip({0}, 1.5), "[RandomFlip] p must lie in [0, 1], got 1.5");
    CHECK_ERROR(RandomFlip({2})(s, generator),
                "[RandomFlip] axis 2 does not exist for spatial "
                "shape [4, 5]");
    CHECK_ERROR(RandomRot90(-0.1), "[RandomRot90] p must lie in [0, 1], got -0.1");
    CHECK_ERROR(RandomRot90(0.5, {0, 0}),
                "[RandomRot90] axes must be two distinct dims in [0, 3), "
                "got [0, 0]");
    CHECK_ERROR(RandomRot90(0.5, {0, 2})(s, generator), "[RandomRot90] axes [0, 2] do not exist");
    CHECK_ERROR(SampleRandomAffine({{1, 2}, {1, 1}, 1}),
                "[SampleRandomAffine] degrees needs 1 angle (2-D) or 3 "
                "(3-D), got [1, 2]");
    CHECK_ERROR(SampleRandomAffine({{-5}, {1, 1}, 1}), "degrees must be finite and >= 0, got [-5]");
    CHECK_ERROR(SampleRandomAffine({{5}, {1.2, 1.1}, 1}),
                "[SampleRandomAffine] scale range must satisfy 0 < "
                "low <= high, got [1.2, 1.1]");
    CHECK_ERROR(SampleRandomAffine({{5}, {1, 1}, 2}),
                "[SampleRandomAffine] p must lie in [0, 1], got 2");
    CHECK_ERROR(SampleRandomAffine({{5, 5, 5}, {1, 1}, 1})(s, generator),
                "[SampleRandomAffine] has 3 rotation angles, expected 1 for spatial shape [4, 5]");
    CHECK_ERROR(resize(s, {65536, 65536}), "[spatial] the output grid [65536, 65536] with");
    CHECK_ERROR(resize(s, {65536, 65536}), "more than the 2^31 a sample may have");
    CHECK_ERROR(Reorient("RAX"), "[Reorient] code needs one of L/R, P/A and I/S each");
    CHECK_ERROR(Reorient("RRS"), "got \"RRS\"");
    CHECK_ERROR(ResampleToSpacing({1.0}),
                "[ResampleToSpacing] spacing needs 2 or 3 entries, got 1");
    CHECK_ERROR(ResampleToSpacing({1.0, 0.0}), "spacings must be finite and > 0, got 0");
}

TEST_CASE("spatial: Reorient and ResampleToSpacing are the functions as transforms",
          "[datasets][spatial]") {
    Sample s;
    s.image = arange(24.0, DType::float32).view({1, 2, 3, 4}).contiguous();
    s.label = arange(24.0).view({2, 3, 4}).contiguous();
    s.affine = {-2, 0, 0, 10, 0, -1, 0, 20, 0, 0, 3, 30, 0, 0, 0, 1};  // LPS, spacing (2, 1, 3)
    Generator generator(1);
    Sample ras = Reorient("RAS")(s, generator), direct = reorient(s, "RAS");
    CHECK(orientation_code(ras.affine) == "RAS");
    CHECK(ras.affine == direct.affine);
    CHECK(ras.image.to_vector<float>() == direct.image.to_vector<float>());
    Sample fine = ResampleToSpacing({1.0, 1.0, 1.5})(s, generator);
    CHECK(fine.image.shape() == Shape{1, 4, 3, 8});
    CHECK(voxel_spacing(fine.affine, 3) == std::vector<double>{1.0, 1.0, 1.5});
    CHECK(fine.label.to_vector<int64_t>() ==
          resample_to_spacing(s, {1.0, 1.0, 1.5}).label.to_vector<int64_t>());
}

TEST_CASE("spatial: voxel_map_between brings a reoriented or resampled grid back",
          "[datasets][spatial]") {
    // By hand: from = 2 I + (1, 1, 1), to = I + (3, 5, 7): q = (p + (2, 4, 6)) / 2.
    Affine from = {2, 0, 0, 1, 0, 2, 0, 1, 0, 0, 2, 1, 0, 0, 0, 1};
    Affine to = {1, 0, 0, 3, 0, 1, 0, 5, 0, 0, 1, 7, 0, 0, 0, 1};
    VoxelMap map = voxel_map_between(from, to);
    CHECK(map.matrix == std::array<double, 9>{0.5, 0, 0, 0, 0.5, 0, 0, 0, 0.5});
    CHECK(map.offset == std::array<double, 3>{1, 2, 3});
    // kGrid (rotated, anisotropic, shifted) onto itself is the identity.
    map = voxel_map_between(kGrid, kGrid);
    for (int r = 0; r < 3; ++r) {
        CHECK(map.offset[size_t(r)] == Approx(0).margin(1e-12));
        for (int c = 0; c < 3; ++c)
            CHECK(map.matrix[size_t(3 * r + c)] == Approx(r == c ? 1 : 0).margin(1e-12));
    }

    // An LPS volume reoriented to RAS comes back exactly, with its own affine.
    const Shape size = {5, 4, 3};
    Sample s = traced(size);
    s.affine = {-2, 0, 0, 10, 0, -3, 0, 20, 0, 0, 1.5, 30, 0, 0, 0, 1};
    Sample ras = reorient(s, "RAS");
    Sample back =
        warp_affine_nd(ras, voxel_map_between(ras.affine, s.affine), size, PaddingMode::border);
    for (size_t i = 0; i < 16; ++i) CHECK(back.affine[i] == Approx(s.affine[i]).margin(1e-12));
    CHECK(same_values<int64_t>(back.label, s.label));
    CHECK(same_values<float>(back.image, s.image));

    // Resampled to a finer grid and back: every voxel returns to its own value (the finer grid
    // holds each old voxel centre exactly, at an even index).
    Sample fine = resample_to_spacing(s, {1.0, 1.5, 0.75});
    REQUIRE(spatial_of(fine.image) == Shape{10, 8, 6});
    back =
        warp_affine_nd(fine, voxel_map_between(fine.affine, s.affine), size, PaddingMode::border);
    CHECK(same_values<int64_t>(back.label, s.label));
    auto values = back.image.to_vector<float>(), expected = s.image.to_vector<float>();
    for (size_t i = 0; i < values.size(); ++i) REQUIRE(values[i] == Approx(expected[i]));

    Affine singular = kGrid;
    for (int r = 0; r < 3; ++r) singular[size_t(4 * r)] = 0;
    CHECK_THROWS_WITH(
        voxel_map_between(singular, kGrid),
        Catch::Matchers::Contains("[voxel_map_between]") && Catch::Matchers::Contains("singular"));
}
