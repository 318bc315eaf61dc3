// The deterministic spatial transforms of datasets/spatial.h. Every grid change is one affine
// voxel map q = M p + t handed to remap(), which moves image, label and target and updates the
// affine together, so they cannot disagree. Plain single-threaded loops: transforms run per
// sample on the loader's worker threads. The random transforms are in spatial_random.cpp.
#include "datasets/spatial.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "datasets/nifti.h"

namespace lumen::datasets {

namespace {

Shape spatial_of(const Tensor& x) { return Shape(x.shape().begin() + 1, x.shape().end()); }

void check_entries(const Shape& values, int64_t n, const char* name, const char* what) {
    LUMEN_CHECK(int64_t(values.size()) == n, name, what, " needs one entry per spatial dim (", n,
                "), got ", values);
}

void check_size(const Shape& size, int64_t n, const char* name) {
    check_entries(size, n, name, "size");
    for (int64_t s : size) LUMEN_CHECK(s > 0, name, "size entries must be > 0, got ", size);
}

// A tensor as (C, D0, D1, D2), contiguous: a label gets a channel of 1 and a 2-D grid a trailing
// axis of 1 (the same memory), so one 3-D loop serves both.
Tensor as_volume(const Tensor& x, bool has_channels) {
    Shape shape = x.shape();
    if (!has_channels) shape.insert(shape.begin(), 1);
    if (shape.size() == 3) shape.push_back(1);
    return x.contiguous().view(shape);
}

// For a 2-D sample the trailing axis maps to itself.
VoxelMap embedded(const VoxelMap& map, int64_t spatial_dims) {
    VoxelMap out = map;
    if (spatial_dims == 2) {
        out.matrix[2] = out.matrix[5] = out.matrix[6] = out.matrix[7] = 0;
        out.matrix[8] = 1;
        out.offset[2] = 0;
    }
    return out;
}

// True when q is a voxel centre for every p: then nearest-neighbour sampling is an exact copy.
bool hits_voxel_centres(const VoxelMap& map) {
    auto integral = [](double v) { return v == std::round(v); };
    return std::all_of(map.matrix.begin(), map.matrix.end(), integral) &&
           std::all_of(map.offset.begin(), map.offset.end(), integral);
}

std::array<double, 3> source_of(const VoxelMap& m, int64_t i, int64_t j, int64_t k) {
    std::array<double, 3> q;
    for (int r = 0; r < 3; ++r) {
        q[r] = m.matrix[3 * r] * double(i) + m.matrix[3 * r + 1] * double(j) +
               m.matrix[3 * r + 2] * double(k) + m.offset[r];
    }
    return q;
}

// affine * [[M, t], [0, 1]]: world(p) afterwards = world(q) before.
Affine moved_affine(const Affine& affine, const VoxelMap& m) {
    Affine out = affine;
    for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < 3; ++c) {
            out[4 * r + c] = 0;
            for (int k = 0; k < 3; ++k) out[4 * r + c] += affine[4 * r + k] * m.matrix[3 * k + c];
        }
        for (int k = 0; k < 3; ++k) out[4 * r + 3] += affine[4 * r + k] * m.offset[k];
    }
    return out;
}

// Shapes: in (C, D0, D1, D2) -> (C, size0, size1, size2). Voxel round(q) (ties up), or outside
// the grid `fill` (zeros) or the clamped voxel (border).
template <typename T>
Tensor sample_nearest(const Tensor& in, const VoxelMap& map, const Shape& size, PaddingMode padding,
                      T fill) {
    const int64_t C = in.size(0), D[3] = {in.size(1), in.size(2), in.size(3)};
    const int64_t voxels_in = D[0] * D[1] * D[2], voxels_out = size[0] * size[1] * size[2];
    Tensor out = empty({C, size[0], size[1], size[2]}, in.dtype());
    const T* src = in.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    for (int64_t v = 0; v < voxels_out; ++v) {
        auto q = source_of(map, v / (size[1] * size[2]), v / size[2] % size[1], v % size[2]);
        int64_t offset = 0;
        bool inside = true;
        for (int d = 0; d < 3; ++d) {
            double r = std::floor(q[d] + 0.5);
            if (padding == PaddingMode::border) r = std::clamp(r, 0.0, double(D[d] - 1));
            inside = inside && r >= 0 && r < double(D[d]);
            offset = offset * D[d] + (inside ? int64_t(r) : 0);
        }
        for (int64_t c = 0; c < C; ++c)
            dst[c * voxels_out + v] = inside ? src[c * voxels_in + offset] : fill;
    }
    return out;
}

