// The layout family: roll (block copies into a fresh tensor), flip, tril/triu and cumsum
// (kernels in ops/cpu/layout.cpp and ops/cuda/layout.cu, backward rules here), and the
// compositions repeat, causal_mask, window_partition and window_reverse, whose gradients come
// from the view ops they are built of.
#include "ops/layout.h"

#include <limits>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/layout_kernels.h"

namespace lumen {

namespace {

Tensor plain_contiguous(const Tensor& t) {
    NoGradGuard no_grad;
    return t.contiguous();
}

// out = x rolled by shift[d] in [0, size) along every dim: each rolled dim splits into the
// part that moves right (x[0, n - s) -> out[s, n)) and the part that wraps around
// (x[n - s, n) -> out[0, s)), so 2^k strided block copies fill out exactly once.
void roll_into(const Tensor& x, const Tensor& out, const std::vector<int64_t>& shift) {
    NoGradGuard no_grad;
    std::vector<int64_t> rolled;
    for (int64_t d = 0; d < x.ndim(); ++d)
        if (shift[size_t(d)] != 0) rolled.push_back(d);
    for (uint32_t mask = 0; mask < (1u << rolled.size()); ++mask) {
        Tensor source = x, target = out;
        for (size_t k = 0; k < rolled.size(); ++k) {
            int64_t d = rolled[k], n = x.size(d), s = shift[size_t(d)];
            bool wraps = mask >> k & 1u;
            source = source.narrow(d, wraps ? n - s : 0, wraps ? s : n - s);
            target = target.narrow(d, wraps ? 0 : s, wraps ? s : n - s);
        }
        target.copy_(source);
    }
}

}  // namespace

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
    const char* op = "roll";
    if (dims.empty()) {
        LUMEN_CHECK(shifts.size() == 1, op, "without dims, shifts must hold one value, got ",
                    shifts);
        return roll(x.reshape({-1}), shifts, {0}).reshape(x.shape());
    }
    LUMEN_CHECK(shifts.size() == dims.size(), op, "shifts and dims must have the same length, got ",
                "shifts ", shifts, " and dims ", dims);
    std::vector<int64_t> shift(size_t(x.ndim()), 0);
    for (size_t k = 0; k < dims.size(); ++k) {
        int d = wrap_dim(dims[k], x.ndim(), op);
        int64_t n = x.ndim() ? x.size(d) : 1;
        if (n > 0 && x.ndim() > 0) shift[size_t(d)] = ((shift[size_t(d)] + shifts[k]) % n + n) % n;
    }
    if (x.ndim() == 0) return x.clone();
    Tensor out = empty(x.shape(), x.dtype(), x.device());
    if (out.numel() > 0) roll_into(x, out, shift);
    // d out / dx: the gradient rolled back by -shifts
    record_backward(op, {x}, out, [shifts, dims](const Tensor& g) {
        std::vector<int64_t> back(shifts.size());
        for (size_t k = 0; k < shifts.size(); ++k) back[k] = -shifts[k];
        return std::vector<Tensor>{roll(g, back, dims)};
    });
    return out;
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
    const char* op = "flip";
    profiler::Scope profile(profiler::Kind::op, op, x);
    uint32_t flipped = 0;
    for (int64_t dim : dims) {
        int d = wrap_dim(dim, x.ndim(), op);
        LUMEN_CHECK(!(flipped >> d & 1u), op, "dim ", d, " appears more than once in dims ", dims);
        if (x.ndim() > 0) flipped |= 1u << d;
    }
    Tensor out = empty(x.shape(), x.dtype(), x.device());
    if (out.numel() > 0) {
        LUMEN_DISPATCH(x, flip_forward, strided(x, op), strided(out, op), flipped);
    }
    // d out / dx: the gradient flipped back
    record_backward(op, {x}, out,
                    [dims](const Tensor& g) { return std::vector<Tensor>{flip(g, dims)}; });
    return out;
}

Tensor repeat(const Tensor& x, const std::vector<int64_t>& sizes) {
    const char* op = "repeat";
    LUMEN_CHECK(int64_t(sizes.size()) >= x.ndim(), op, "sizes ", sizes, " has fewer entries than ",
                "the input has dims (shape ", x.shape(), ")");
    size_t ndim = sizes.size();
    Shape padded(ndim - size_t(x.ndim()), 1);
    padded.insert(padded.end(), x.shape().begin(), x.shape().end());
    // (.., s_k, ..) -> (.., 1, s_k, ..) -> expand to (.., r_k, s_k, ..) -> (.., r_k * s_k, ..)
    Shape split, expanded, merged;
    for (size_t k = 0; k < ndim; ++k) {
        LUMEN_CHECK(sizes[k] >= 0, op, "sizes must be non-negative, got ", sizes);
        split.insert(split.end(), {1, padded[k]});
        expanded.insert(expanded.end(), {sizes[k], padded[k]});
        merged.push_back(sizes[k] * padded[k]);
    }
    LUMEN_CHECK(split.size() <= size_t(kMaxDims), op, "supports at most ", kMaxDims / 2,
                " dims, got sizes ", sizes);
    return x.reshape(split).expand(expanded).reshape(merged);
}

