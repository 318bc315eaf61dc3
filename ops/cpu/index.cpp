// CPU kernels of the index family: gather / scatter_add walk the index tensor with strided
// rows (x seen with index's shape and stride 0 along `dim`, so the row walker yields the base
// offset and the index adds index * stride); index_select / index_add work on contiguous
// (outer, length, inner) blocks and move whole inner rows. Index values are bounds-checked
// before any memory is touched.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/index_kernels.h"

namespace lumen::cpu {

namespace {

// Collects one out-of-range index from any thread (the error path only, so a mutex is fine).
class BadIndexCollector {
  public:
    void report(int64_t value) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!bad_.found) bad_ = BadIndex{true, value};
    }
    BadIndex result() const { return bad_; }

  private:
    std::mutex mutex_;
    BadIndex bad_;
};

// `base` seen with `like`'s shape and stride 0 along dim: the row walker then gives the offset
// of every coordinate but `dim`, which the index supplies.
StridedView base_view(const StridedView& base, const StridedView& like, int dim) {
    StridedView view = base;
    view.ndim = like.ndim;
    for (int d = 0; d < like.ndim; ++d) {
        view.shape[d] = like.shape[d];
        view.strides[d] = d == dim ? 0 : base.strides[d];
    }
    return view;
}

// The same view with dim `dim` moved to the end (so that one row is one line along dim).
StridedView move_dim_last(StridedView view, int dim) {
    int64_t size = view.shape[dim], stride = view.strides[dim];
    for (int d = dim; d + 1 < view.ndim; ++d) {
        view.shape[d] = view.shape[d + 1];
        view.strides[d] = view.strides[d + 1];
    }
    view.shape[view.ndim - 1] = size;
    view.strides[view.ndim - 1] = stride;
    return view;
}

}  // namespace

BadIndex find_out_of_range(const StridedView& index, int64_t size) {
    BadIndex bad;
    int64_t n = index.numel();
    dispatch_index(index.dtype, [&]<typename I>() {
        const I* data = index.ptr<I>();
        for (int64_t i = 0; i < n && !bad.found; ++i) {
            int64_t value = data[strided_offset(index, i)];
            if (value < 0 || value >= size) bad = BadIndex{true, value};
        }
    });
    return bad;
}

void index_min_max(const StridedView& index, int64_t& min, int64_t& max) {
    dispatch_index(index.dtype, [&]<typename I>() {
        const I* data = index.ptr<I>();
        min = max = data[strided_offset(index, 0)];
        for (int64_t i = 1, n = index.numel(); i < n; ++i) {
            int64_t value = data[strided_offset(index, i)];
            min = std::min(min, value);
            max = std::max(max, value);
        }
    });
}

namespace {

// One row of gather: row[i] = from[i * from_step + picks[i] * step]. Every value is a plain
// argument so that the loop keeps them in registers. An index outside [0, size) is skipped;
// the first one is returned in `bad` and the result is false.
template <typename T, typename I>
inline bool gather_row(T* row, int64_t row_step, const I* picks, int64_t pick_step, const T* from,
                       int64_t from_step, int64_t n, int64_t size, int64_t step, int64_t& bad) {
    bool ok = true;
    for (int64_t i = 0; i < n; ++i) {
        int64_t k = picks[i * pick_step];
        if (uint64_t(k) >= uint64_t(size)) [[unlikely]] {
            if (ok) bad = k;
            ok = false;
            continue;
        }
        row[i * row_step] = from[i * from_step + k * step];
    }
    return ok;
}

// One line of scatter_add along dim: to[picks[i] * step] += from[i * from_step].
template <typename T, typename I>
inline bool scatter_add_line(T* to, int64_t step, const I* picks, int64_t pick_step, const T* from,
                             int64_t from_step, int64_t n, int64_t size, int64_t& bad) {
    bool ok = true;
    for (int64_t i = 0; i < n; ++i) {
        int64_t k = picks[i * pick_step];
        if (uint64_t(k) >= uint64_t(size)) [[unlikely]] {
            if (ok) bad = k;
            ok = false;
            continue;
        }
        to[k * step] += from[i * from_step];
    }
    return ok;
}

}  // namespace

BadIndex gather_forward(const StridedView& x, const StridedView& index, const StridedView& out,
                        int dim) {
    BadIndexCollector bad;
    StridedView views[3] = {out, index, base_view(x, index, dim)};
    coalesce_dims(views, 3);
    int64_t size = x.shape[dim], step = x.strides[dim];
    dispatch_bits(x.dtype, [&]<typename T>() {
        dispatch_index(index.dtype, [&]<typename I>() {
            T* o = out.ptr<T>();
            const I* idx = index.ptr<I>();
            const T* base = x.ptr<T>();
            for_each_row(views, [&](const int64_t* offsets, int64_t n, const int64_t* steps) {
                T* row = o + offsets[0];
                const I* picks = idx + offsets[1];
                const T* from = base + offsets[2];
                int64_t value = 0;
                bool ok = steps[0] == 1 && steps[1] == 1 && steps[2] == 0
                              // contiguous rows along `dim`, the last dim: the common case
                              ? gather_row(row, 1, picks, 1, from, 0, n, size, step, value)
                              : gather_row(row, steps[0], picks, steps[1], from, steps[2], n, size,
                                           step, value);
                if (!ok) bad.report(value);
            });
        });
    });
    return bad.result();
}

