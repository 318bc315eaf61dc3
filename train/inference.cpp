// Sliding-window and slice-by-slice inference (see inference.h). Window starts as MONAI's
// _get_scan_interval and dense_patch_slices, weights as compute_importance_map; only the weighted
// sum, the weight sum and one batch of windows are held at a time. Tensor ops only, so any device.
#include "train/inference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/autograd.h"
#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/pad.h"
#include "ops/shape.h"

namespace lumen::train {

namespace {

constexpr const char* kSliding = "sliding_window_inference";
constexpr const char* kSlices = "slice_by_slice_inference";
constexpr const char* kGaussian = "gaussian_importance_map";

// The element count of a tensor to be allocated, refused before it overflows (bytes included).
int64_t checked_numel(const Shape& shape, const char* op, const char* what) {
    constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 16;
    int64_t n = 1;
    for (int64_t s : shape) {
        LUMEN_CHECK(s == 0 || n <= kLimit / s, op, "the ", what, " would have shape ", shape,
                    ", too many elements");
        n *= s;
    }
    return n;
}

// The starts of the windows along one dim of `size` for a window `roi` <= size (MONAI's
// _get_scan_interval and dense_patch_slices).
std::vector<int64_t> window_starts(int64_t size, int64_t roi, double overlap) {
    const int64_t step =
        roi == size ? roi : std::max<int64_t>(int64_t(double(roi) * (1.0 - overlap)), 1);
    std::vector<int64_t> starts;
    for (int64_t start = 0;; start += step) {
        starts.push_back(std::min(start, size - roi));  // the last window ends at the border
        if (start + roi >= size) return starts;
    }
}

// The window of `t` (B, C, *spatial) at `start`: a view.
Tensor window(const Tensor& t, const std::vector<int64_t>& start, const Shape& roi) {
    Tensor w = t;
    for (size_t d = 0; d < roi.size(); ++d) w = w.narrow(int64_t(d) + 2, start[d], roi[d]);
    return w;
}

// The windows over an image padded up to the window where it is smaller (MONAI: diff / 2 before,
// the rest after). Windows are numbered row-major over the dims.
struct WindowGrid {
    Shape roi, size, before;  // per spatial dim: window, padded size, padding before
    std::vector<std::vector<int64_t>> starts;
    int64_t count = 1;

