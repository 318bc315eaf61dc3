// PyTorch-like printing: tensor([[0.1000, 2.0000], ...], dtype=float64). Large tensors show
// the first and last 3 entries of each dim.
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/autograd.h"
#include "core/tensor.h"

namespace lumen {

namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;

void print_level(std::ostream& os, const Tensor& host, const std::vector<double>& values,
                 int64_t dim, int64_t base, bool summarize, int indent) {
    const Shape& shape = host.shape();
    int64_t stride = 1;
    for (size_t d = size_t(dim) + 1; d < shape.size(); ++d) stride *= shape[d];
    os << '[';
    bool floating = host.is_floating_point();
    for (int64_t i = 0; i < shape[dim]; ++i) {
        if (summarize && shape[dim] > 2 * kEdgeItems && i == kEdgeItems) {
            os << "...";
            i = shape[dim] - kEdgeItems - 1;
            os << (dim + 1 == int64_t(shape.size()) ? ", " : ",\n" + std::string(indent + 1, ' '));
            continue;
        }
        if (i > 0) {
            os << (dim + 1 == int64_t(shape.size()) ? ", " : ",\n" + std::string(indent + 1, ' '));
        }
        if (dim + 1 == int64_t(shape.size())) {
            double v = values[size_t(base + i)];
            if (host.dtype() == DType::bool_) {
                os << (v != 0 ? "True" : "False");
            } else if (floating) {
                os << std::fixed << std::setprecision(4) << v;
            } else {
                os << int64_t(v);
            }
        } else {
            print_level(os, host, values, dim + 1, base + i * stride, summarize, indent + 1);
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
        if (is_floating_point()) os << values[0]; else os << int64_t(values[0]);
    } else {
        print_level(os, host, values, 0, 0, numel() > kSummarizeAbove, 7);
    }
    if (dtype() != kDefaultFloat && dtype() != DType::int64 && dtype() != DType::bool_)
        os << ", dtype=" << dtype();
    if (!is_cpu()) os << ", device='" << device() << "'";
    if (requires_grad()) os << (grad_fn() ? ", grad_fn=<" + grad_fn()->name() + ">" : ", requires_grad=True");
    os << ')';
    return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) { return os << tensor.str(); }

}  // namespace lumen
