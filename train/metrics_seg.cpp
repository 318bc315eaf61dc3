// Host implementations of the segmentation metrics. Masks become byte vectors in row-major
// order; the distance transform runs one 1-D lower-envelope pass per dim (Felzenszwalb and
// Huttenlocher, "Distance Transforms of Sampled Functions", 2012), which is exact.
#include "train/metrics_seg.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace lumen::train {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Mask {
    std::vector<uint8_t> on;
    Shape shape;
};

Mask to_mask(const Tensor& t) {
    Mask m{{}, t.shape()};
    for (double v : t.to_vector<double>()) m.on.push_back(v != 0.0 ? 1 : 0);
    return m;
}

// The stride of dim d in a row-major array of `shape`.
int64_t row_major_stride(const Shape& shape, size_t d) {
    int64_t stride = 1;
    for (size_t e = d + 1; e < shape.size(); ++e) stride *= shape[e];
    return stride;
}

std::vector<double> resolve_spacing(const char* who, const std::vector<double>& spacing,
                                    size_t ndim) {
    if (spacing.empty()) return std::vector<double>(ndim, 1.0);
    LUMEN_CHECK(spacing.size() == ndim, who, "needs one spacing value per dim (", ndim, "), got ",
                spacing.size());
    for (double step : spacing)
        LUMEN_CHECK(step > 0 && std::isfinite(step), who, "spacing must be > 0, got ", step);
    return spacing;
}

// One line: f(q) <- min_p (x_q - x_p)^2 + f(p) with x = index * step. Sites with f = inf are
// no parabolas; `v` holds the envelope's parabola indices, z[k]..z[k+1] where v[k] is lowest.
void envelope_1d(std::vector<double>& f, double step, std::vector<int64_t>& v,
                 std::vector<double>& z) {
    const int64_t n = int64_t(f.size());
    v.assign(size_t(n), 0);
    z.assign(size_t(n) + 1, 0.0);
    int64_t k = -1;
    auto intersect = [&](int64_t q, int64_t p) {  // where parabolas q and p meet
        double xq = double(q) * step, xp = double(p) * step;
        return ((f[size_t(q)] + xq * xq) - (f[size_t(p)] + xp * xp)) / (2.0 * (xq - xp));
    };
    for (int64_t q = 0; q < n; ++q) {
        if (f[size_t(q)] == kInf) continue;
        if (k < 0) {
            k = 0;
            v[0] = q;
            z[0] = -kInf;
            z[1] = kInf;
            continue;
        }
        double s = intersect(q, v[size_t(k)]);
        while (s <= z[size_t(k)]) s = intersect(q, v[size_t(--k)]);  // z[0] = -inf stops it
        ++k;
        v[size_t(k)] = q;
        z[size_t(k)] = s;
        z[size_t(k) + 1] = kInf;
    }
    if (k < 0) return;  // no site on this line: it stays inf
    std::vector<double> out(static_cast<size_t>(n));
    for (int64_t q = 0, j = 0; q < n; ++q) {
        while (z[size_t(j) + 1] < double(q) * step) ++j;
        // The offset from the integer difference: exactly 0 at the site itself (x_q - x_v
        // written out may be fused into an FMA and leave a rounding residue).
        const int64_t v_j = v[size_t(j)];
        const double d = double(q - v_j) * step;
        out[size_t(q)] = d * d + f[size_t(v_j)];
    }
    f.swap(out);
}

// Squared distances to the nearest site (f = 0 at sites, inf elsewhere), in place.
void squared_distance_transform(std::vector<double>& f, const Shape& shape,
                                const std::vector<double>& spacing) {
    std::vector<double> line;
    std::vector<int64_t> v;
    std::vector<double> z;
    for (size_t d = 0; d < shape.size(); ++d) {
        const int64_t n = shape[d], inner = row_major_stride(shape, d);
        const int64_t outer = n == 0 ? 0 : int64_t(f.size()) / (n * inner);
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
                const int64_t base = o * n * inner + i;
                line.resize(size_t(n));
                for (int64_t k = 0; k < n; ++k) line[size_t(k)] = f[size_t(base + k * inner)];
                envelope_1d(line, spacing[d], v, z);
                for (int64_t k = 0; k < n; ++k) f[size_t(base + k * inner)] = line[size_t(k)];
            }
    }
}

// mask AND NOT erode(mask) with the face-connected cross, outside = background.
std::vector<uint8_t> border_of(const Mask& m) {
    std::vector<uint8_t> border(m.on.size(), 0);
    for (size_t idx = 0; idx < m.on.size(); ++idx) {
        if (!m.on[idx]) continue;
        for (size_t d = 0; d < m.shape.size() && !border[idx]; ++d) {
            const int64_t stride = row_major_stride(m.shape, d);
            const int64_t c = (int64_t(idx) / stride) % m.shape[d];
            bool before_out = c == 0 || !m.on[idx - size_t(stride)];
            bool after_out = c == m.shape[d] - 1 || !m.on[idx + size_t(stride)];
            border[idx] = before_out || after_out;
        }
    }
    return border;
}