// Shapes as sample_nearest. Trilinear: the 8 voxels around q weighted by (1 - f) or f per axis
// (on a 2-D grid q's third coordinate is exactly 0, so this is bilinear). Under `zeros` corners
// outside read `fill`; under `border` q is first clamped into the grid, which is what torch's
// interpolate does with its source indices. Zero-weight corners are skipped, so a voxel-aligned
// q copies exactly.
Tensor sample_linear(const Tensor& in, const VoxelMap& map, const Shape& size, PaddingMode padding,
                     float fill) {
    const int64_t C = in.size(0), D[3] = {in.size(1), in.size(2), in.size(3)};
    const int64_t voxels_in = D[0] * D[1] * D[2], voxels_out = size[0] * size[1] * size[2];
    Tensor out = empty({C, size[0], size[1], size[2]}, DType::float32);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t v = 0; v < voxels_out; ++v) {
        auto q = source_of(map, v / (size[1] * size[2]), v / size[2] % size[1], v % size[2]);
        int64_t low[3];
        double frac[3];
        for (int d = 0; d < 3; ++d) {
            // Beyond -1 or D every corner is outside anyway; the clamp keeps int64 safe.
            double x = padding == PaddingMode::border ? std::clamp(q[d], 0.0, double(D[d] - 1))
                                                      : std::clamp(q[d], -2.0, double(D[d]) + 1);
            double x0 = std::floor(x);
            low[d] = int64_t(x0);
            frac[d] = x - x0;
        }
        double weight[8];
        int64_t offset[8];  // -1: outside
        for (int corner = 0; corner < 8; ++corner) {
            weight[corner] = 1;
            offset[corner] = 0;
            for (int d = 0; d < 3; ++d) {
                int bit = (corner >> (2 - d)) & 1;
                int64_t index = low[d] + bit;
                weight[corner] *= bit ? frac[d] : 1 - frac[d];
                bool inside = offset[corner] >= 0 && index >= 0 && index < D[d];
                offset[corner] = inside ? offset[corner] * D[d] + index : -1;
            }
        }
        for (int64_t c = 0; c < C; ++c) {
            const float* channel = src + c * voxels_in;
            double sum = 0;
            for (int corner = 0; corner < 8; ++corner) {
                if (weight[corner] == 0) continue;
                sum += weight[corner] * (offset[corner] >= 0 ? channel[offset[corner]] : fill);
            }
            dst[c * voxels_out + v] = float(sum);
        }
    }
    return out;
}

constexpr double kMaxGridVoxels = double(int64_t(1) << 31);

// Moves the whole sample onto the output grid of spatial `size` along `map`.
Sample remap(const Sample& sample, const VoxelMap& map, const Shape& size, PaddingMode padding,
             double fill) {
    int64_t n = sample.spatial_dims();
    // A grid that cannot fit in memory is refused before anything is allocated (a tiny target
    // spacing or a huge patch size from a config).
    double voxels = double(sample.image.size(0));
    for (int64_t extent : size) voxels *= double(extent);
    LUMEN_CHECK(voxels <= kMaxGridVoxels, "spatial", "the output grid ", size, " with ",
                sample.image.size(0), " channels has ", voxels,
                " values, more than the 2^31 a sample may have");
    VoxelMap m = embedded(map, n);
    Shape volume_size = size;
    if (n == 2) volume_size.push_back(1);
    bool exact = hits_voxel_centres(m);
    auto move = [&](const Tensor& x, float value) {
        Tensor in = as_volume(x, true);
        Tensor out = exact ? sample_nearest<float>(in, m, volume_size, padding, value)
                           : sample_linear(in, m, volume_size, padding, value);
        Shape shape = size;
        shape.insert(shape.begin(), x.size(0));
        return out.view(shape);
    };
    Sample out = sample;
    out.image = move(sample.image, float(fill));
    if (sample.target.defined()) out.target = move(sample.target, 0.0f);
    if (sample.label.defined()) {
        Tensor label = as_volume(sample.label, false);
        out.label = sample_nearest<int64_t>(label, m, volume_size, padding, 0).view(size);
    }
    out.affine = moved_affine(sample.affine, m);
    return out;
}

