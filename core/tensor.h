// Tensor: a cheap, shared handle to a TensorImpl (storage, shape, strides in elements, offset,
// dtype, autograd metadata). Copying a Tensor copies the handle, never the data.
// Metadata, conversion and copying live in core/; the math is free functions in ops/ (PyTorch
// names), and the view methods below are defined in ops/shape.cpp because they record autograd
// nodes whose backward needs ops (expand's backward is a sum).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "core/storage.h"

namespace lumen {

class Node;

struct TensorImpl {
    std::shared_ptr<Storage> storage;
    Shape shape;
    Shape strides;       // in elements; may be 0 (expand) but never negative
    int64_t offset = 0;  // in elements from storage->data()
    DType dtype = kDefaultFloat;

    // Autograd: a leaf has requires_grad and no grad_fn; an op output has a grad_fn.
    bool requires_grad = false;
    std::shared_ptr<TensorImpl> grad;
    std::shared_ptr<Node> grad_fn;
};

class Tensor {
  public:
    Tensor() = default;  // undefined: defined() is false, every accessor throws
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

    bool defined() const { return impl_ != nullptr; }
    const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

    // ---- metadata ----
    const Shape& shape() const { return checked()->shape; }
    const Shape& strides() const { return checked()->strides; }
    int64_t size(int64_t dim) const;  // negative dims count from the end
    int64_t stride(int64_t dim) const;
    int64_t ndim() const { return int64_t(shape().size()); }
    int64_t dim() const { return ndim(); }
    int64_t numel() const { return shape_numel(shape()); }
    int64_t storage_offset() const { return checked()->offset; }
    DType dtype() const { return checked()->dtype; }
    Device device() const { return checked()->storage->device(); }
    bool is_cpu() const { return device().is_cpu(); }
    bool is_cuda() const { return device().is_cuda(); }
    bool is_floating_point() const { return is_floating(dtype()); }
    bool is_contiguous() const;
    size_t element_size() const { return itemsize(dtype()); }
    const std::shared_ptr<Storage>& storage() const { return checked()->storage; }

    // Pointer to the first element (storage data + offset). The typed form checks the dtype.
    void* data_ptr() const;
    template <typename T>
    T* data_ptr() const {
        LUMEN_CHECK(dtype_of<T>() == dtype(), "data_ptr", "requested ", dtype_name(dtype_of<T>()),
                    " but the tensor is ", dtype());
        return static_cast<T*>(data_ptr());
    }

    // ---- element access (copies from the device if needed) ----
    // The single value of a one-element tensor, converted to T.
    template <typename T>
    T item() const;
    // The element at a full index (negative entries count from the end), converted to T.
    template <typename T>
    T at(std::initializer_list<int64_t> index) const;
    // All elements in row-major order, converted to T.
    template <typename T>
    std::vector<T> to_vector() const;

    // ---- conversion and copies (differentiable) ----
    Tensor contiguous() const;  // this tensor if already contiguous, else a row-major copy
    Tensor clone() const;       // always a fresh contiguous copy
    Tensor to(DType dtype) const;
    // non_blocking, as in PyTorch: an upload from pinned memory, or a download (into freshly
    // pinned memory), is queued on the default stream and returns at once; kernels launched
    // later see the data, the host must call cuda_synchronize() before reading a download.
    // Other copies ignore the flag.
    Tensor to(Device device, bool non_blocking = false) const;
    Tensor cpu() const { return to(Device::cpu()); }
    // A contiguous copy in page-locked host memory (this tensor if already pinned); CPU only.
    Tensor pin_memory() const;
    bool is_pinned() const { return storage()->pinned(); }
    Tensor cuda(int index = 0) const { return to(Device::cuda(index)); }
    Tensor detach() const;  // shares storage, no autograd history
    // Makes this leaf use source's data (storage, shape, strides, offset, dtype) while staying
    // the same tensor, so every handle to it sees the change: PyTorch's `param.data = source`,
    // what Module::to and optimizers' device moves use. Keeps requires_grad (the new dtype must
    // then be floating); drops .grad() when its shape, dtype or device no longer match.
    // Throws [set_data] for a non-leaf tensor or an undefined source.
    void set_data(const Tensor& source) const;