bool any(const std::vector<uint8_t>& on) {
    return std::any_of(on.begin(), on.end(), [](uint8_t x) { return x != 0; });
}

std::vector<double> surface_distances_of(const Mask& a, const Mask& b,
                                         const std::vector<double>& spacing) {
    LUMEN_CHECK(any(a.on) && any(b.on), "surface_distances",
                "needs two non-empty masks (the distance to an empty mask is undefined)");
    std::vector<uint8_t> border_a = border_of(a), border_b = border_of(b);
    std::vector<double> f(border_b.size());
    for (size_t i = 0; i < f.size(); ++i) f[i] = border_b[i] ? 0.0 : kInf;
    squared_distance_transform(f, b.shape, spacing);
    std::vector<double> out;
    for (size_t i = 0; i < f.size(); ++i)
        if (border_a[i]) out.push_back(std::sqrt(f[i]));
    return out;
}

// numpy.percentile(values, q) with the default linear interpolation (numpy's _lerp form).
double percentile(std::vector<double> values, double q) {
    std::sort(values.begin(), values.end());
    const double index = q / 100.0 * double(values.size() - 1);
    const size_t lo = size_t(std::floor(index)), hi = std::min(lo + 1, values.size() - 1);
    const double t = index - double(lo), a = values[lo], b = values[hi];
    return t >= 0.5 ? b - (b - a) * (1.0 - t) : a + (b - a) * t;
}

double hd95_of(const Mask& pred, const Mask& ref, const std::vector<double>& spacing) {
    std::vector<double> all = surface_distances_of(pred, ref, spacing);
    std::vector<double> back = surface_distances_of(ref, pred, spacing);
    all.insert(all.end(), back.begin(), back.end());
    return percentile(std::move(all), 95.0);
}

double dice_of(const Mask& a, const Mask& b) {
    int64_t both = 0, total = 0;
    for (size_t i = 0; i < a.on.size(); ++i) {
        both += a.on[i] && b.on[i];
        total += a.on[i] + b.on[i];
    }
    return total == 0 ? 1.0 : 2.0 * double(both) / double(total);
}

void check_same_shape(const char* who, const Tensor& a, const Tensor& b) {
    LUMEN_CHECK(a.shape() == b.shape(), who, "expects two maps of one shape, got ", a.shape(),
                " and ", b.shape());
}

void check_label_maps(const char* who, const Tensor& pred, const Tensor& target,
                      int64_t num_classes) {
    check_same_shape(who, pred, target);
    LUMEN_CHECK(!pred.is_floating_point() && !target.is_floating_point(), who,
                "expects integer label maps, got ", pred.dtype(), " and ", target.dtype());
    LUMEN_CHECK(num_classes >= 2, who, "needs num_classes >= 2, got ", num_classes);
}

}  // namespace

Tensor distance_transform_edt(const Tensor& mask, const std::vector<double>& spacing) {
    Mask m = to_mask(mask);
    std::vector<double> step = resolve_spacing("distance_transform_edt", spacing, m.shape.size());
    std::vector<double> f(m.on.size());
    for (size_t i = 0; i < f.size(); ++i) f[i] = m.on[i] ? kInf : 0.0;  // zeros are the sites
    squared_distance_transform(f, m.shape, step);
    for (double& value : f) value = std::sqrt(value);
    return from_vector(f, m.shape);
}

Tensor mask_border(const Tensor& mask) {
    Mask m = to_mask(mask);
    std::vector<uint8_t> border = border_of(m);
    return from_vector(std::vector<bool>(border.begin(), border.end()), m.shape);
}

std::vector<double> surface_distances(const Tensor& a, const Tensor& b,
                                      const std::vector<double>& spacing) {
    check_same_shape("surface_distances", a, b);
    return surface_distances_of(to_mask(a), to_mask(b),
                                resolve_spacing("surface_distances", spacing, size_t(a.ndim())));
}

double hd95(const Tensor& pred, const Tensor& ref, const std::vector<double>& spacing) {
    check_same_shape("hd95", pred, ref);
    return hd95_of(to_mask(pred), to_mask(ref),
                   resolve_spacing("hd95", spacing, size_t(pred.ndim())));
}

double binary_dice(const Tensor& pred, const Tensor& ref) {
    check_same_shape("binary_dice", pred, ref);
    return dice_of(to_mask(pred), to_mask(ref));
}

std::vector<CaseMetric> transunet_case_metrics(const Tensor& pred, const Tensor& target,
                                               int64_t num_classes,
                                               const std::vector<double>& spacing) {
    const char* who = "transunet_case_metrics";
    check_label_maps(who, pred, target, num_classes);
    std::vector<double> step = resolve_spacing(who, spacing, size_t(pred.ndim()));
    std::vector<int64_t> p = pred.to_vector<int64_t>(), t = target.to_vector<int64_t>();
    std::vector<CaseMetric> out;
    for (int64_t c = 1; c < num_classes; ++c) {
        Mask pc{{}, pred.shape()}, gc{{}, pred.shape()};
        for (size_t i = 0; i < p.size(); ++i) {
            pc.on.push_back(p[i] == c);
            gc.on.push_back(t[i] == c);
        }
        if (any(pc.on) && any(gc.on))
            out.push_back({dice_of(pc, gc), hd95_of(pc, gc, step)});
        else
            out.push_back({any(pc.on) ? 1.0 : 0.0, 0.0});
    }
    return out;
}

