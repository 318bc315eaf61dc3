// Copies and conversions: the strided CPU copy kernel (any dtype to any dtype, broadcasting
// the source), fill, and the differentiable contiguous()/clone()/to() built on them.
// Host<->device transfers and copies on a CUDA device go through core/cuda (the CUDA backend).
#include <cstring>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/dispatch.h"
#include "core/strided.h"
#include "core/tensor.h"

namespace lumen {

namespace cuda {
// core/cuda/runtime.cu: fill a contiguous device buffer of `count` elements of `dtype`.
LUMEN_CUDA_API void fill(void* data, DType dtype, int64_t count, double value);
// core/cuda/copy.cu: dst = src (converted, src broadcast to dst's shape), both on one device.
LUMEN_CUDA_API void copy_strided(const StridedView& dst, const StridedView& src);
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
    profiler::Scope profile(profiler::Kind::op, "copy_", src);
    check_not_grad_leaf(*this, "copy_");
    LUMEN_CHECK(broadcast_shapes(src.shape(), shape(), "copy_") == shape(), "copy_",
                "source of shape ", src.shape(), " cannot broadcast to destination shape ", shape());
    storage()->bump_version();
    if (numel() == 0) return *this;
    if (is_cpu() && src.is_cpu()) {
        cpu_copy(strided(*this, "copy_"), strided_as(src, shape(), "copy_"));
        return *this;
    }
    LUMEN_CHECK(!(is_cuda() && src.is_cuda()) || device() == src.device(), "copy_",
                "copies between CUDA devices (", src.device(), " -> ", device(),
                ") are not supported yet");
    // Same bytes in the same layout: one cudaMemcpy (host <-> device or device to device).
    size_t src_bytes = size_t(src.numel()) * src.element_size();
    bool plain = is_contiguous() && src.shape() == shape() && src.dtype() == dtype();
    if (plain && src.is_contiguous()) {
        cuda::memcpy(data_ptr(), device(), src.data_ptr(), src.device(), src_bytes);
        return *this;
    }
    if (is_cuda() && src.is_cuda()) {
        cuda::copy_strided(strided(*this, "copy_"), strided_as(src, shape(), "copy_"));
        return *this;
    }
    // Host <-> device otherwise: one transfer of contiguous bytes in the source's dtype; the
    // layout and dtype change on the device (uploads) or on the host (downloads).
    NoGradGuard no_grad;
    if (src.is_cpu()) {
        Tensor host = src.contiguous();
        Tensor uploaded = empty(src.shape(), src.dtype(), device());
        cuda::memcpy(uploaded.data_ptr(), device(), host.data_ptr(), Device::cpu(), src_bytes);
        return copy_(uploaded);
    }
    Tensor packed = src.contiguous();  // on the device
    Tensor host = empty(src.shape(), src.dtype());
    cuda::memcpy(host.data_ptr(), Device::cpu(), packed.data_ptr(), src.device(), src_bytes);
    return copy_(host);
}

Tensor& Tensor::fill_(double value) {
    check_not_grad_leaf(*this, "fill_");
    storage()->bump_version();
    if (numel() == 0) return *this;
    if (is_cuda()) {
        if (is_contiguous()) {
            cuda::fill(data_ptr(), dtype(), numel(), value);
        } else {  // fill a packed buffer, then scatter it into the strided layout
            Tensor packed = empty(shape(), dtype(), device());
            packed.fill_(value);
            NoGradGuard no_grad;
            copy_(packed);
        }
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

namespace {
// The same shape and dtype as `like`, contiguous, in pinned host memory.
Tensor empty_pinned(const Tensor& like) {
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = Storage::pinned_host(size_t(like.numel()) * like.element_size());
    impl->shape = like.shape();
    impl->strides = contiguous_strides(like.shape());
    impl->dtype = like.dtype();
    return Tensor(std::move(impl));
}
}  // namespace

Tensor Tensor::pin_memory() const {
    LUMEN_CHECK(is_cpu(), "pin_memory", "only CPU tensors can be pinned, got a tensor on ",
                device(), " of shape ", shape());
    if (is_pinned() && is_contiguous()) return *this;
    Tensor out = empty_pinned(*this);
    {
        NoGradGuard no_grad;
        out.copy_(*this);
    }
    record_backward("pin_memory", {*this}, out, [](const Tensor& grad_out) {
        return std::vector<Tensor>{grad_out};
    });
    return out;
}

Tensor Tensor::to(Device target, bool non_blocking) const {
    if (target == device()) return *this;
    // An asynchronous transfer needs contiguous bytes on both sides and pinned host memory.
    bool upload = is_cpu() && is_pinned() && is_contiguous();
    bool download = is_cuda() && target.is_cpu();
    Tensor out;
    if (non_blocking && (upload || download)) {
        Tensor source = download ? contiguous().detach() : detach();
        out = download ? empty_pinned(source) : empty(shape(), dtype(), target);
        if (numel() > 0) {
            out.storage()->bump_version();
            cuda::memcpy_async(out.data_ptr(), target, source.data_ptr(), device(),
                               size_t(numel()) * element_size());
        }
    } else {
        out = empty(shape(), dtype(), target);
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