    std::vector<int64_t> start(int64_t w) const {
        std::vector<int64_t> at(roi.size());
        for (size_t d = roi.size(); d-- > 0; w /= int64_t(starts[d].size()))
            at[d] = starts[d][size_t(w % int64_t(starts[d].size()))];
        return at;
    }
    // The (before, after) pairs of pad(), last dim first.
    Dims padding(const Shape& spatial) const {
        Dims pairs;
        for (size_t d = roi.size(); d-- > 0;) {
            pairs.push_back(before[d]);
            pairs.push_back(size[d] - spatial[d] - before[d]);
        }
        return pairs;
    }
};

// The grid for an input of `shape` (B, C, *spatial); refuses a padded input too large to hold.
WindowGrid window_grid(const Shape& shape, const std::vector<int64_t>& roi_size, double overlap) {
    WindowGrid grid;
    Shape padded{shape[0], shape[1]};
    for (size_t d = 0; d + 2 < shape.size(); ++d) {
        const int64_t extent = shape[d + 2], roi = roi_size[d] <= 0 ? extent : roi_size[d];
        const int64_t diff = std::max<int64_t>(roi - extent, 0);
        grid.roi.push_back(roi);
        grid.size.push_back(extent + diff);
        grid.before.push_back(diff / 2);
        padded.push_back(extent + diff);
    }
    checked_numel(padded, kSliding, "padded input");
    for (size_t d = 0; d < grid.roi.size(); ++d) {
        grid.starts.push_back(window_starts(grid.size[d], grid.roi[d], overlap));
        grid.count *= int64_t(grid.starts.back().size());
    }
    return grid;
}

// How much weight each voxel of the padded image gets in all: (1, 1, *size).
Tensor weight_sum(const WindowGrid& grid, const Tensor& weight) {
    Shape shape{1, 1};
    shape.insert(shape.end(), grid.size.begin(), grid.size.end());
    Tensor sum = zeros(shape, DType::float32, weight.device());
    for (int64_t w = 0; w < grid.count; ++w) {
        Tensor slot = window(sum, grid.start(w), grid.roi);
        slot.copy_(add(slot, weight));
    }
    return sum;
}

// One axis of the Gaussian, divided by its maximum. The peak is at the sample nearest the centre
// c = (roi - 1) / 2, at distance 0 (odd roi) or 1/2 (even); subtracting it inside the exponent
// keeps the peak at 1 even where a narrow sigma would underflow exp.
std::vector<double> gaussian_axis(int64_t roi, double sigma_scale) {
    const double sigma = sigma_scale * double(roi), centre = double(roi - 1) / 2;
    const double peak = roi % 2 == 0 ? 0.25 : 0.0;
    std::vector<double> values;
    for (int64_t x = 0; x < roi; ++x) {
        const double offset = double(x) - centre;
        values.push_back(std::exp(-(offset * offset - peak) / (2 * sigma * sigma)));
    }
    return values;
}

// The blending weights (float32, shape roi) on `device`. The Gaussian is separable: one axis per
// dim, broadcast-multiplied; its minimum is the product of the axes' minima.
Tensor importance_map(const Shape& roi, const std::string& mode, double sigma_scale,
                      Device device) {
    if (mode == "constant") return ones(roi, DType::float32, device);
    Tensor map;
    double low = 1.0;
    for (size_t d = 0; d < roi.size(); ++d) {
        const std::vector<double> axis = gaussian_axis(roi[d], sigma_scale);
        low *= *std::min_element(axis.begin(), axis.end());
        Shape shape(roi.size(), 1);
        shape[d] = roi[d];
        Tensor t = from_vector(axis, shape).to(DType::float32).to(device);
        map = map.defined() ? mul(map, t) : t;
    }
    // MONAI: no weight below max(min, 1e-3), so border voxels never divide by ~0.
    return clamp(map, std::max(low, 1e-3), std::nullopt);
}

void check_sliding_arguments(const Tensor& input, const Predictor& predictor,
                             const SlidingWindowOptions& o) {
    LUMEN_CHECK(input.defined(), kSliding, "the input is an undefined tensor");
    LUMEN_CHECK(bool(predictor), kSliding, "the predictor is an empty function");
    const int64_t dims = input.ndim() - 2;
    LUMEN_CHECK(dims == 2 || dims == 3, kSliding,
                "expects an input (B, C, H, W) or (B, C, D, H, W), got shape ", input.shape());
    for (int64_t s : input.shape())
        LUMEN_CHECK(s > 0, kSliding, "expects no empty dim in the input, got shape ",
                    input.shape());
    LUMEN_CHECK(int64_t(o.roi_size.size()) == dims, kSliding, "roi_size ", o.roi_size,
                " must have one value per spatial dim of the input ", input.shape(), " (", dims,
                ")");
    LUMEN_CHECK(o.overlap >= 0 && o.overlap < 1, kSliding, "overlap must be in [0, 1), got ",
                o.overlap);
    LUMEN_CHECK(o.mode == "constant" || o.mode == "gaussian", kSliding,
                "mode must be 'constant' or 'gaussian', got '", o.mode, "'");
    LUMEN_CHECK(o.sigma_scale > 0 && std::isfinite(o.sigma_scale), kSliding,
                "sigma_scale must be a finite value > 0, got ", o.sigma_scale);
    LUMEN_CHECK(o.sw_batch_size >= 1, kSliding, "sw_batch_size must be >= 1, got ",
                o.sw_batch_size);
    LUMEN_CHECK(std::isfinite(o.padding_value), kSliding, "padding_value must be finite, got ",
                o.padding_value);
}

// The predictor's output for `count` windows of `roi`: (count, C_out, *roi) on `device`, with the
// C_out of the first call (channels < 0 before it).
void check_prediction(const Tensor& y, const char* op, int64_t count, const Shape& roi,
                      int64_t channels, Device device) {
    LUMEN_CHECK(y.defined(), op, "the predictor returned an undefined tensor");
    Shape expected{count, y.ndim() > 1 ? y.size(1) : -1};
    expected.insert(expected.end(), roi.begin(), roi.end());
    LUMEN_CHECK(y.shape() == expected, op, "the predictor must give (N, C_out, *window) = (", count,
                ", C_out, ", roi, "), got ", y.shape());
    LUMEN_CHECK(channels < 0 || y.size(1) == channels, op, "the predictor gave ", channels,
                " channels on its first call and ", y.size(1), " now");
    LUMEN_CHECK(y.device() == device, op, "the predictor's output is on ", y.device(),
                ", the input on ", device);
}

}  // namespace

Tensor gaussian_importance_map(const std::vector<int64_t>& roi_size, double sigma_scale) {
    LUMEN_CHECK(!roi_size.empty() && roi_size.size() <= 3, kGaussian,
                "roi_size must have 1 to 3 values, got ", roi_size);
    for (int64_t r : roi_size)
        LUMEN_CHECK(r >= 1, kGaussian, "roi_size values must be >= 1, got ", roi_size);
    checked_numel(roi_size, kGaussian, "map");
    LUMEN_CHECK(sigma_scale > 0 && std::isfinite(sigma_scale), kGaussian,
                "sigma_scale must be a finite value > 0, got ", sigma_scale);
    return importance_map(roi_size, "gaussian", sigma_scale, Device::cpu());
}

Tensor sliding_window_inference(const Tensor& input, const Predictor& predictor,
                                const SlidingWindowOptions& options) {
    check_sliding_arguments(input, predictor, options);
    NoGradGuard no_grad;
    const int64_t B = input.size(0);
    const Device device = input.device();
    const Shape spatial(input.shape().begin() + 2, input.shape().end());
    const WindowGrid grid = window_grid(input.shape(), options.roi_size, options.overlap);
    Tensor image = input.is_floating_point() ? input : input.to(DType::float32);
    if (grid.size != spatial)
        image = pad(image, grid.padding(spatial), "constant", options.padding_value);
    const Tensor weight = importance_map(grid.roi, options.mode, options.sigma_scale, device);

    // Window i of the run over (batch item, grid) is item i / count at grid window i % count.
    const int64_t count = grid.count;
    Tensor total;  // (B, C_out, *size): sum of weight * prediction
    for (int64_t first = 0, n = 0; first < B * count; first += n) {
        n = std::min(options.sw_batch_size, B * count - first);
        std::vector<Tensor> windows;
        for (int64_t i = first; i < first + n; ++i)
            windows.push_back(
                window(image.narrow(0, i / count, 1), grid.start(i % count), grid.roi));
        const Tensor predicted = predictor(cat(windows, 0));
        check_prediction(predicted, kSliding, n, grid.roi, total.defined() ? total.size(1) : -1,
                         device);
        if (!total.defined()) {
            Shape shape{B, predicted.size(1)};
            shape.insert(shape.end(), grid.size.begin(), grid.size.end());
            checked_numel(shape, kSliding, "output");
            total = zeros(shape, DType::float32, device);
        }
        const Tensor weighted = mul(predicted.to(DType::float32), weight);
        for (int64_t i = first; i < first + n; ++i) {
            Tensor slot = window(total.narrow(0, i / count, 1), grid.start(i % count), grid.roi);
            slot.copy_(add(slot, weighted.narrow(0, i - first, 1)));
        }
    }
    // Crop the padding off first, so the division writes a fresh tensor of the input's size.
    return div(window(total, grid.before, spatial),
               window(weight_sum(grid, weight), grid.before, spatial));
}

Tensor slice_by_slice_inference(const Tensor& volume, const Predictor& predictor2d, int64_t axis,
                                int64_t batch) {
    LUMEN_CHECK(volume.defined(), kSlices, "the volume is an undefined tensor");
    LUMEN_CHECK(bool(predictor2d), kSlices, "the predictor is an empty function");
    LUMEN_CHECK(volume.ndim() == 5, kSlices, "expects a volume (B, C, D, H, W), got shape ",
                volume.shape());
    for (int64_t s : volume.shape())
        LUMEN_CHECK(s > 0, kSlices, "expects no empty dim in the volume, got shape ",
                    volume.shape());
    LUMEN_CHECK(axis >= 2 && axis <= 4, kSlices, "axis must be 2, 3 or 4 (D, H or W), got ", axis);
    LUMEN_CHECK(batch >= 1, kSlices, "batch must be >= 1, got ", batch);
    NoGradGuard no_grad;
    const int64_t B = volume.size(0), C = volume.size(1), n = volume.size(axis);
    // The slice axis moved next to the batch: (B, n, C, rows, cols), rows and cols the other two
    // spatial dims in their order. The output gets the same view, so slices are written in place.
    std::vector<int64_t> order{0, axis, 1};
    for (int64_t d = 2; d <= 4; ++d)
        if (d != axis) order.push_back(d);
    const Tensor source = volume.is_floating_point() ? volume : volume.to(DType::float32);
    const Tensor slices = source.permute(order);
    const int64_t rows = slices.size(3), cols = slices.size(4);
    Tensor out, out_slices;  // out (B, C_out, D, H, W); out_slices its view (B, n, C_out, ...)
    for (int64_t first = 0, k = 0; first < n; first += k) {
        k = std::min(batch, n - first);
        const Tensor y = predictor2d(slices.narrow(1, first, k).reshape({B * k, C, rows, cols}));
        check_prediction(y, kSlices, B * k, {rows, cols}, out.defined() ? out.size(1) : -1,
                         volume.device());
        if (!out.defined()) {
            Shape shape = volume.shape();
            shape[1] = y.size(1);
            checked_numel(shape, kSlices, "output");
            out = empty(shape, DType::float32, volume.device());
            out_slices = out.permute(order);
        }
        // Slice s of item b is row b * k + s of the call.
        out_slices.narrow(1, first, k).copy_(y.reshape({B, k, y.size(1), rows, cols}));
    }
    return out;
}

}  // namespace lumen::train