// torch's 'nearest' on a label (*spatial): source index floor(p * old / new) per dim, computed
// in integers so exact ratios never round down by one.
Tensor resize_label_nearest(const Tensor& label, const Shape& size) {
    Tensor in = as_volume(label, false);
    Shape volume_size = size;
    if (size.size() == 2) volume_size.push_back(1);
    std::vector<int64_t> source[3];
    for (int d = 0; d < 3; ++d) {
        for (int64_t p = 0; p < volume_size[d]; ++p)
            source[d].push_back(p * in.size(d + 1) / volume_size[d]);
    }
    Tensor out = empty(size, DType::int64);
    const int64_t* src = in.data_ptr<int64_t>();
    int64_t* dst = out.data_ptr<int64_t>();
    for (int64_t i = 0; i < volume_size[0]; ++i) {
        for (int64_t j = 0; j < volume_size[1]; ++j) {
            for (int64_t k = 0; k < volume_size[2]; ++k) {
                *dst++ =
                    src[(source[0][i] * in.size(2) + source[1][j]) * in.size(3) + source[2][k]];
            }
        }
    }
    return out;
}

}  // namespace

Shape check_sample(const Sample& sample, const char* name) {
    const Tensor& image = sample.image;
    LUMEN_CHECK(image.defined(), name, "the sample has no image");
    LUMEN_CHECK((image.ndim() == 3 || image.ndim() == 4) && image.dtype() == DType::float32 &&
                    image.is_cpu(),
                name, "expects an image (C, H, W) or (C, D, H, W) float32 on the CPU, got ",
                image.dtype(), " ", image.shape(), " on ", image.device());
    Shape spatial = spatial_of(image);
    const Tensor& label = sample.label;
    LUMEN_CHECK(!label.defined() ||
                    (label.dtype() == DType::int64 && label.is_cpu() && label.shape() == spatial),
                name, "expects an int64 CPU label of the image's spatial shape ", spatial, ", got ",
                label.defined() ? label.dtype() : DType::int64, " ",
                label.defined() ? label.shape() : Shape{});
    const Tensor& target = sample.target;
    LUMEN_CHECK(
        !target.defined() || (target.dtype() == DType::float32 && target.is_cpu() &&
                              target.ndim() == image.ndim() && spatial_of(target) == spatial),
        name, "expects a float32 CPU target (C', *spatial) with spatial shape ", spatial, ", got ",
        target.defined() ? target.dtype() : DType::float32, " ",
        target.defined() ? target.shape() : Shape{});
    return spatial;
}

std::vector<double> voxel_spacing(const Affine& affine, int64_t spatial_dims) {
    std::vector<double> spacing;
    for (int64_t c = 0; c < spatial_dims; ++c) {
        double sum = 0;
        for (int64_t r = 0; r < 3; ++r) sum += affine[4 * r + c] * affine[4 * r + c];
        spacing.push_back(std::sqrt(sum));
    }
    return spacing;
}

VoxelMap voxel_map_between(const Affine& from, const Affine& to) {
    // from = [[A, a], [0, 1]], to = [[B, b], [0, 1]]: q = A^-1 (B p + b - a).
    auto at = [](const Affine& m, int r, int c) { return m[size_t(4 * r + c)]; };
    const double det =
        at(from, 0, 0) * (at(from, 1, 1) * at(from, 2, 2) - at(from, 1, 2) * at(from, 2, 1)) -
        at(from, 0, 1) * (at(from, 1, 0) * at(from, 2, 2) - at(from, 1, 2) * at(from, 2, 0)) +
        at(from, 0, 2) * (at(from, 1, 0) * at(from, 2, 1) - at(from, 1, 1) * at(from, 2, 0));
    LUMEN_CHECK(std::isfinite(det) && std::abs(det) > 1e-12, "voxel_map_between",
                "the source affine's 3x3 block is singular (determinant ", det, ")");
    // The inverse by cofactors: inv[r][c] = cofactor(c, r) / det.
    std::array<double, 9> inv{};
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            const int r1 = (c + 1) % 3, r2 = (c + 2) % 3, c1 = (r + 1) % 3, c2 = (r + 2) % 3;
            inv[size_t(3 * r + c)] =
                (at(from, r1, c1) * at(from, r2, c2) - at(from, r1, c2) * at(from, r2, c1)) / det;
        }
    VoxelMap map;
    for (int r = 0; r < 3; ++r) {
        double offset = 0;
        for (int k = 0; k < 3; ++k)
            offset += inv[size_t(3 * r + k)] * (at(to, k, 3) - at(from, k, 3));
        map.offset[size_t(r)] = offset;
        for (int c = 0; c < 3; ++c) {
            double value = 0;
            for (int k = 0; k < 3; ++k) value += inv[size_t(3 * r + k)] * at(to, k, c);
            map.matrix[size_t(3 * r + c)] = value;
        }
    }
    return map;
}

