// The view methods of Tensor (no data copied: a new TensorImpl over the same storage with
// other shape/strides/offset) and cat/stack/split/chunk. Each view records a node whose
// backward maps the gradient back to the input's shape.
#include "ops/shape.h"

#include <algorithm>
#include <numeric>

#include "core/autograd.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace lumen {

namespace {

Tensor make_view(const Tensor& x, Shape shape, Shape strides, int64_t offset) {
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = x.storage();
    impl->shape = std::move(shape);
    impl->strides = std::move(strides);
    impl->offset = offset;
    impl->dtype = x.dtype();
    return Tensor(std::move(impl));
}

// Replaces one -1 by the size that makes the element count match; checks the count.
Shape infer_shape(const Shape& requested, int64_t numel, const char* op) {
    Shape shape = requested;
    int64_t known = 1, infer_at = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == -1) {
            LUMEN_CHECK(infer_at < 0, op, "only one dim can be -1, got shape ", requested);
            infer_at = int64_t(i);
        } else {
            LUMEN_CHECK(shape[i] >= 0, op, "invalid size ", shape[i], " in shape ", requested);
            known *= shape[i];
        }
    }
    if (infer_at >= 0) {
        LUMEN_CHECK(known != 0 && numel % known == 0, op, "shape ", requested,
                    " is invalid for input of size ", numel);
        shape[size_t(infer_at)] = numel / known;
    }
    LUMEN_CHECK(shape_numel(shape) == numel, op, "shape ", requested, " is invalid for input of size ",
                numel);
    return shape;
}