std::vector<double> foreground_dice(const Tensor& pred, const Tensor& target, int64_t num_classes) {
    check_label_maps("foreground_dice", pred, target, num_classes);
    LUMEN_CHECK(pred.ndim() >= 1 && pred.size(0) > 0, "foreground_dice",
                "expects maps (B, *spatial) with B > 0, got ", pred.shape());
    std::vector<int64_t> p = pred.to_vector<int64_t>(), t = target.to_vector<int64_t>();
    const int64_t batch = pred.size(0), per_sample = pred.numel() / batch;
    std::vector<double> out;
    for (int64_t c = 1; c < num_classes; ++c) {
        double total = 0.0;
        int64_t defined = 0;
        for (int64_t b = 0; b < batch; ++b) {
            int64_t both = 0, in_pred = 0, in_target = 0;
            for (int64_t i = b * per_sample; i < (b + 1) * per_sample; ++i) {
                in_pred += p[size_t(i)] == c;
                in_target += t[size_t(i)] == c;
                both += p[size_t(i)] == c && t[size_t(i)] == c;
            }
            if (in_target == 0) continue;  // MONAI's ignore_empty: NaN, left out of the mean
            total += 2.0 * double(both) / double(in_pred + in_target);
            ++defined;
        }
        out.push_back(defined ? total / double(defined) : std::nan(""));
    }
    return out;
}

double pixel_accuracy(const Tensor& pred, const Tensor& target) {
    check_label_maps("pixel_accuracy", pred, target, 2);
    LUMEN_CHECK(pred.ndim() >= 1 && pred.numel() > 0, "pixel_accuracy",
                "expects non-empty maps (B, *spatial), got ", pred.shape());
    std::vector<int64_t> p = pred.to_vector<int64_t>(), t = target.to_vector<int64_t>();
    const int64_t batch = pred.size(0), per_sample = pred.numel() / batch;
    double total = 0.0;
    for (int64_t b = 0; b < batch; ++b) {
        int64_t equal = 0;
        for (int64_t i = b * per_sample; i < (b + 1) * per_sample; ++i)
            equal += p[size_t(i)] == t[size_t(i)];
        total += double(equal) / double(per_sample);
    }
    return total / double(batch);
}

namespace {

// 2TP / (2TP + FP + FN) of class c in [begin, end), or -1 when the class is in neither map.
double class_f1(const std::vector<int64_t>& p, const std::vector<int64_t>& t, int64_t c,
                int64_t begin, int64_t end) {
    int64_t tp = 0, fp = 0, fn = 0;
    for (int64_t i = begin; i < end; ++i) {
        bool in_p = p[size_t(i)] == c, in_t = t[size_t(i)] == c;
        tp += in_p && in_t;
        fp += in_p && !in_t;
        fn += !in_p && in_t;
    }
    return tp + fp + fn == 0 ? -1.0 : 2.0 * double(tp) / double(2 * tp + fp + fn);
}

}  // namespace

double samplewise_dice(const Tensor& preds, const Tensor& target, int64_t num_classes) {
    const char* who = "samplewise_dice";
    check_label_maps(who, preds, target, num_classes);
    LUMEN_CHECK(preds.ndim() >= 1 && preds.size(0) > 0 && preds.numel() > 0, who,
                "expects non-empty maps (B, ...), got ", preds.shape());
    std::vector<int64_t> p = preds.to_vector<int64_t>(), t = target.to_vector<int64_t>();
    for (size_t i = 0; i < p.size(); ++i)
        LUMEN_CHECK(p[i] >= 0 && p[i] < num_classes && t[i] >= 0 && t[i] < num_classes, who,
                    "labels must be in [0, ", num_classes, "), got ", p[i], " and ", t[i],
                    " at element ", i);
    const int64_t batch = preds.size(0), per_sample = preds.numel() / batch;
    double total = 0.0;
    for (int64_t b = 0; b < batch; ++b) {
        const int64_t begin = b * per_sample, end = begin + per_sample;
        if (num_classes <= 2) {
            total += std::max(0.0, class_f1(p, t, 1, begin, end));  // absent class 1: F1 0
            continue;
        }
        double sum = 0.0;
        int64_t present = 0;
        for (int64_t c = 0; c < num_classes; ++c) {
            double f1 = class_f1(p, t, c, begin, end);
            if (f1 < 0) continue;
            sum += f1;
            ++present;
        }
        total += present ? sum / double(present) : 0.0;
    }
    return total / double(batch);
}

}  // namespace lumen::train
