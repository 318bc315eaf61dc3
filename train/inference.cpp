// Sliding-window and slice-by-slice inference: window positions as MONAI's
// _get_scan_interval and dense_patch_slices, the importance map as compute_importance_map, the
// sums held at full size and one batch of windows at a time.
#include "train/inference.h"

#include <algorithm>
#include <cmath>

#include "core/autograd.h"
#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/pad.h"
#include "ops/shape.h"

namespace lumen::train {

namespace {

constexpr const char* kSliding = "sliding_window_inference";

// The starts of the windows along one dim of `size` for window `roi` (roi <= size).
std::vector<int64_t> window_starts(int64_t size, int64_t roi, double overlap) {
    // MONAI: a window as large as the image is one window; otherwise step int(roi (1 - o)).
    const int64_t step = roi == size ? roi : std::max<int64_t>(int64_t(double(roi) * (1 - overlap)), 1);
    std::vector<int64_t> starts;
    for (int64_t start = 0;; start += step) {
        // The last window is shifted back to end at the border.
        starts.push_back(std::min(start, size - roi));
        if (start + roi >= size) break;
    }
    return starts;
}

}  // namespace

Tensor importance_map(const std::vector<int64_t>& roi_size, const std::string& mode,
                      double sigma_scale) {
    LUMEN_CHECK(mode == "constant" || mode == "gaussian", kSliding,
                "mode must be constant or gaussian, got '", mode, "'");
    LUMEN_CHECK(sigma_scale > 0 && std::isfinite(sigma_scale), kSliding,
                "sigma_scale must be > 0, got ", sigma_scale);
    int64_t n = 1;
    for (int64_t r : roi_size) {
        LUMEN_CHECK(r > 0, kSliding, "roi_size must be positive, got ", roi_size);
        n *= r;
    }
    if (mode == "constant") return ones(Shape(roi_size), DType::float32);
    // The map is separable: one 1-D Gaussian per dim, multiplied out.
    std::vector<std::vector<double>> axes;
    for (int64_t r : roi_size) {
        std::vector<double> g(static_cast<size_t>(r));
        const double sigma = sigma_scale * double(r), centre = double(r / 2);
        for (int64_t x = 0; x < r; ++x)
            g[size_t(x)] = std::exp(-(double(x) - centre) * (double(x) - centre) /
                                    (2 * sigma * sigma));
        axes.push_back(std::move(g));
    }
    std::vector<double> values(static_cast<size_t>(n));
    double top = 0;
    for (int64_t i = 0; i < n; ++i) {
        double v = 1;
        for (int64_t d = int64_t(roi_size.size()) - 1, rest = i; d >= 0; --d) {
            v *= axes[size_t(d)][size_t(rest % roi_size[size_t(d)])];
            rest /= roi_size[size_t(d)];
        }
        values[size_t(i)] = v;
        top = std::max(top, v);
    }
    double low = INFINITY;
    for (double& v : values) low = std::min(low, v /= top);
    const double floor = std::max(low, 1e-3);
    for (double& v : values) v = std::max(v, floor);
    return from_vector(values, Shape(roi_size)).to(DType::float32);
}

Tensor sliding_window_inference(const Tensor& input, const Predictor& predictor,
                                const SlidingWindowOptions& o) {
    const int64_t dims = input.ndim() - 2;
    LUMEN_CHECK(dims == 2 || dims == 3, kSliding, "expects (B, C, H, W) or (B, C, D, H, W), got ",
                input.shape());
    LUMEN_CHECK(int64_t(o.roi_size.size()) == dims, kSliding, "roi_size ", o.roi_size,
                " needs one value per spatial dim of ", input.shape());
    LUMEN_CHECK(o.overlap >= 0 && o.overlap < 1, kSliding, "overlap must be in [0, 1), got ",
                o.overlap);
    LUMEN_CHECK(o.sw_batch_size >= 1, kSliding, "sw_batch_size must be >= 1, got ",
                o.sw_batch_size);
    NoGradGuard no_grad;
    // The window (values <= 0 take the image's size) and the padding up to it.
    std::vector<int64_t> roi(o.roi_size), size, before(static_cast<size_t>(dims));
    Dims padding;  // torch order: the last dim first
    bool padded = false;
    for (int64_t d = 0; d < dims; ++d) {
        const int64_t s = input.size(d + 2);
        if (roi[size_t(d)] <= 0) roi[size_t(d)] = s;
        const int64_t diff = std::max<int64_t>(roi[size_t(d)] - s, 0);
        before[size_t(d)] = diff / 2;
        size.push_back(s + diff);
        padded = padded || diff > 0;
    }
    for (int64_t d = dims - 1; d >= 0; --d) {
        const int64_t diff = size[size_t(d)] - input.size(d + 2);
        padding.push_back(diff / 2);
        padding.push_back(diff - diff / 2);
    }
    Tensor image = input.is_floating_point() ? input : input.to(DType::float32);
    if (padded) image = pad(image, padding, "constant", o.padding_value);
    const Tensor weight = importance_map(roi, o.mode, o.sigma_scale).to(input.device());

    // Every window's start, row-major over the dims.
    std::vector<std::vector<int64_t>> starts{{}};
    for (int64_t d = 0; d < dims; ++d) {
        std::vector<std::vector<int64_t>> next;
        for (const auto& prefix : starts)
            for (int64_t s : window_starts(size[size_t(d)], roi[size_t(d)], o.overlap)) {
                next.push_back(prefix);
                next.back().push_back(s);
            }
        starts = std::move(next);
    }
    auto window_of = [&](const Tensor& t, const std::vector<int64_t>& start) {
        Tensor w = t;
        for (int64_t d = 0; d < dims; ++d) w = w.narrow(d + 2, start[size_t(d)], roi[size_t(d)]);
        return w;
    };
    const int64_t B = image.size(0);
    Tensor total, weights = zeros(Shape(size), DType::float32, input.device());
    for (size_t first = 0; first < starts.size(); first += size_t(o.sw_batch_size)) {
        const size_t last = std::min(starts.size(), first + size_t(o.sw_batch_size));
        std::vector<Tensor> windows;
        for (size_t w = first; w < last; ++w) windows.push_back(window_of(image, starts[w]));
        Tensor predicted = predictor(cat(windows, 0));
        Shape expected{B * int64_t(last - first), predicted.ndim() > 1 ? predicted.size(1) : 0};
        expected.insert(expected.end(), roi.begin(), roi.end());
        LUMEN_CHECK(predicted.ndim() == dims + 2 && predicted.shape() == expected, kSliding,
                    "the predictor must give (N, C_out, *window) = ", expected, " for ",
                    last - first, " window(s) of ", roi, ", got ", predicted.shape());
        if (!total.defined()) {
            Shape full{B, predicted.size(1)};
            full.insert(full.end(), size.begin(), size.end());
            total = zeros(full, DType::float32, input.device());
        }
        predicted = predicted.to(DType::float32);
        for (size_t w = first; w < last; ++w) {
            Tensor part = predicted.narrow(0, B * int64_t(w - first), B);
            Tensor into = window_of(total, starts[w]);
            into.copy_(add(into, mul(part, weight)));
            Tensor counted = window_of(weights.unsqueeze(0).unsqueeze(0), starts[w]);
            counted.copy_(add(counted, weight));
        }
    }
    Tensor out = div(total, weights);
    for (int64_t d = 0; d < dims; ++d)
        out = out.narrow(d + 2, before[size_t(d)], input.size(d + 2));
    return out.contiguous();
}

Tensor slice_by_slice_inference(const Tensor& volume, const Predictor& predictor2d, int64_t axis,
                                int64_t batch) {
    const char* who = "slice_by_slice_inference";
    LUMEN_CHECK(volume.ndim() == 5, who, "expects a volume (B, C, D, H, W), got ", volume.shape());
    LUMEN_CHECK(axis >= 2 && axis <= 4, who, "axis must be 2, 3 or 4 (D, H or W), got ", axis);
    LUMEN_CHECK(batch >= 1, who, "batch must be >= 1, got ", batch);
    NoGradGuard no_grad;
    const int64_t B = volume.size(0), n = volume.size(axis);
    // (B, C, D, H, W) with the slice axis moved next to the batch: (B, n, C, a, b).
    std::vector<int64_t> order{0, axis, 1};
    for (int64_t d = 2; d <= 4; ++d)
        if (d != axis) order.push_back(d);
    Tensor slices = volume.permute(order);
    const int64_t a = slices.size(3), b = slices.size(4);
    std::vector<Tensor> outputs;
    for (int64_t first = 0; first < n; first += batch) {
        const int64_t k = std::min(batch, n - first);
        Tensor chunk = slices.narrow(1, first, k).reshape({B * k, volume.size(1), a, b});
        Tensor y = predictor2d(chunk);
        LUMEN_CHECK(y.ndim() == 4 && y.size(0) == B * k && y.size(2) == a && y.size(3) == b, who,
                    "the 2-D predictor must give (", B * k, ", C_out, ", a, ", ", b, "), got ",
                    y.shape());
        outputs.push_back(y.to(DType::float32).reshape({B, k, y.size(1), a, b}));
    }
    // (B, n, C_out, a, b) back to (B, C_out, D, H, W).
    Tensor stacked = cat(outputs, 1);
    std::vector<int64_t> back(5);
    for (int64_t d = 0; d < 5; ++d) back[size_t(order[size_t(d)])] = d;
    // stacked's dim d holds volume dim order[d] (with C_out in place of C).
    return stacked.permute(back).contiguous();
}

}  // namespace lumen::train