Sample warp_affine_nd(const Sample& sample, const VoxelMap& map, const Shape& size,
                      PaddingMode padding, double fill) {
    Shape spatial = check_sample(sample, "warp_affine_nd");
    check_size(size, int64_t(spatial.size()), "warp_affine_nd");
    for (double v : map.matrix)
        LUMEN_CHECK(std::isfinite(v), "warp_affine_nd", "the map must be finite, got matrix ", v);
    for (double v : map.offset)
        LUMEN_CHECK(std::isfinite(v), "warp_affine_nd", "the map must be finite, got offset ", v);
    return remap(sample, map, size, padding, fill);
}

Sample resize(const Sample& sample, const Shape& size) {
    Shape spatial = check_sample(sample, "resize");
    check_size(size, int64_t(spatial.size()), "resize");
    VoxelMap map;
    for (size_t d = 0; d < spatial.size(); ++d) {
        double scale = double(spatial[d]) / double(size[d]);
        map.matrix[4 * d] = scale;  // q = (p + 0.5) scale - 0.5
        map.offset[d] = 0.5 * scale - 0.5;
    }
    Sample image_part = sample;
    image_part.label = Tensor();
    Sample out = remap(image_part, map, size, PaddingMode::border, 0.0);
    if (sample.label.defined()) out.label = resize_label_nearest(sample.label, size);
    return out;
}

Sample crop(const Sample& sample, const Shape& start, const Shape& size) {
    Shape spatial = check_sample(sample, "crop");
    int64_t n = int64_t(spatial.size());
    check_size(size, n, "crop");
    check_entries(start, n, "crop", "start");
    VoxelMap map;
    for (int64_t d = 0; d < n; ++d) {
        LUMEN_CHECK(start[d] >= 0 && start[d] + size[d] <= spatial[d], "crop", "the box at start ",
                    start, " of size ", size, " does not fit the spatial shape ", spatial);
        map.offset[d] = double(start[d]);
    }
    return remap(sample, map, size, PaddingMode::zeros, 0.0);
}

Sample pad(const Sample& sample, const Shape& before, const Shape& after, double value) {
    Shape spatial = check_sample(sample, "pad");
    int64_t n = int64_t(spatial.size());
    check_entries(before, n, "pad", "before");
    check_entries(after, n, "pad", "after");
    VoxelMap map;
    Shape size = spatial;
    for (int64_t d = 0; d < n; ++d) {
        LUMEN_CHECK(before[d] >= 0 && after[d] >= 0, "pad", "pad widths must be >= 0, got before ",
                    before, " and after ", after);
        map.offset[d] = -double(before[d]);
        size[d] += before[d] + after[d];
    }
    return remap(sample, map, size, PaddingMode::zeros, value);
}

Sample center_crop_or_pad(const Sample& sample, const Shape& size) {
    Shape spatial = check_sample(sample, "center_crop_or_pad");
    check_size(size, int64_t(spatial.size()), "center_crop_or_pad");
    VoxelMap map;
    for (size_t d = 0; d < spatial.size(); ++d) {
        int64_t old_size = spatial[d], new_size = size[d];
        map.offset[d] = double(new_size <= old_size ? old_size / 2 - new_size / 2
                                                    : -((new_size - old_size) / 2));
    }
    return remap(sample, map, size, PaddingMode::zeros, 0.0);
}

Sample flip(const Sample& sample, int64_t axis) {
    Shape spatial = check_sample(sample, "flip");
    LUMEN_CHECK(axis >= 0 && axis < int64_t(spatial.size()), "flip", "axis must lie in [0, ",
                spatial.size(), ") for spatial shape ", spatial, ", got ", axis);
    VoxelMap map;
    map.matrix[4 * axis] = -1;  // q = size - 1 - p
    map.offset[axis] = double(spatial[axis] - 1);
    return remap(sample, map, spatial, PaddingMode::zeros, 0.0);
}

