// Tensor metadata, element access, autograd accessors and the basic factories.
#include "core/tensor.h"

#include <cstring>
#include <sstream>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/strided.h"

namespace lumen {

int64_t Tensor::size(int64_t dim) const { return shape()[wrap_dim(dim, ndim(), "size")]; }
int64_t Tensor::stride(int64_t dim) const { return strides()[wrap_dim(dim, ndim(), "stride")]; }

bool Tensor::is_contiguous() const {
    const Shape& sizes = shape();
    const Shape& steps = strides();
    int64_t expected = 1;
    for (int64_t i = int64_t(sizes.size()) - 1; i >= 0; --i) {
        if (sizes[i] == 1) continue;  // any stride is fine for a size-1 dim
        if (steps[i] != expected) return numel() == 0;
        expected *= sizes[i];
    }
    return true;
}

void* Tensor::data_ptr() const {
    const auto& impl = checked();
    return static_cast<char*>(impl->storage->data()) + impl->offset * itemsize(impl->dtype);
}

Tensor Tensor::detach() const {
    auto impl = std::make_shared<TensorImpl>(*checked());
    impl->requires_grad = false;
    impl->grad = nullptr;
    impl->grad_fn = nullptr;
    return Tensor(std::move(impl));
}

void Tensor::set_data(const Tensor& source) const {
    const auto& impl = checked();
    LUMEN_CHECK(source.defined(), "set_data", "the source tensor is undefined");
    LUMEN_CHECK(impl->grad_fn == nullptr, "set_data",
                "can only replace the data of a leaf "
                "tensor (this one was produced by '",
                impl->grad_fn->name(), "')");
    LUMEN_CHECK(!impl->requires_grad || is_floating(source.dtype()), "set_data",
                "the tensor requires grad, so its new dtype must be floating, got ",
                source.dtype());
    const auto& from = source.impl();
    impl->storage = from->storage;
    impl->shape = from->shape;
    impl->strides = from->strides;
    impl->offset = from->offset;
    impl->dtype = from->dtype;
    if (impl->grad && (impl->grad->shape != impl->shape || impl->grad->dtype != impl->dtype ||
                       impl->grad->storage->device() != impl->storage->device()))
        impl->grad = nullptr;
}

Tensor& Tensor::requires_grad_(bool enabled) {
    LUMEN_CHECK(!enabled || is_floating_point(), "requires_grad_",
                "only floating-point tensors can require gradients, got dtype ", dtype());
    LUMEN_CHECK(is_leaf(), "requires_grad_",
                "can only be set on a leaf tensor (this one was "
                "produced by '",
                grad_fn()->name(), "'); use detach() first");
    impl_->requires_grad = enabled;
    return *this;
}

Tensor Tensor::grad() const {
    const auto& impl = checked();
    return impl->grad ? Tensor(impl->grad) : Tensor();
}

void Tensor::set_grad(const Tensor& grad) const {
    const auto& impl = checked();
    if (!grad.defined()) {
        impl->grad = nullptr;
        return;
    }
    LUMEN_CHECK(grad.shape() == shape() && grad.dtype() == dtype(), "set_grad", "grad of shape ",
                grad.shape(), " and dtype ", grad.dtype(), " does not match tensor of shape ",
                shape(), " and dtype ", dtype());
    impl->grad = grad.detach().impl();
}

void Tensor::backward(const Tensor& grad, bool retain_graph) const {
    run_backward(*this, grad, retain_graph);
}

double read_element(const Tensor& cpu_tensor, int64_t linear_index) {
    StridedView view = strided(cpu_tensor, "read_element");
    int64_t offset = strided_offset(view, linear_index);
    return dispatch_all(view.dtype, "read_element",
                        [&]<typename T>() { return convert<double>(view.ptr<T>()[offset]); });
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
    Tensor host = cpu().contiguous();
    std::vector<T> out(size_t(host.numel()));
    dispatch_all(host.dtype(), "to_vector", [&]<typename S>() {
        const S* src = static_cast<const S*>(host.data_ptr());
        for (size_t i = 0; i < out.size(); ++i) out[i] = convert<T>(src[i]);
    });
    return out;
}

template <typename T>
T Tensor::item() const {
    LUMEN_CHECK(numel() == 1, "item", "needs a tensor with one element, got shape ", shape());
    return to_vector<T>()[0];
}

template <typename T>
T Tensor::at(std::initializer_list<int64_t> index) const {
    LUMEN_CHECK(int64_t(index.size()) == ndim(), "at", "got ", index.size(),
                " indices for a tensor with ", ndim(), " dims (shape ", shape(), ")");
    Tensor element = *this;
    int64_t dim = 0;
    for (int64_t i : index) {
        int64_t size = shape()[dim];
        LUMEN_CHECK(i >= -size && i < size, "at", "index ", i, " is out of range for dim ", dim,
                    " of size ", size, " (shape ", shape(), ")");
        element = element.detach().narrow(0, i < 0 ? i + size : i, 1).squeeze(0);
        ++dim;
    }
    return element.item<T>();
}

#define LUMEN_INSTANTIATE_ACCESS(T)                       \
    template std::vector<T> Tensor::to_vector<T>() const; \
    template T Tensor::item<T>() const;                   \
    template T Tensor::at<T>(std::initializer_list<int64_t>) const;
LUMEN_INSTANTIATE_ACCESS(float)
LUMEN_INSTANTIATE_ACCESS(double)
LUMEN_INSTANTIATE_ACCESS(int64_t)
LUMEN_INSTANTIATE_ACCESS(int32_t)
LUMEN_INSTANTIATE_ACCESS(uint8_t)
LUMEN_INSTANTIATE_ACCESS(bool)
#undef LUMEN_INSTANTIATE_ACCESS

// ---- factories ----

Tensor empty(const Shape& shape, DType dtype, Device device) {
    for (int64_t s : shape) LUMEN_CHECK(s >= 0, "empty", "negative size in shape ", shape);
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = std::make_shared<Storage>(size_t(shape_numel(shape)) * itemsize(dtype), device);
    impl->shape = shape;
    impl->strides = contiguous_strides(shape);
    impl->dtype = dtype;
    return Tensor(std::move(impl));
}

Tensor empty_like(const Tensor& like) { return empty(like.shape(), like.dtype(), like.device()); }
Tensor empty_like(const Tensor& like, DType dtype) {
    return empty(like.shape(), dtype, like.device());
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
    Tensor out = empty(shape, dtype, device);
    out.fill_(value);
    return out;
}

Tensor zeros(const Shape& shape, DType dtype, Device device) {
    return full(shape, 0.0, dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
    return full(shape, 1.0, dtype, device);
}
Tensor zeros_like(const Tensor& like) { return zeros(like.shape(), like.dtype(), like.device()); }
Tensor ones_like(const Tensor& like) { return ones(like.shape(), like.dtype(), like.device()); }
Tensor full_like(const Tensor& like, double value) {
    return full(like.shape(), value, like.dtype(), like.device());
}
Tensor scalar_tensor(double value, DType dtype, Device device) {
    return full({}, value, dtype, device);
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, Shape shape, Device device) {
    if (shape.empty()) shape = {int64_t(values.size())};  // like torch.tensor([...])
    LUMEN_CHECK(shape_numel(shape) == int64_t(values.size()), "from_vector", "got ", values.size(),
                " values for shape ", shape, " (", shape_numel(shape), " elements)");
    Tensor host = empty(shape, dtype_of<T>());
    if constexpr (std::is_same_v<T, bool>) {
        auto* dst = static_cast<bool*>(host.data_ptr());
        for (size_t i = 0; i < values.size(); ++i) dst[i] = values[i];
    } else if (!values.empty()) {
        std::memcpy(host.data_ptr(), values.data(), values.size() * sizeof(T));
    }
    return device.is_cpu() ? host : host.to(device);
}
template Tensor from_vector(const std::vector<float>&, Shape, Device);
template Tensor from_vector(const std::vector<double>&, Shape, Device);
template Tensor from_vector(const std::vector<int64_t>&, Shape, Device);
template Tensor from_vector(const std::vector<int32_t>&, Shape, Device);
template Tensor from_vector(const std::vector<uint8_t>&, Shape, Device);
template Tensor from_vector(const std::vector<bool>&, Shape, Device);

Tensor tensor(std::initializer_list<double> values, Shape shape, DType dtype) {
    return from_vector(std::vector<double>(values), std::move(shape)).to(dtype);
}

Tensor from_blob(void* data, const Shape& shape, DType dtype) {
    auto impl = std::make_shared<TensorImpl>();
    size_t nbytes = size_t(shape_numel(shape)) * itemsize(dtype);
    impl->storage = std::make_shared<Storage>(data, nbytes, Device::cpu(), [] {});
    impl->shape = shape;
    impl->strides = contiguous_strides(shape);
    impl->dtype = dtype;
    return Tensor(std::move(impl));
}

// ---- kernel views ----

StridedView strided(const Tensor& t, const char* op) {
    LUMEN_CHECK(t.ndim() <= kMaxDims, op, "supports at most ", kMaxDims, " dims, got shape ",
                t.shape());
    StridedView view;
    view.data = t.data_ptr();
    view.dtype = t.dtype();
    view.ndim = int(t.ndim());
    for (int i = 0; i < view.ndim; ++i) {
        view.shape[i] = t.shape()[i];
        view.strides[i] = t.strides()[i];
    }
    return view;
}

StridedView strided_as(const Tensor& t, const Shape& shape, const char* op) {
    LUMEN_CHECK(int64_t(shape.size()) <= kMaxDims, op, "supports at most ", kMaxDims,
                " dims, got shape ", shape);
    LUMEN_ASSERT(shape.size() >= size_t(t.ndim()));
    StridedView view;
    view.data = t.data_ptr();
    view.dtype = t.dtype();
    view.ndim = int(shape.size());
    int lead = view.ndim - int(t.ndim());
    for (int i = 0; i < view.ndim; ++i) {
        view.shape[i] = shape[i];
        bool stretched = i < lead || t.shape()[i - lead] != shape[i];
        view.strides[i] = stretched ? 0 : t.strides()[i - lead];
    }
    return view;
}

void check_same_device(const char* op, std::initializer_list<Tensor> tensors) {
    const Tensor* first = nullptr;
    bool same = true;
    for (const Tensor& t : tensors) {
        if (!t.defined()) continue;
        if (first == nullptr)
            first = &t;
        else
            same = same && t.device() == first->device();
    }
    if (same) return;
    std::ostringstream list;
    for (const Tensor& t : tensors) {
        if (!t.defined()) continue;
        if (&t != first) list << ", ";
        list << t.device() << " " << t.shape();
    }
    LUMEN_FAIL(op, "operands are on different devices: ", list.str());
}

}  // namespace lumen
