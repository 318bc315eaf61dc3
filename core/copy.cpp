// Copies and conversions: the strided CPU copy kernel (any dtype to any dtype, broadcasting
// the source), fill, and the differentiable contiguous()/clone()/to() built on them.
// Host<->device transfers go through core/cuda when built with CUDA.
#include <cstring>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/dispatch.h"
#include "core/strided.h"
#include "core/tensor.h"

namespace lumen {

namespace cuda {
// core/cuda/runtime.cu: fill a contiguous device buffer of `count` elements of `dtype`.
void fill(void* data, DType dtype, int64_t count, double value);
}  // namespace cuda

namespace {

void cpu_copy(const StridedView& dst_in, const StridedView& src_in) {
    StridedView views[2] = {dst_in, src_in};
    coalesce_dims(views, 2);
    dispatch_all(dst_in.dtype, "copy_", [&]<typename To>() {
        dispatch_all(src_in.dtype, "copy_", [&]<typename From>() {
            To* dst = views[0].ptr<To>();
            const From* src = views[1].ptr<From>();
            for_each_row(views, [&](const int64_t* offsets, int64_t n, const int64_t* steps) {
                To* d = dst + offsets[0];
                const From* s = src + offsets[1];
                if (steps[0] == 1 && steps[1] == 1) {
                    if constexpr (std::is_same_v<To, From>) {
                        std::memcpy(d, s, size_t(n) * sizeof(To));
                    } else {
                        for (int64_t i = 0; i < n; ++i) d[i] = convert<To>(s[i]);
                    }
                } else {
                    for (int64_t i = 0; i < n; ++i) d[i * steps[0]] = convert<To>(s[i * steps[1]]);
                }
            });
        });
    });
}

void check_not_grad_leaf(const Tensor& t, const char* op) {
    LUMEN_CHECK(!(grad_enabled() && t.requires_grad()), op, "in-place operation on a tensor that "
                "requires grad (shape ", t.shape(), "); do it under NoGradGuard or on detach()");
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src) {
    check_not_grad_leaf(*this, "copy_");
    LUMEN_CHECK(broadcast_shapes(src.shape(), shape(), "copy_") == shape(), "copy_",
                "source of shape ", src.shape(), " cannot broadcast to destination shape ", shape());
    storage()->bump_version();
    if (numel() == 0) return *this;
    if (is_cpu() && src.is_cpu()) {
        cpu_copy(strided(*this, "copy_"), strided_as(src, shape(), "copy_"));
        return *this;
    }
    // Device transfers: stage through a contiguous tensor of the destination dtype.
    bool plain = is_contiguous() && src.shape() == shape() && src.dtype() == dtype();
    if (plain && src.is_contiguous()) {
        cuda::memcpy(data_ptr(), device(), src.data_ptr(), src.device(), size_t(numel()) * element_size());
        return *this;
    }
    LUMEN_CHECK(src.is_cpu() || is_cpu(), "copy_", "strided or converting copies between CUDA "
                "tensors need the CUDA copy kernel (issue #4); got shapes ", src.shape(), " -> ",
                shape(), ", dtypes ", src.dtype(), " -> ", dtype());
    if (src.is_cpu()) {
        Tensor staged = empty(shape(), dtype());
        staged.copy_(src);
        return copy_(staged);
    }
    Tensor host = src.contiguous().cpu();
    return copy_(host);
}

Tensor& Tensor::fill_(double value) {
    check_not_grad_leaf(*this, "fill_");
    storage()->bump_version();
    if (numel() == 0) return *this;
    if (is_cuda()) {
        LUMEN_CHECK(is_contiguous(), "fill_", "filling a non-contiguous CUDA tensor needs the CUDA "
                    "elementwise kernels (issue #4); got strides ", strides());
        LUMEN_ON_CUDA("fill_", cuda::fill(data_ptr(), dtype(), numel(), value));
        return *this;
    }
    StridedView views[1] = {strided(*this, "fill_")};
    coalesce_dims(views, 1);
    dispatch_all(dtype(), "fill_", [&]<typename T>() {
        T typed = convert<T>(value);
        T* data = views[0].ptr<T>();
        for_each_row(views, [&](const int64_t* offsets, int64_t n, const int64_t* steps) {
            for (int64_t i = 0; i < n; ++i) data[offsets[0] + i * steps[0]] = typed;
        });
    });
    return *this;
}

namespace {
// A fresh contiguous copy recorded under `op`; d copy(x) / dx = identity.
Tensor copy_of(const Tensor& x, const char* op) {
    Tensor out = empty(x.shape(), x.dtype(), x.device());
    {
        NoGradGuard no_grad;
        out.copy_(x);
    }
    record_backward(op, {x}, out, [](const Tensor& grad_out) {
        return std::vector<Tensor>{grad_out};
    });
    return out;
}
}  // namespace

Tensor Tensor::clone() const { return copy_of(*this, "clone"); }

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : copy_of(*this, "contiguous"); }

Tensor Tensor::to(DType target) const {
    if (target == dtype()) return *this;
    Tensor out = empty(shape(), target, device());
    {
        NoGradGuard no_grad;
        out.copy_(*this);
    }
    if (is_floating(target)) {
        DType source = dtype();
        // d to(x) / dx = identity, cast back to the input's dtype
        record_backward("to", {*this}, out, [source](const Tensor& grad_out) {
            return std::vector<Tensor>{grad_out.to(source)};
        });
    }
    return out;
}

Tensor Tensor::to(Device target) const {
    if (target == device()) return *this;
    Tensor out = empty(shape(), dtype(), target);
    {
        NoGradGuard no_grad;
        out.copy_(*this);
    }
    Device source = device();
    // d to(x) / dx = identity, moved back to the input's device
    record_backward("to", {*this}, out, [source](const Tensor& grad_out) {
        return std::vector<Tensor>{grad_out.to(source)};
    });
    return out;
}

}  // namespace lumen