Sample rot90(const Sample& sample, int64_t k, std::array<int64_t, 2> axes) {
    Shape spatial = check_sample(sample, "rot90");
    int64_t n = int64_t(spatial.size()), a = axes[0], b = axes[1];
    LUMEN_CHECK(a >= 0 && a < n && b >= 0 && b < n && a != b, "rot90",
                "axes must be two distinct spatial dims in [0, ", n, "), got [", a, ", ", b, "]");
    k = ((k % 4) + 4) % 4;
    double last_a = double(spatial[a] - 1), last_b = double(spatial[b] - 1);
    VoxelMap map;  // k = 0: the identity
    auto set = [&map](int64_t row, int64_t col, double v) { map.matrix[3 * row + col] = v; };
    // With i the index along a and j along b:
    if (k == 1) {  // np.rot90: out[i, j] = in[j, last_b - i]
        set(a, a, 0);
        set(b, b, 0);
        set(a, b, 1);
        set(b, a, -1);
        map.offset[b] = last_b;
    } else if (k == 2) {  // out[i, j] = in[last_a - i, last_b - j]
        set(a, a, -1);
        set(b, b, -1);
        map.offset[a] = last_a;
        map.offset[b] = last_b;
    } else if (k == 3) {  // out[i, j] = in[last_a - j, i]
        set(a, a, 0);
        set(b, b, 0);
        set(a, b, -1);
        set(b, a, 1);
        map.offset[a] = last_a;
    }
    Shape size = spatial;
    if (k % 2 == 1) std::swap(size[a], size[b]);
    return remap(sample, map, size, PaddingMode::zeros, 0.0);
}

Sample reorient(const Sample& sample, const std::string& code) {
    Shape spatial = check_sample(sample, "reorient");
    LUMEN_CHECK(spatial.size() == 3, "reorient", "needs a 3-D sample, got spatial shape ", spatial);
    const std::string pairs[3] = {"LR", "PA", "IS"};  // world axes x, y, z
    auto world_axis = [&pairs](char letter) {
        for (int w = 0; w < 3; ++w)
            if (pairs[w].find(letter) != std::string::npos) return w;
        return -1;
    };
    bool valid = code.size() == 3;
    for (size_t d = 0; valid && d < 3; ++d) {
        valid = world_axis(code[d]) >= 0;
        for (size_t e = 0; valid && e < d; ++e) valid = world_axis(code[e]) != world_axis(code[d]);
    }
    LUMEN_CHECK(valid, "reorient", "code needs one of L/R, P/A and I/S each (as \"RAS\"), got \"",
                code, "\"");
    std::string current = orientation_code(sample.affine);
    LUMEN_CHECK(current.find('?') == std::string::npos, "reorient",
                "the affine has no orientation (degenerate axes), got code \"", current, "\"");
    VoxelMap map;
    map.matrix = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    Shape size(3);
    for (int d = 0; d < 3; ++d) {
        // New axis d is the old axis along the same world axis, reversed if it points the other
        // way.
        int old = 0;
        while (world_axis(current[old]) != world_axis(code[d])) ++old;
        bool reversed = current[old] != code[d];
        map.matrix[3 * old + d] = reversed ? -1 : 1;
        map.offset[old] = reversed ? double(spatial[old] - 1) : 0;
        size[d] = spatial[old];
    }
    return remap(sample, map, size, PaddingMode::zeros, 0.0);
}

Sample resample_to_spacing(const Sample& sample, const std::vector<double>& spacing) {
    Shape spatial = check_sample(sample, "resample_to_spacing");
    int64_t n = int64_t(spatial.size());
    LUMEN_CHECK(int64_t(spacing.size()) == n, "resample_to_spacing",
                "spacing needs one entry per spatial dim (", n, "), got ", spacing);
    std::vector<double> old_spacing = voxel_spacing(sample.affine, n);
    VoxelMap map;
    Shape size(spatial.size());
    for (int64_t d = 0; d < n; ++d) {
        LUMEN_CHECK(spacing[d] > 0 && std::isfinite(spacing[d]), "resample_to_spacing",
                    "spacing entries must be finite and > 0, got ", spacing);
        LUMEN_CHECK(old_spacing[d] > 0, "resample_to_spacing",
                    "the affine has a zero-length axis, spacing ", old_spacing);
        double ratio = spacing[d] / old_spacing[d];  // q = p * new / old
        map.matrix[4 * d] = ratio;
        size[d] = std::max<int64_t>(1, std::llround(double(spatial[d]) / ratio));
    }
    return remap(sample, map, size, PaddingMode::border, 0.0);
}

}  // namespace lumen::datasets
