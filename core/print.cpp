// PyTorch-like printing: tensor([[0.1000, 2.0000], ...], dtype=float64), values padded to one
// width. Tensors of more than 1000 values show the first and last 3 entries of each dim.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/autograd.h"
#include "core/tensor.h"

namespace lumen {

namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;

// How floating values are written, chosen from the shown values as torch's _Formatter does:
// all finite values integers -> "3." (scientific when the largest is > 1e8 or the nonzero
// magnitudes span more than 1000x); otherwise 4 decimals, or "1.2346e-05" when the nonzero
// magnitudes span more than 1000x, exceed 1e8 or fall below 1e-4.
enum class FloatStyle { integer, fixed, scientific };

FloatStyle float_style(const std::vector<double>& shown_values) {
    bool integers = true, any = false;
    double lo = INFINITY, hi = 0.0;
    for (double v : shown_values) {
        if (!std::isfinite(v)) continue;
        integers = integers && std::ceil(v) == v;
        if (v == 0.0) continue;
        any = true;
        lo = std::min(lo, std::fabs(v));
        hi = std::max(hi, std::fabs(v));
    }
    const bool wide = any && (hi / lo > 1000.0 || hi > 1e8);
    if (integers) return wide ? FloatStyle::scientific : FloatStyle::integer;
    return wide || (any && lo < 1e-4) ? FloatStyle::scientific : FloatStyle::fixed;
}

// One value as PyTorch shows it: True/False, an integer, or a float in `style`.
std::string value_text(const Tensor& host, double v, FloatStyle style) {
    if (host.dtype() == DType::bool_) return v != 0 ? "True" : "False";
    if (!host.is_floating_point()) return std::to_string(int64_t(v));
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream os;
    if (style == FloatStyle::integer)
        os << std::fixed << std::setprecision(0) << v << '.';
    else if (style == FloatStyle::scientific)
        os << std::scientific << std::setprecision(4) << v;
    else
        os << std::fixed << std::setprecision(4) << v;
    return os.str();
}

// Whether index i of a dim of `size` is shown (the first and last kEdgeItems when summarized).
bool shown(int64_t i, int64_t size, bool summarize) {
    return !summarize || size <= 2 * kEdgeItems || i < kEdgeItems || i >= size - kEdgeItems;
}

// The values shown (all of them, or the first and last kEdgeItems of each dim when summarized).
std::vector<double> shown_values(const Shape& shape, const std::vector<double>& values,
                                 bool summarize) {
    std::vector<double> out;
    for (int64_t flat = 0; flat < int64_t(values.size()); ++flat) {
        bool visible = true;
        for (int64_t d = int64_t(shape.size()) - 1, rest = flat; d >= 0 && visible; --d) {
            visible = shown(rest % shape[size_t(d)], shape[size_t(d)], summarize);
            rest /= shape[size_t(d)];
        }
        if (visible) out.push_back(values[size_t(flat)]);
    }
    return out;
}

// The width every value is padded to: the widest shown value; for floats the widest nonzero
// finite one (as torch: a zero, nan or inf does not widen the columns).
size_t value_width(const Tensor& host, const std::vector<double>& shown, FloatStyle style) {
    size_t width = 1;
    for (double v : shown)
        if (!host.is_floating_point() || (v != 0.0 && std::isfinite(v)))
            width = std::max(width, value_text(host, v, style).size());
    return width;
}

// As torch's _tensor_str: entries of the last dim joined by ", "; sub-tensors by "," and one
// line break per remaining dim (a blank line between matrices), aligned under the first "[";
// a summarized dim shows "..." in place of its middle entries.
void print_level(std::ostream& os, const Tensor& host, const std::vector<double>& values,
                 int64_t dim, int64_t base, bool summarize, int indent, FloatStyle style,
                 size_t width) {
    const Shape& shape = host.shape();
    const int64_t rest = int64_t(shape.size()) - dim, size = shape[size_t(dim)];
    int64_t stride = 1;
    for (size_t d = size_t(dim) + 1; d < shape.size(); ++d) stride *= shape[d];
    const std::string separator =
        rest == 1 ? ", " : "," + std::string(size_t(rest - 1), '\n') + std::string(indent + 1, ' ');
    os << '[';
    for (int64_t i = 0; i < size; ++i) {
        if (i > 0) os << separator;
        if (!shown(i, size, summarize)) {
            os << (rest == 1 ? " ..." : "...");
            i = size - kEdgeItems - 1;
        } else if (rest == 1) {
            const std::string text = value_text(host, values[size_t(base + i)], style);
            os << std::string(width - std::min(width, text.size()), ' ') << text;
        } else {
            print_level(os, host, values, dim + 1, base + i * stride, summarize, indent + 1, style,
                        width);
        }
    }
    os << ']';
}

}  // namespace

std::string Tensor::str() const {
    if (!defined()) return "tensor(undefined)";
    Tensor host = detach().cpu().contiguous();
    std::vector<double> values = host.to_vector<double>();
    std::ostringstream os;
    os << "tensor(";
    const bool summarize = numel() > kSummarizeAbove;
    const std::vector<double> shown = shown_values(host.shape(), values, summarize);
    const FloatStyle style = float_style(shown);
    if (ndim() == 0) {
        os << value_text(host, values[0], style);
    } else {
        print_level(os, host, values, 0, 0, summarize, 7, style, value_width(host, shown, style));
    }
    if (dtype() != kDefaultFloat && dtype() != DType::int64 && dtype() != DType::bool_)
        os << ", dtype=" << dtype();
    if (!is_cpu()) os << ", device='" << device() << "'";
    if (requires_grad())
        os << (grad_fn() ? ", grad_fn=<" + grad_fn()->name() + ">" : ", requires_grad=True");
    os << ')';
    return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) { return os << tensor.str(); }

}  // namespace lumen