namespace {

Tensor triangle(const Tensor& x, int64_t diagonal, bool lower) {
    const char* op = lower ? "tril" : "triu";
    profiler::Scope profile(profiler::Kind::op, op, x);
    LUMEN_CHECK(x.ndim() >= 2, op, "expects at least 2 dims (.., rows, cols), got shape ",
                x.shape());
    Tensor out = empty(x.shape(), x.dtype(), x.device());
    Tensor input = plain_contiguous(x);
    StridedView xv = strided(input, op), ov = strided(out, op);
    LUMEN_DISPATCH(x, tril_forward, xv, ov, diagonal, lower);
    // d out / dx: 1 inside the kept triangle, 0 outside, so the same triangle of the gradient
    record_backward(op, {x}, out, [diagonal, lower](const Tensor& g) {
        return std::vector<Tensor>{triangle(g, diagonal, lower)};
    });
    return out;
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true); }

Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false); }

Tensor causal_mask(int64_t size, DType dtype, Device device) {
    LUMEN_CHECK(is_floating(dtype), "causal_mask",
                "dtype must be floating (the mask holds -inf), "
                "got ",
                dtype);
    LUMEN_CHECK(size >= 0, "causal_mask", "size must be non-negative, got ", size);
    Tensor ninf = full({size, size}, -std::numeric_limits<double>::infinity(), dtype, device);
    return triu(ninf, 1);
}

Tensor window_partition(const Tensor& x, const std::vector<int64_t>& window_size) {
    const char* op = "window_partition";
    int64_t k = int64_t(window_size.size());
    LUMEN_CHECK(k == 2 || k == 3, op, "window_size must have 2 or 3 entries, got ", window_size);
    LUMEN_CHECK(x.ndim() == k + 2, op, "expects x (B, ", k == 2 ? "H, W" : "D, H, W",
                ", C) for window_size ", window_size, ", got shape ", x.shape());
    // (B, S_0, .., C) -> (B, S_0/w_0, w_0, .., C) -> (B, grid.., window.., C)
    Shape split = {x.size(0)}, windows = {-1};
    std::vector<int64_t> order = {0};
    for (int64_t d = 0; d < k; ++d) {
        int64_t size = x.size(d + 1), w = window_size[size_t(d)];
        LUMEN_CHECK(w > 0 && size % w == 0, op, "spatial size ", size, " (dim ", d + 1,
                    ") is not a multiple of window size ", w, " (x shape ", x.shape(), ")");
        split.insert(split.end(), {size / w, w});
        windows.push_back(w);
        order.push_back(1 + 2 * d);
    }
    for (int64_t d = 0; d < k; ++d) order.push_back(2 + 2 * d);
    order.push_back(2 * k + 1);
    split.push_back(x.size(-1));
    windows.push_back(x.size(-1));
    return x.reshape(split).permute(order).reshape(windows);
}

Tensor window_reverse(const Tensor& windows, const std::vector<int64_t>& window_size,
                      const Shape& dims) {
    const char* op = "window_reverse";
    int64_t k = int64_t(window_size.size());
    LUMEN_CHECK(k == 2 || k == 3, op, "window_size must have 2 or 3 entries, got ", window_size);
    LUMEN_CHECK(int64_t(dims.size()) == k + 1, op, "dims must be (B, ", k == 2 ? "H, W" : "D, H, W",
                ") for window_size ", window_size, ", got ", dims);
    LUMEN_CHECK(windows.ndim() >= 2, op, "expects windows (B*nW, .., C), got shape ",
                windows.shape());
    int64_t channels = windows.size(-1), count = dims[0];
    // (B*nW, window.., C) -> (B, grid.., window.., C) -> (B, grid_0, w_0, .., C) -> (B, S.., C)
    Shape split = {dims[0]}, out = {dims[0]};
    std::vector<int64_t> order = {0};
    for (int64_t d = 0; d < k; ++d) {
        int64_t size = dims[size_t(d + 1)], w = window_size[size_t(d)];
        LUMEN_CHECK(w > 0 && size % w == 0, op, "spatial size ", size, " is not a multiple of ",
                    "window size ", w, " (dims ", dims, ")");
        split.push_back(size / w);
        out.push_back(size);
        order.insert(order.end(), {1 + d, 1 + k + d});
        count *= size;
    }
    split.insert(split.end(), window_size.begin(), window_size.end());
    split.push_back(channels);
    out.push_back(channels);
    order.push_back(2 * k + 1);
    LUMEN_CHECK(windows.numel() == count * channels, op, "windows of shape ", windows.shape(),
                " do not hold dims ", dims, " with ", channels, " channels");
    return windows.reshape(split).permute(order).reshape(out);
}

namespace {

// The running sum along d (from the end when reverse) of a contiguous copy of x.
Tensor running_sum(const Tensor& x, int d, bool reverse, const char* op) {
    profiler::Scope profile(profiler::Kind::op, op, x);
    DType out_dtype = is_floating(x.dtype()) ? x.dtype() : DType::int64;
    Tensor out = empty(x.shape(), out_dtype, x.device());
    Tensor input = plain_contiguous(x);
    StridedView xv = strided(input, op), ov = strided(out, op);
    LUMEN_DISPATCH(x, cumsum_forward, xv, ov, d, reverse);
    return out;
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) {
    const char* op = "cumsum";
    int d = wrap_dim(dim, x.ndim(), op);
    LUMEN_CHECK(x.is_cuda() || (x.dtype() != DType::float16 && x.dtype() != DType::bfloat16), op,
                "not implemented for dtype ", x.dtype(),
                " on CPU (expected float32, float64 or "
                "an integer dtype)");
    Tensor out = running_sum(x, d, false, op);
    // dx_i = sum_{j >= i} grad_j: the running sum of the gradient taken from the end
    record_backward(op, {x}, out, [d](const Tensor& g) {
        return std::vector<Tensor>{running_sum(g, d, true, "cumsum")};
    });
    return out;
}

}  // namespace lumen
