// The index family: argument checks as in PyTorch (index dtype and rank, shape rules, range),
// output allocation, the kernels (ops/cpu/index.cpp, ops/cuda/index.cu) and the backward rules,
// which are the
// ops' adjoint pairs: gather <-> scatter_add, index_select <-> index_add. repeat_interleave is
// built from expand/reshape or index_select, so its gradient comes from those.
#include "ops/index.h"

#include <vector>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/elementwise.h"
#include "ops/index_kernels.h"

namespace lumen {

namespace {

void check_index_dtype(const Tensor& index, const char* op, const char* what = "index") {
    LUMEN_CHECK(index.dtype() == DType::int64 || index.dtype() == DType::int32, op, what,
                " must be an int64 (or int32) tensor, got ", index.dtype(), " (shape ",
                index.shape(), ")");
}

[[noreturn]] void fail_range(const char* op, int64_t value, int64_t dim, int64_t size) {
    if (size == 0) LUMEN_FAIL(op, "index ", value, " is out of range: dim ", dim, " has size 0");
    LUMEN_FAIL(op, "index ", value, " is out of range for dim ", dim, " of size ", size,
               " (valid range [0, ", size - 1, "])");
}

// A contiguous copy without an autograd node (the op's own node maps gradients).
Tensor plain_contiguous(const Tensor& t) {
    NoGradGuard no_grad;
    return t.contiguous();
}

Tensor plain_clone(const Tensor& t) {
    NoGradGuard no_grad;
    Tensor out = empty(t.shape(), t.dtype(), t.device());
    out.copy_(t);
    return out;
}

// gather / scatter_add: index has x's rank, index.size(d) <= x.size(d) for d != dim.
void check_gather_shapes(const Tensor& x, int d, const Tensor& index, const char* op) {
    LUMEN_CHECK(index.ndim() == x.ndim(), op, "index must have the rank of the input: got index ",
                "shape ", index.shape(), " for input shape ", x.shape());
    for (int64_t k = 0; k < x.ndim(); ++k)
        LUMEN_CHECK(k == d || index.size(k) <= x.size(k), op, "index shape ", index.shape(),
                    " is larger than input shape ", x.shape(), " in dim ", k, " (only dim ", d,
                    " may differ)");
}

// 0-d tensors are treated as 1-element 1-D ones by the kernels.
Tensor at_least_1d(const Tensor& t) { return t.ndim() == 0 ? t.reshape({1}) : t; }

// The kernels that several ops call, on the device of their tensors.
BadIndex find_out_of_range(const Tensor& index, int64_t size, const char* op) {
    BadIndex bad;
    bad = LUMEN_DISPATCH(index, find_out_of_range, strided(index, op), size);
    return bad;
}

void index_select_into(const Tensor& x, const Tensor& index, const Tensor& out, int d,
                       const char* op) {
    StridedView xv = strided(x, op), iv = strided(index, op), ov = strided(out, op);
    LUMEN_DISPATCH(x, index_select_forward, xv, iv, ov, d);
}

void index_add_into(const Tensor& out, const Tensor& index, const Tensor& source, int d,
                    double alpha, const char* op) {
    StridedView ov = strided(out, op), iv = strided(index, op), sv = strided(source, op);
    LUMEN_DISPATCH(out, index_add_forward, ov, iv, sv, d, alpha);
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
    profiler::Scope profile(profiler::Kind::op, "gather", x);
    const char* op = "gather";
    check_same_device(op, {x, index});
    check_index_dtype(index, op);
    int d = wrap_dim(dim, x.ndim(), op);
    if (x.ndim() == 0 && index.ndim() <= 1 && index.numel() == 1)
        return gather(x.reshape({1}), 0, index.reshape({1})).reshape(index.shape());
    check_gather_shapes(x, d, index, op);
    Tensor out = empty(index.shape(), x.dtype(), x.device());
    if (out.numel() > 0) {
        StridedView xv = strided(x, op), iv = strided(index, op), ov = strided(out, op);
        BadIndex bad;
        bad = LUMEN_DISPATCH(x, gather_forward, xv, iv, ov, d);
        if (bad.found) fail_range(op, bad.value, d, x.size(d));
    }
    // dx = scatter_add(zeros like x, dim, index, grad_out): each picked element gets its
    // gradient, repeated picks add up
    record_backward(op, {x}, out, [d, shape = x.shape(), saved = save(index)](const Tensor& g) {
        return std::vector<Tensor>{
            scatter_add(zeros(shape, g.dtype(), g.device()), d, saved.get(), g)};
    });
    return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
    profiler::Scope profile(profiler::Kind::op, "scatter_add", x);
    const char* op = "scatter_add";
    check_same_device(op, {x, index, src});
    check_index_dtype(index, op);
    LUMEN_CHECK(src.dtype() == x.dtype(), op, "src must have the input's dtype: got ", src.dtype(),
                " and ", x.dtype());
    int d = wrap_dim(dim, x.ndim(), op);
    if (x.ndim() == 0 && index.numel() == 1 && src.numel() >= 1)
        return scatter_add(x.reshape({1}), 0, index.reshape({1}), src.reshape({-1}).narrow(0, 0, 1))
            .reshape({});
    check_gather_shapes(x, d, index, op);
    LUMEN_CHECK(src.ndim() == index.ndim(), op, "src must have the rank of index: got src shape ",
                src.shape(), ", index shape ", index.shape());
    for (int64_t k = 0; k < index.ndim(); ++k)
        LUMEN_CHECK(index.size(k) <= src.size(k), op, "index shape ", index.shape(),
                    " is larger than src shape ", src.shape(), " in dim ", k);
    Tensor out = plain_clone(x);
    if (index.numel() > 0) {
        StridedView ov = strided(out, op), iv = strided(index, op), sv = strided(src, op);
        BadIndex bad;
        bad = LUMEN_DISPATCH(x, scatter_add_forward, ov, iv, sv, d);
        if (bad.found) fail_range(op, bad.value, d, x.size(d));
    }
    // dx = grad_out; dsrc = gather(grad_out, dim, index) on the part of src that index covers
    bool need_src = src.requires_grad();
    record_backward(op, {x, src}, out,
                    [d, need_src, src_shape = src.shape(), saved = save(index)](const Tensor& g) {
                        if (!need_src) return std::vector<Tensor>{g, Tensor()};
                        Tensor index = saved.get();
                        Tensor picked = gather(g, d, index);
                        if (index.shape() == src_shape) return std::vector<Tensor>{g, picked};
                        Tensor grad_src = zeros(src_shape, g.dtype(), g.device());
                        Tensor covered = grad_src;
                        for (int64_t k = 0; k < index.ndim(); ++k)
                            covered = covered.narrow(k, 0, index.size(k));
                        covered.copy_(picked);
                        return std::vector<Tensor>{g, grad_src};
                    });
    return out;
}

namespace {

// index_select / index_add: a 0-d or 1-D index, every value checked against x.size(dim).
void check_vector_index(const Tensor& index, int d, int64_t size, const char* op) {
    check_index_dtype(index, op);
    LUMEN_CHECK(index.ndim() <= 1, op, "index must be 0-d or 1-D, got shape ", index.shape());
    BadIndex bad = find_out_of_range(index, size, op);
    if (bad.found) fail_range(op, bad.value, d, size);
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
    const char* op = "index_select";
    profiler::Scope profile(profiler::Kind::op, op, x);
    check_same_device(op, {x, index});
    int d = wrap_dim(dim, x.ndim(), op);
    if (x.ndim() == 0) {
        Tensor picked = index_select(x.reshape({1}), 0, index);
        return index.numel() == 1 ? picked.reshape({}) : picked;
    }
    check_vector_index(index, d, x.size(d), op);
    Shape shape = x.shape();
    shape[size_t(d)] = index.numel();
    Tensor out = empty(shape, x.dtype(), x.device());
    index_select_into(plain_contiguous(x), index, out, d, op);
    // dx = index_add(zeros like x, dim, index, grad_out): repeated indices accumulate
    record_backward(op, {x}, out, [d, shape = x.shape(), saved = save(index)](const Tensor& g) {
        return std::vector<Tensor>{
            index_add(zeros(shape, g.dtype(), g.device()), d, saved.get(), g)};
    });
    return out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 double alpha) {
    const char* op = "index_add";
    profiler::Scope profile(profiler::Kind::op, op, x);
    check_same_device(op, {x, index, source});
    int d = wrap_dim(dim, x.ndim(), op);
    if (x.ndim() == 0)
        return index_add(x.reshape({1}), 0, index, at_least_1d(source), alpha).reshape({});
    check_vector_index(index, d, x.size(d), op);
    LUMEN_CHECK(source.dtype() == x.dtype(), op, "source must have the input's dtype: got ",
                source.dtype(), " and ", x.dtype());
    Shape want = x.shape();
    want[size_t(d)] = index.numel();
    Tensor src = source.ndim() == 0 && index.numel() == 1 ? source.reshape(want) : source;
    LUMEN_CHECK(src.shape() == want, op, "source of shape ", source.shape(),
                " does not match: ", "expected ", want, " (the input's shape with dim ", d,
                " = index size ", index.numel(), ")");
    LUMEN_CHECK(is_floating(x.dtype()) || alpha == double(int64_t(alpha)), op,
                "alpha must be an integer for an integer input, got ", alpha);
    Tensor out = plain_clone(x);
    index_add_into(out, index, plain_contiguous(src), d, alpha, op);
    // dx = grad_out; dsource = alpha * index_select(grad_out, dim, index)
    bool need_source = source.requires_grad();
    record_backward(
        op, {x, source}, out,
        [d, alpha, need_source, src_shape = source.shape(), saved = save(index)](const Tensor& g) {
            if (!need_source) return std::vector<Tensor>{g, Tensor()};
            Tensor picked = index_select(g, d, saved.get());
            if (alpha != 1.0) picked = mul(picked, alpha);
            return std::vector<Tensor>{g, picked.reshape(src_shape)};
        });
    return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
    const char* op = "embedding";
    profiler::Scope profile(profiler::Kind::op, op, weight);
    check_same_device(op, {weight, indices});
    LUMEN_CHECK(weight.ndim() == 2, op,
                "weight must be 2-D (num_embeddings, embedding_dim), got "
                "shape ",
                weight.shape());
    check_index_dtype(indices, op, "indices");
    int64_t rows = weight.size(0), width = weight.size(1);
    if (padding_idx) {
        LUMEN_CHECK(*padding_idx >= -rows && *padding_idx < rows, op, "padding_idx ", *padding_idx,
                    " must be within [", -rows, ", ", rows - 1, "] for ", rows, " embeddings");
        if (*padding_idx < 0) padding_idx = *padding_idx + rows;
    }
    Tensor flat = plain_contiguous(indices).reshape({-1});
    BadIndex bad = find_out_of_range(flat, rows, op);
    if (bad.found) fail_range(op, bad.value, 0, rows);
    Shape shape = indices.shape();
    shape.push_back(width);
    Tensor out = empty(shape, weight.dtype(), weight.device());
    index_select_into(plain_contiguous(weight), flat, out, 0, op);
    // dweight[r] = sum of grad_out rows whose index is r; the padding row gets none
    record_backward(
        op, {weight}, out, [rows, width, padding_idx, saved = save(flat)](const Tensor& g) {
            Tensor grad_weight = zeros({rows, width}, g.dtype(), g.device());
            index_add_into(grad_weight, saved.get(), g.contiguous(), 0, 1.0, "embedding");
            if (padding_idx) grad_weight.select(0, *padding_idx).zero_();
            return std::vector<Tensor>{grad_weight};
        });
    return out;
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
    const char* op = "repeat_interleave";
    LUMEN_CHECK(repeats >= 0, op, "repeats must be non-negative, got ", repeats);
    Tensor input = dim ? at_least_1d(x) : x.reshape({-1});
    int d = dim ? wrap_dim(*dim, input.ndim(), op) : 0;
    // (.., n, ..) -> (.., n, repeats, ..) by a stride-0 view, then merged into n * repeats.
    Shape expanded = input.shape(), merged = input.shape();
    expanded.insert(expanded.begin() + d + 1, repeats);
    merged[size_t(d)] *= repeats;
    return input.unsqueeze(d + 1).expand(expanded).reshape(merged);
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim) {
    const char* op = "repeat_interleave";
    check_same_device(op, {x, repeats});
    check_index_dtype(repeats, op, "repeats");
    LUMEN_CHECK(repeats.ndim() <= 1, op, "repeats must be 0-d or 1-D, got shape ", repeats.shape());
    Tensor input = dim ? at_least_1d(x) : x.reshape({-1});
    int d = dim ? wrap_dim(*dim, input.ndim(), op) : 0;
    int64_t n = input.size(d);
    std::vector<int64_t> counts = repeats.to_vector<int64_t>();
    if (counts.size() == 1) return repeat_interleave(x, counts[0], dim);
    LUMEN_CHECK(int64_t(counts.size()) == n, op, "repeats must have the size of dim ", d, " (", n,
                ") or 1, got shape ", repeats.shape());
    std::vector<int64_t> picks;
    for (int64_t i = 0; i < n; ++i) {
        LUMEN_CHECK(counts[size_t(i)] >= 0, op, "repeats must be non-negative, got ",
                    counts[size_t(i)], " at position ", i);
        picks.insert(picks.end(), size_t(counts[size_t(i)]), i);
    }
    return index_select(input, d, from_vector(picks, {int64_t(picks.size())}, input.device()));
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
    const char* op = "one_hot";
    profiler::Scope profile(profiler::Kind::op, op, indices);
    check_index_dtype(indices, op, "indices");
    LUMEN_CHECK(num_classes >= -1, op, "num_classes must be -1 or non-negative, got ", num_classes);
    if (indices.numel() > 0) {
        int64_t min = 0, max = 0;
        LUMEN_DISPATCH(indices, index_min_max, strided(indices, op), min, max);
        LUMEN_CHECK(min >= 0, op, "class values must be non-negative, got ", min);
        if (num_classes == -1) num_classes = max + 1;
        LUMEN_CHECK(max < num_classes, op, "class value ", max, " is out of range for ",
                    num_classes, " classes (valid range [0, ", num_classes - 1, "])");
    }
    LUMEN_CHECK(num_classes >= 0, op, "cannot infer num_classes from an empty tensor (shape ",
                indices.shape(), "); pass num_classes");
    Shape shape = indices.shape();
    shape.push_back(num_classes);
    Tensor out = zeros(shape, DType::int64, indices.device());
    if (indices.numel() > 0) {
        LUMEN_DISPATCH(indices, one_hot_forward, strided(indices, op), strided(out, op),
                       num_classes);
    }
    return out;
}

}  // namespace lumen