BadIndex scatter_add_forward(const StridedView& out, const StridedView& index,
                             const StridedView& src, int dim) {
    BadIndexCollector bad;
    StridedView src_view = src;
    for (int d = 0; d < index.ndim; ++d) src_view.shape[d] = index.shape[d];
    StridedView views[3] = {index, src_view, base_view(out, index, dim)};
    if (index.ndim > 0) {
        for (StridedView& v : views) v = move_dim_last(v, dim);
    }
    int64_t size = out.ndim ? out.shape[dim] : 1, step = out.ndim ? out.strides[dim] : 0;
    dispatch_numeric(out.dtype, "scatter_add", [&]<typename T>() {
        dispatch_index(index.dtype, [&]<typename I>() {
            T* o = out.ptr<T>();
            const I* idx = index.ptr<I>();
            const T* s = src.ptr<T>();
            for_each_row(views, [&](const int64_t* offsets, int64_t n, const int64_t* steps) {
                int64_t value = 0;
                bool ok = steps[0] == 1 && steps[1] == 1
                              ? scatter_add_line(o + offsets[2], step, idx + offsets[0], 1,
                                                 s + offsets[1], 1, n, size, value)
                              : scatter_add_line(o + offsets[2], step, idx + offsets[0], steps[0],
                                                 s + offsets[1], steps[1], n, size, value);
                if (!ok) bad.report(value);
            });
        });
    });
    return bad.result();
}

void index_select_forward(const StridedView& x, const StridedView& index, const StridedView& out,
                          int dim) {
    DimBlocks in = dim_blocks(x, dim);
    int64_t count = index.numel(), index_step = index.ndim ? index.strides[0] : 0;
    if (in.outer * count * in.inner == 0) return;
    dispatch_bits(x.dtype, [&]<typename T>() {
        dispatch_index(index.dtype, [&]<typename I>() {
            const T* source = x.ptr<T>();
            T* target = out.ptr<T>();
            const I* idx = index.ptr<I>();
            size_t row_bytes = size_t(in.inner) * sizeof(T);
            int64_t grain = std::max<int64_t>(1, kGrainSize / in.inner);
            // One task per output row (o, i): a copy of `inner` elements.
            parallel_for(0, in.outer * count, grain, [&](int64_t lo, int64_t hi) {
                for (int64_t task = lo; task < hi; ++task) {
                    int64_t o = task / count, i = task % count;
                    const T* from = source + (o * in.length + idx[i * index_step]) * in.inner;
                    std::memcpy(target + task * in.inner, from, row_bytes);
                }
            });
        });
    });
}

void index_add_forward(const StridedView& out, const StridedView& index, const StridedView& source,
                       int dim, double alpha) {
    DimBlocks dst = dim_blocks(out, dim);
    int64_t count = index.numel(), index_step = index.ndim ? index.strides[0] : 0;
    if (dst.outer * count * dst.inner == 0) return;
    dispatch_numeric(out.dtype, "index_add", [&]<typename T>() {
        dispatch_index(index.dtype, [&]<typename I>() {
            T* target = out.ptr<T>();
            const T* from = source.ptr<T>();
            const I* idx = index.ptr<I>();
            T scale = T(alpha);
            // Tasks are destination rows (o, r). A thread owns [lo, hi) of them; for every o
            // it touches it scans all indices and adds the source rows aimed at its own rows.
            int64_t rows = dst.outer * dst.length;
            int64_t work_per_row = std::max<int64_t>(1, count * dst.inner / dst.length);
            int64_t grain = std::max<int64_t>(1, kGrainSize / work_per_row);
            parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
                for (int64_t o = lo / dst.length; o * dst.length < hi; ++o) {
                    int64_t first = std::max(lo - o * dst.length, int64_t(0));
                    int64_t last = std::min(hi - o * dst.length, dst.length);
                    for (int64_t i = 0; i < count; ++i) {
                        int64_t r = idx[i * index_step];
                        if (r < first || r >= last) continue;
                        T* row = target + (o * dst.length + r) * dst.inner;
                        const T* add = from + (o * count + i) * dst.inner;
                        if (alpha == 1.0) {
                            for (int64_t c = 0; c < dst.inner; ++c) row[c] += add[c];
                        } else {
                            for (int64_t c = 0; c < dst.inner; ++c) row[c] += scale * add[c];
                        }
                    }
                }
            });
        });
    });
}

void one_hot_forward(const StridedView& index, const StridedView& out, int64_t num_classes) {
    int64_t n = index.numel();
    int64_t* target = out.ptr<int64_t>();
    dispatch_index(index.dtype, [&]<typename I>() {
        const I* data = index.ptr<I>();
        parallel_for(0, n, kGrainSize, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i)
                target[i * num_classes + data[strided_offset(index, i)]] = 1;
        });
    });
}

}  // namespace lumen::cpu