    // ---- in-place (not recorded by autograd; they bump the storage version) ----
    Tensor& copy_(const Tensor& src);  // src broadcasts to this shape, any dtype/device
    Tensor& fill_(double value);
    Tensor& zero_() { return fill_(0.0); }

    // ---- views (no copy; defined in ops/shape.cpp, differentiable) ----
    Tensor view(const Shape& shape) const;     // -1 infers one size; needs compatible strides
    Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
    Tensor permute(const std::vector<int64_t>& dims) const;
    Tensor transpose(int64_t dim0, int64_t dim1) const;
    Tensor t() const;  // 2-D transpose
    Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
    // Python's x[start:end:step] along dim (clamped like Python; step > 0).
    Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
    Tensor select(int64_t dim, int64_t index) const;  // removes dim
    Tensor expand(const Shape& shape) const;          // -1 keeps a size
    Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
    Tensor squeeze() const;
    Tensor squeeze(int64_t dim) const;
    Tensor unsqueeze(int64_t dim) const;
    Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;

    // ---- autograd ----
    bool requires_grad() const { return checked()->requires_grad; }
    // Marks a leaf as needing gradients (floating dtypes only).
    Tensor& requires_grad_(bool enabled = true);
    bool is_leaf() const { return checked()->grad_fn == nullptr; }
    const std::shared_ptr<Node>& grad_fn() const { return checked()->grad_fn; }
    Tensor grad() const;  // undefined until a backward reaches this leaf
    void set_grad(const Tensor& grad) const;
    // Back-propagates from this tensor. Without `grad` the tensor must hold one element
    // (the gradient is 1). Frees the graph's saved tensors unless retain_graph.
    void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const;
    int64_t version() const { return storage()->version(); }

    std::string str() const;  // PyTorch-like printout

  private:
    const std::shared_ptr<TensorImpl>& checked() const {
        if (!impl_) LUMEN_FAIL("tensor", "used an undefined tensor (default-constructed Tensor)");
        return impl_;
    }
    std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& tensor);

// Throws [op] unless every defined tensor of `tensors` lives on one device; the message lists
// each tensor's device and shape ("operands are on different devices: cpu [2, 3], cuda:0 [3]").
void check_same_device(const char* op, std::initializer_list<Tensor> tensors);

// ---- creation that needs no kernels beyond fill/copy (more in ops/creation.h) ----
Tensor empty(const Shape& shape, DType dtype = kDefaultFloat, Device device = Device::cpu());
Tensor empty_like(const Tensor& like);
Tensor empty_like(const Tensor& like, DType dtype);
Tensor full(const Shape& shape, double value, DType dtype = kDefaultFloat,
            Device device = Device::cpu());
Tensor zeros(const Shape& shape, DType dtype = kDefaultFloat, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = kDefaultFloat, Device device = Device::cpu());
Tensor zeros_like(const Tensor& like);
Tensor ones_like(const Tensor& like);
Tensor full_like(const Tensor& like, double value);
Tensor scalar_tensor(double value, DType dtype = kDefaultFloat, Device device = Device::cpu());

// A tensor holding a copy of `values` (row-major) with `shape` (default: 1-D). The element
// type picks the dtype: float -> float32, double -> float64, int64_t -> int64, ...
template <typename T>
Tensor from_vector(const std::vector<T>& values, Shape shape = {}, Device device = Device::cpu());
// Convenience: a float tensor from a braced list, tensor({1, 2, 3}, {3}).
Tensor tensor(std::initializer_list<double> values, Shape shape = {}, DType dtype = kDefaultFloat);
// A tensor that views memory the caller owns (CPU); the caller keeps it alive.
Tensor from_blob(void* data, const Shape& shape, DType dtype);

// Reads element i (row-major over the tensor's shape) of a CPU tensor as double.
double read_element(const Tensor& cpu_tensor, int64_t linear_index);

}  // namespace lumen