// Strides that view `old_shape`/`old_strides` as `new_shape` without copying, or false.
// Walks groups of old dims that are contiguous among themselves (as PyTorch's computeStride).
bool view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape,
                  Shape& new_strides) {
    new_strides.assign(new_shape.size(), 0);
    if (shape_numel(old_shape) == 0 || old_shape.empty()) {
        // empty and 0-d tensors have no layout to respect
        new_strides = contiguous_strides(new_shape);
        return true;
    }
    int64_t view_d = int64_t(new_shape.size()) - 1;
    int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
    int64_t tensor_numel = 1, view_numel = 1;
    for (int64_t d = int64_t(old_shape.size()) - 1; d >= 0; --d) {
        tensor_numel *= old_shape[d];
        bool chunk_ends = d == 0 || (old_shape[d - 1] != 1 &&
                                     old_strides[d - 1] != tensor_numel * chunk_base_stride);
        if (!chunk_ends) continue;
        while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
            new_strides[view_d] = view_numel * chunk_base_stride;
            view_numel *= new_shape[view_d];
            --view_d;
        }
        if (view_numel != tensor_numel) return false;
        if (d > 0) {
            chunk_base_stride = old_strides[d - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    return view_d == -1;
}

std::vector<Tensor> one(const Tensor& t) { return {t}; }

}  // namespace

Tensor Tensor::view(const Shape& requested) const {
    Shape shape = infer_shape(requested, numel(), "view");
    Shape strides;
    LUMEN_CHECK(view_strides(this->shape(), this->strides(), shape, strides), "view",
                "cannot view a tensor of shape ", this->shape(), " and strides ", this->strides(),
                " as shape ", requested, " without a copy; use reshape()");
    Tensor out = make_view(*this, shape, strides, storage_offset());
    Shape input_shape = this->shape();
    // d view(x) / dx: reshape the gradient back
    record_backward("view", {*this}, out, [input_shape](const Tensor& grad_out) {
        return one(grad_out.reshape(input_shape));
    });
    return out;
}

Tensor Tensor::reshape(const Shape& requested) const {
    Shape shape = infer_shape(requested, numel(), "reshape");
    Shape strides;
    if (view_strides(this->shape(), this->strides(), shape, strides)) return view(shape);
    return contiguous().view(shape);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
    LUMEN_CHECK(int64_t(dims.size()) == ndim(), "permute", "got ", dims.size(),
                " dims ", dims, " for a tensor with ", ndim(), " dims (shape ", shape(), ")");
    std::vector<int64_t> order(dims.size());
    std::vector<bool> used(dims.size(), false);
    Shape new_shape(dims.size()), new_strides(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
        int d = wrap_dim(dims[i], ndim(), "permute");
        LUMEN_CHECK(!used[d], "permute", "dim ", d, " appears twice in ", dims);
        used[d] = true;
        order[i] = d;
        new_shape[i] = shape()[d];
        new_strides[i] = strides()[d];
    }
    Tensor out = make_view(*this, new_shape, new_strides, storage_offset());
    std::vector<int64_t> inverse(order.size());
    for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = int64_t(i);
    // d permute(x) / dx: permute the gradient back with the inverse order
    record_backward("permute", {*this}, out, [inverse](const Tensor& grad_out) {
        return one(grad_out.permute(inverse));
    });
    return out;
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
    std::vector<int64_t> order(static_cast<size_t>(ndim()));
    std::iota(order.begin(), order.end(), 0);
    if (ndim() == 0) return permute({});
    std::swap(order[wrap_dim(dim0, ndim(), "transpose")], order[wrap_dim(dim1, ndim(), "transpose")]);
    return permute(order);
}

Tensor Tensor::t() const {
    LUMEN_CHECK(ndim() <= 2, "t", "expects a tensor with at most 2 dims, got shape ", shape());
    return ndim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
    int d = wrap_dim(dim, ndim(), "slice");
    LUMEN_CHECK(step > 0, "slice", "step must be positive, got ", step);
    int64_t size = shape()[d];
    // Python slicing: negative bounds count from the end, then clamp to [0, size].
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = std::clamp<int64_t>(start, 0, size);
    end = std::clamp<int64_t>(end, start, size);
    Shape new_shape = shape(), new_strides = strides();
    new_shape[d] = (end - start + step - 1) / step;
    new_strides[d] *= step;
    Tensor out = make_view(*this, new_shape, new_strides, storage_offset() + start * strides()[d]);
    Shape input_shape = shape();
    DType dtype = this->dtype();
    // d slice(x) / dx: the gradient lands in the sliced positions of a zero tensor, or is
    // added there when x already has a gradient (the other chunks of a split)
    auto node = record_backward("slice", {*this}, out, [=](const Tensor& grad_out) {
        Tensor grad = zeros(input_shape, dtype, grad_out.device());
        grad.slice(d, start, end, step).copy_(grad_out);
        return one(grad);
    });
    if (node)
        node->set_accumulate([=](const Tensor& input_grad, const Tensor& grad_out) {
            add_into(input_grad.slice(d, start, end, step), grad_out);
        });
    return out;
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
    int d = wrap_dim(dim, ndim(), "narrow");
    int64_t size = shape()[d];
    if (start < 0) start += size;
    LUMEN_CHECK(start >= 0 && length >= 0 && start + length <= size, "narrow", "start ", start,
                " + length ", length, " exceeds size ", size, " of dim ", d, " (shape ", shape(), ")");
    return slice(d, start, start + length, 1);
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
    int d = wrap_dim(dim, ndim(), "select");
    int64_t size = shape()[d];
    LUMEN_CHECK(index >= -size && index < size, "select", "index ", index,
                " is out of range for dim ", d, " of size ", size);
    if (index < 0) index += size;
    return narrow(d, index, 1).squeeze(d);
}

Tensor Tensor::expand(const Shape& requested) const {
    LUMEN_CHECK(requested.size() >= size_t(ndim()), "expand", "cannot expand shape ", shape(),
                " to fewer dims ", requested);
    size_t lead = requested.size() - size_t(ndim());
    Shape new_shape(requested.size()), new_strides(requested.size());
    for (size_t i = 0; i < requested.size(); ++i) {
        bool existing = i >= lead;
        int64_t old_size = existing ? shape()[i - lead] : 1;
        int64_t size = requested[i] == -1 ? old_size : requested[i];
        LUMEN_CHECK(!(requested[i] == -1 && !existing), "expand", "-1 is not allowed for the new "
                    "leading dim ", i, " in ", requested);
        LUMEN_CHECK(old_size == size || old_size == 1, "expand", "cannot expand shape ", shape(),
                    " to ", requested, " (dim ", i, ": ", old_size, " -> ", size, ")");
        new_shape[i] = size;
        new_strides[i] = existing && old_size == size ? strides()[i - lead] : 0;
    }
    Tensor out = make_view(*this, new_shape, new_strides, storage_offset());
    Shape input_shape = shape();
    // d expand(x) / dx: sum the gradient over the broadcast dims
    record_backward("expand", {*this}, out, [input_shape](const Tensor& grad_out) {
        return one(sum_to(grad_out, input_shape));
    });
    return out;
}

Tensor Tensor::squeeze() const {
    Shape new_shape;
    for (int64_t s : shape())
        if (s != 1) new_shape.push_back(s);
    return new_shape.size() == size_t(ndim()) ? *this : reshape(new_shape);
}

Tensor Tensor::squeeze(int64_t dim) const {
    if (ndim() == 0) return *this;
    int d = wrap_dim(dim, ndim(), "squeeze");
    if (shape()[d] != 1) return *this;
    Shape new_shape = shape();
    new_shape.erase(new_shape.begin() + d);
    return view(new_shape);
}

Tensor Tensor::unsqueeze(int64_t dim) const {
    int d = wrap_dim(dim, ndim() + 1, "unsqueeze");
    Shape new_shape = shape();
    new_shape.insert(new_shape.begin() + d, 1);
    return view(new_shape);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
    if (ndim() == 0) return reshape({1});
    int start = wrap_dim(start_dim, ndim(), "flatten"), end = wrap_dim(end_dim, ndim(), "flatten");
    LUMEN_CHECK(start <= end, "flatten", "start_dim ", start_dim, " comes after end_dim ", end_dim);
    Shape new_shape(shape().begin(), shape().begin() + start);
    int64_t merged = 1;
    for (int d = start; d <= end; ++d) merged *= shape()[d];
    new_shape.push_back(merged);
    new_shape.insert(new_shape.end(), shape().begin() + end + 1, shape().end());
    return reshape(new_shape);
}

// ---- cat / stack / split / chunk ----

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
    LUMEN_CHECK(!tensors.empty(), "cat", "needs at least one tensor");
    const Tensor& first = tensors[0];
    int d = wrap_dim(dim, first.ndim(), "cat");
    Shape out_shape = first.shape();
    int64_t total = 0;
    DType dtype = first.dtype();
    for (size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        LUMEN_CHECK(t.ndim() == first.ndim(), "cat", "tensor ", i, " has shape ", t.shape(),
                    " but tensor 0 has shape ", first.shape(), " (dims differ)");
        LUMEN_CHECK(t.device() == first.device(), "cat", "tensor ", i, " is on ", t.device(),
                    " but tensor 0 is on ", first.device());
        for (int64_t k = 0; k < t.ndim(); ++k)
            LUMEN_CHECK(k == d || t.shape()[k] == out_shape[k], "cat", "tensor ", i, " has shape ",
                        t.shape(), " but tensor 0 has shape ", first.shape(),
                        "; sizes must match except in dim ", d);
        dtype = promote_types(dtype, t.dtype());
        total += t.shape()[d];
    }
    out_shape[d] = total;
    Tensor out = empty(out_shape, dtype, first.device());
    std::vector<int64_t> sizes;
    {
        NoGradGuard no_grad;
        int64_t at = 0;
        for (const Tensor& t : tensors) {
            out.narrow(d, at, t.shape()[d]).copy_(t);
            at += t.shape()[d];
            sizes.push_back(t.shape()[d]);
        }
    }
    std::vector<DType> dtypes;
    for (const Tensor& t : tensors) dtypes.push_back(t.dtype());
    // d cat / d input_i: the slice of the gradient that input occupied
    record_backward("cat", tensors, out, [d, sizes, dtypes](const Tensor& grad_out) {
        std::vector<Tensor> grads;
        int64_t at = 0;
        for (size_t i = 0; i < sizes.size(); ++i) {
            grads.push_back(grad_out.narrow(d, at, sizes[i]).to(dtypes[i]));
            at += sizes[i];
        }
        return grads;
    });
    return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
    LUMEN_CHECK(!tensors.empty(), "stack", "needs at least one tensor");
    int d = wrap_dim(dim, tensors[0].ndim() + 1, "stack");
    std::vector<Tensor> expanded;
    for (size_t i = 0; i < tensors.size(); ++i) {
        LUMEN_CHECK(tensors[i].shape() == tensors[0].shape(), "stack", "tensor ", i, " has shape ",
                    tensors[i].shape(), " but tensor 0 has shape ", tensors[0].shape());
        expanded.push_back(tensors[i].unsqueeze(d));
    }
    return cat(expanded, d);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
    int d = wrap_dim(dim, x.ndim(), "split");
    int64_t total = 0;
    for (int64_t s : sizes) {
        LUMEN_CHECK(s >= 0, "split", "negative size in ", sizes);
        total += s;
    }
    LUMEN_CHECK(total == x.shape()[d], "split", "sizes ", sizes, " add up to ", total,
                " but dim ", d, " has size ", x.shape()[d], " (shape ", x.shape(), ")");
    std::vector<Tensor> pieces;
    int64_t at = 0;
    for (int64_t s : sizes) {
        pieces.push_back(x.narrow(d, at, s));
        at += s;
    }
    return pieces;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
    int d = wrap_dim(dim, x.ndim(), "split");
    LUMEN_CHECK(split_size > 0, "split", "split_size must be positive, got ", split_size);
    std::vector<int64_t> sizes;
    for (int64_t at = 0; at < x.shape()[d]; at += split_size)
        sizes.push_back(std::min(split_size, x.shape()[d] - at));
    if (sizes.empty()) sizes.push_back(0);
    return split(x, sizes, d);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
    LUMEN_CHECK(chunks > 0, "chunk", "chunks must be positive, got ", chunks);
    int d = wrap_dim(dim, x.ndim(), "chunk");
    int64_t size = x.shape()[d];
    return split(x, std::max<int64_t>((size + chunks - 1) / chunks, 1), d);
}

}  // namespace lumen
