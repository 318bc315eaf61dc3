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

// One value as PyTorch shows it here: True/False, fixed 4 decimals, or an integer.
std::string value_text(const Tensor& host, double v) {
    if (host.dtype() == DType::bool_) return v != 0 ? "True" : "False";
    std::ostringstream os;
    if (host.is_floating_point())
        os << std::fixed << std::setprecision(4) << v;
    else
        os << int64_t(v);
    return os.str();
}

// Whether index i of a dim of `size` is shown (the first and last kEdgeItems when summarized).
bool shown(int64_t i, int64_t size, bool summarize) {
    return !summarize || size <= 2 * kEdgeItems || i < kEdgeItems || i >= size - kEdgeItems;
}

// The widest shown value, so that columns line up (PyTorch pads every value to one width).
size_t value_width(const Tensor& host, const std::vector<double>& values, bool summarize) {
    const Shape& shape = host.shape();
    size_t width = 0;
    for (int64_t flat = 0; flat < int64_t(values.size()); ++flat) {
        bool visible = true;
        for (int64_t d = int64_t(shape.size()) - 1, rest = flat; d >= 0 && visible; --d) {
            visible = shown(rest % shape[size_t(d)], shape[size_t(d)], summarize);
            rest /= shape[size_t(d)];
        }
        if (visible) width = std::max(width, value_text(host, values[size_t(flat)]).size());
    }
    return width;
}

// As torch's _tensor_str: entries of the last dim joined by ", "; sub-tensors by "," and one
// line break per remaining dim (a blank line between matrices), aligned under the first "[";
// a summarized dim shows "..." in place of its middle entries.
void print_level(std::ostream& os, const Tensor& host, const std::vector<double>& values,
                 int64_t dim, int64_t base, bool summarize, int indent, size_t width) {
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
            const std::string text = value_text(host, values[size_t(base + i)]);
            os << std::string(width - text.size(), ' ') << text;
        } else {
            print_level(os, host, values, dim + 1, base + i * stride, summarize, indent + 1, width);
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
    if (ndim() == 0) {
        if (is_floating_point()) os << std::fixed << std::setprecision(4);
        if (is_floating_point())
            os << values[0];
        else
            os << int64_t(values[0]);
    } else {
        const bool summarize = numel() > kSummarizeAbove;
        print_level(os, host, values, 0, 0, summarize, 7, value_width(host, values, summarize));
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
