// CPU reduction kernels. A reduction is planned once as kept dims x reduced dims (sorted and
// merged) and walked in one of two orders, picked by where x's smallest stride lies:
//   segments: on a reduced dim. Each output reduces contiguous runs (sum over the last dim).
//   columns:  on a kept dim. Rows of x are accumulated into a block of outputs at once (sum
//             over leading dims: bias gradients, sum_to after broadcasting).
// Reducers (sum, extremum, arg extremum, squared deviation, sum of exp) plug into both walks.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/reduce_kernels.h"

namespace lumen::cpu {

namespace {

// Work splitting. Pieces are fixed by the sizes alone, never by the thread count, so every
// result is the same whatever the number of threads.
constexpr int64_t kSplitBelow = 8;      // fewer outputs (or column blocks): split reductions too
constexpr int64_t kMinPiece = 32768;    // elements in one piece of a split reduction
constexpr int64_t kMaxPieces = 64;      // partial results per output at most
constexpr int64_t kColumnBlock = 1024;  // outputs accumulated together in column order

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- the plan ----

// Dims walked together: their sizes and the x and out strides of each.
struct DimList {
    int ndim = 0;
    int64_t shape[kMaxDims] = {};
    int64_t x[kMaxDims] = {};
    int64_t out[kMaxDims] = {};

    void push(int64_t size, int64_t x_stride, int64_t out_stride) {
        shape[ndim] = size;
        x[ndim] = x_stride;
        out[ndim] = out_stride;
        ++ndim;
    }
    void erase(int at) {
        for (int d = at; d + 1 < ndim; ++d) {
            shape[d] = shape[d + 1];
            x[d] = x[d + 1];
            out[d] = out[d + 1];
        }
        --ndim;
    }
    int64_t numel() const {
        int64_t n = 1;
        for (int d = 0; d < ndim; ++d) n *= shape[d];
        return n;
    }
    // Merges each dim into the one before it when both are row-major contiguous together.
    void coalesce() {
        int kept = 0;
        for (int d = 0; d < ndim; ++d) {
            if (kept > 0 && x[kept - 1] == x[d] * shape[d] && out[kept - 1] == out[d] * shape[d]) {
                shape[kept - 1] *= shape[d];
                x[kept - 1] = x[d];
                out[kept - 1] = out[d];
                continue;
            }
            shape[kept] = shape[d];
            x[kept] = x[d];
            out[kept] = out[d];
            ++kept;
        }
        ndim = kept;
    }
};

// Row-major walk over a DimList, tracking the x and out offsets of the current position.
struct Walker {
    const DimList& dims;
    int64_t index[kMaxDims] = {};
    int64_t x = 0, out = 0;

    Walker(const DimList& list, int64_t start) : dims(list) {
        for (int d = dims.ndim - 1; d >= 0 && start > 0; --d) {
            index[d] = start % dims.shape[d];
            start /= dims.shape[d];
            x += index[d] * dims.x[d];
            out += index[d] * dims.out[d];
        }
    }
    void next() {
        for (int d = dims.ndim - 1; d >= 0; --d) {
            x += dims.x[d];
            out += dims.out[d];
            if (++index[d] < dims.shape[d]) return;
            x -= index[d] * dims.x[d];
            out -= index[d] * dims.out[d];
            index[d] = 0;
        }
    }
};

struct ReducePlan {
    DimList kept;          // the outputs (minus the column dim in column order), in out's order
    DimList rows;          // reduced dims walked one row at a time
    bool columns = false;  // column order, else segment order
    // The innermost loop: a run of reduced elements (segments) or of output columns.
    int64_t span = 1, span_x = 0, span_out = 0;

    int64_t reduced_count() const { return rows.numel() * (columns ? 1 : span); }
    // One past the largest out offset: the size of a scratch buffer laid out like out.
    int64_t out_extent() const {
        if (kept.numel() == 0 || (columns && span == 0)) return 0;
        int64_t last = (columns ? span - 1 : 0) * span_out;
        for (int d = 0; d < kept.ndim; ++d) last += (kept.shape[d] - 1) * kept.out[d];
        return last + 1;
    }
};

ReducePlan make_plan(const StridedView& x, const StridedView& out, uint32_t reduced) {
    LUMEN_ASSERT(x.ndim == out.ndim);
    ReducePlan plan;
    DimList kept, red;
    for (int d = 0; d < x.ndim; ++d) {
        if (x.shape[d] == 1) continue;
        if (reduced >> d & 1) {
            red.push(x.shape[d], x.strides[d], 0);
        } else {
            kept.push(x.shape[d], x.strides[d], out.strides[d]);
        }
    }
    kept.coalesce();
    // Reduced dims in memory order (largest stride first) so rows advance through memory.
    for (int d = 1; d < red.ndim; ++d)
        for (int e = d; e > 0 && red.x[e - 1] < red.x[e]; --e) {
            std::swap(red.shape[e - 1], red.shape[e]);
            std::swap(red.x[e - 1], red.x[e]);
        }
    red.coalesce();
    int column = -1;
    int64_t smallest_reduced = red.ndim ? red.x[red.ndim - 1] : INT64_MAX;
    for (int d = 0; d < kept.ndim; ++d)
        if (kept.x[d] < smallest_reduced && (column < 0 || kept.x[d] <= kept.x[column])) column = d;
    if (column >= 0) {
        plan.columns = true;
        plan.span = kept.shape[column];
        plan.span_x = kept.x[column];
        plan.span_out = kept.out[column];
        kept.erase(column);
    } else if (red.ndim > 0) {
        plan.span = red.shape[red.ndim - 1];
        plan.span_x = red.x[red.ndim - 1];
        red.erase(red.ndim - 1);
    }
    plan.kept = kept;
    plan.rows = red;
    return plan;
}

// ---- sums of runs ----

// Sum of f(x[i * stride]) for i < n, in double; contiguous runs vectorize (vec::lane_sum).
template <typename T, typename F>
double sum_run(const T* x, int64_t n, int64_t stride, F f) {
    if (stride == 1) return vec::lane_sum<T>(n, [&](int64_t i) { return f(x[i]); });
    double total = 0;
    for (int64_t i = 0; i < n; ++i) total += double(f(x[i * stride]));
    return total;
}

template <typename T>
int64_t sum_run_integer(const T* x, int64_t n, int64_t stride) {
    int64_t total = 0;
    if (stride == 1) {
        for (int64_t i = 0; i < n; ++i) total += int64_t(x[i]);
    } else {
        for (int64_t i = 0; i < n; ++i) total += int64_t(x[i * stride]);
    }
    return total;
}

// ---- reducers ----
// Each reducer supplies: Acc; identity(); combine(a, b) with a before b in reduction order;
// segment(x, n, stride, first_position, out_offset) -> Acc of a run; columns(acc, x, n,
// stride, row, out_offset, out_stride) folding one row into n column accumulators; and
// finish(acc, out_offset) writing an output.

// Sum (scale 1) or mean (scale 1/n); floats accumulate in double, integers in int64.
template <typename T, typename Out>
struct SumReducer {
    static constexpr bool kFloat = std::is_floating_point_v<T>;
    using Acc = std::conditional_t<kFloat, double, int64_t>;
    Out* out;
    double scale = 1.0;

    Acc identity() const { return 0; }
    Acc combine(Acc a, Acc b) const { return a + b; }
    Acc segment(const T* x, int64_t n, int64_t stride, int64_t, int64_t) const {
        if constexpr (kFloat) {
            return sum_run(x, n, stride, [](T v) { return v; });
        } else {
            return sum_run_integer(x, n, stride);
        }
    }
    void columns(Acc* acc, const T* x, int64_t n, int64_t stride, int64_t, int64_t, int64_t) const {
        if (stride == 1) {
            for (int64_t i = 0; i < n; ++i) acc[i] += Acc(x[i]);
        } else {
            for (int64_t i = 0; i < n; ++i) acc[i] += Acc(x[i * stride]);
        }
    }
    void finish(Acc acc, int64_t at) const {
        if constexpr (kFloat) {
            out[at] = Out(acc * scale);
        } else {
            out[at] = Out(acc);
        }
    }
};

// Whether v replaces best as the max (min): strictly larger (smaller), or the first NaN.
template <bool kMax, typename T>
bool better(T v, T best) {
    return (kMax ? v > best : v < best) || (v != v && best == best);
}

// amax / amin: values only, NaN propagates.
template <typename T, bool kMax>
struct ExtremumReducer {
    using Acc = T;
    T* out;

    Acc identity() const {
        if constexpr (std::numeric_limits<T>::has_infinity) {
            return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
        } else {
            return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
        }
    }
    Acc combine(Acc a, Acc b) const { return better<kMax>(b, a) ? b : a; }
    Acc segment(const T* x, int64_t n, int64_t stride, int64_t, int64_t) const {
        if (n == 0) return identity();
        if (stride == 1) return vec::extremum<kMax>(x, n);
        T best = x[0];
        for (int64_t i = 1; i < n; ++i) best = combine(best, x[i * stride]);
        return best;
    }
    void columns(Acc* acc, const T* x, int64_t n, int64_t stride, int64_t, int64_t, int64_t) const {
        for (int64_t i = 0; i < n; ++i) {
            T v = x[i * stride];
            acc[i] = ((kMax ? v > acc[i] : v < acc[i]) | (v != v)) ? v : acc[i];
        }
    }
    void finish(Acc acc, int64_t at) const { out[at] = acc; }
};

template <typename T>
struct ValueIndex {
    T value{};
    int64_t index = -1;  // -1: nothing reduced yet
};

// max/min along one dim with the position of the first extremum. Positions are those of the
// single reduced dim, which segments and rows both walk in order.
template <typename T, bool kMax>
struct ArgExtremumReducer {
    using Acc = ValueIndex<T>;
    T* values;
    int64_t* indices;

    Acc identity() const { return {}; }
    Acc combine(Acc a, Acc b) const {
        return a.index < 0 || (b.index >= 0 && better<kMax>(b.value, a.value)) ? b : a;
    }
    Acc segment(const T* x, int64_t n, int64_t stride, int64_t first, int64_t) const {
        if (n == 0) return {};
        if (stride != 1) {
            Acc best{x[0], first};
            for (int64_t i = 1; i < n; ++i)
                if (better<kMax>(x[i * stride], best.value)) best = {x[i * stride], first + i};
            return best;
        }
        // Vectorized extremum first, then a scan for its first occurrence.
        T best = vec::extremum<kMax>(x, n);
        int64_t i = 0;
        if (best != best) {
            while (x[i] == x[i]) ++i;
        } else {
            while (x[i] != best) ++i;
        }
        return {best, first + i};
    }
    void columns(Acc* acc, const T* x, int64_t n, int64_t stride, int64_t row, int64_t,
                 int64_t) const {
        for (int64_t i = 0; i < n; ++i) {
            T v = x[i * stride];
            if (acc[i].index < 0 || better<kMax>(v, acc[i].value)) acc[i] = {v, row};
        }
    }
    void finish(Acc acc, int64_t at) const {
        values[at] = acc.value;
        indices[at] = acc.index;
    }
};

// Second pass of var: sum((x - mean)^2) / divisor, mean per output (laid out like out).
template <typename T>
struct SquaredDeviationReducer {
    using Acc = double;
    const double* mean;
    T* out;
    double divisor;
    bool take_sqrt;

    Acc identity() const { return 0; }
    Acc combine(Acc a, Acc b) const { return a + b; }
    Acc segment(const T* x, int64_t n, int64_t stride, int64_t, int64_t at) const {
        // The mean's rounding to T is taken off x - center as well (x - center is exact near the
        // center): with a mean far above the spread, that half ulp would otherwise add
        // n ulp^2 / 4 to the sum, a large relative error of a small variance.
        const T center = T(mean[at]), low = T(mean[at] - double(center));
        return sum_run(x, n, stride, [center, low](T v) {
            T deviation = T(v - center) - low;
            return deviation * deviation;
        });
    }
    void columns(Acc* acc, const T* x, int64_t n, int64_t stride, int64_t, int64_t at,
                 int64_t out_stride) const {
        for (int64_t i = 0; i < n; ++i) {
            double deviation = double(x[i * stride]) - mean[at + i * out_stride];
            acc[i] += deviation * deviation;
        }
    }
    void finish(Acc acc, int64_t at) const {
        double variance = acc / divisor;
        out[at] = T(take_sqrt ? std::sqrt(variance) : variance);
    }
};

// An infinite max cannot be subtracted (inf - inf = NaN): shifting by 0 instead keeps every
// argument of exp <= 0 when the max is -inf (all -inf, so the result is -inf); a +inf max
// makes the result +inf without looking at the sum.
template <typename T>
T finite_shift(T max) {
    return std::isinf(max) ? T(0) : max;
}

// Second pass of logsumexp: max + log(sum(exp(x - max))), max per output (laid out like out).
template <typename T>
struct SumExpReducer {
    using Acc = double;
    const T* max;
    T* out;

    Acc identity() const { return 0; }
    Acc combine(Acc a, Acc b) const { return a + b; }
    Acc segment(const T* x, int64_t n, int64_t stride, int64_t, int64_t at) const {
        T shift = finite_shift(max[at]);
        return sum_run(x, n, stride, [shift](T v) { return vec::exp_nonpositive(T(v - shift)); });
    }
    void columns(Acc* acc, const T* x, int64_t n, int64_t stride, int64_t, int64_t at,
                 int64_t out_stride) const {
        for (int64_t i = 0; i < n; ++i) {
            T shift = finite_shift(max[at + i * out_stride]);
            acc[i] += double(vec::exp_nonpositive(T(x[i * stride] - shift)));
        }
    }
    void finish(Acc acc, int64_t at) const {
        T m = max[at];
        bool plus_inf = std::isinf(m) && m > 0;
        out[at] = plus_inf ? m : T(double(finite_shift(m)) + std::log(acc));
    }
};

// ---- the two walks ----

// Piece length for splitting `count` items of `item_size` elements each.
int64_t piece_length(int64_t count, int64_t item_size) {
    return std::max(ceil_div(kMinPiece, std::max<int64_t>(item_size, 1)),
                    ceil_div(count, kMaxPieces));
}

// The reduction of positions [begin, end) of one output's reduced elements (ordered as rows x
// segment); x points at the output's first element.
template <typename T, typename R>
typename R::Acc reduce_positions(const ReducePlan& plan, const T* x, int64_t at, int64_t begin,
                                 int64_t end, const R& reducer) {
    if (begin >= end) return reducer.identity();
    if (plan.rows.ndim == 0) {
        return reducer.segment(x + begin * plan.span_x, end - begin, plan.span_x, begin, at);
    }
    typename R::Acc acc = reducer.identity();
    Walker row(plan.rows, begin / plan.span);
    for (int64_t position = begin; position < end; row.next()) {
        int64_t offset = position % plan.span;
        int64_t n = std::min(plan.span - offset, end - position);
        acc = reducer.combine(
            acc, reducer.segment(x + row.x + offset * plan.span_x, n, plan.span_x, position, at));
        position += n;
    }
    return acc;
}

template <typename T, typename R>
void walk_segments(const ReducePlan& plan, const T* x, const R& reducer) {
    int64_t outputs = plan.kept.numel(), count = plan.reduced_count();
    if (outputs == 0) return;
    if (outputs >= kSplitBelow || count < 2 * kMinPiece) {
        int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(count, 1));
        parallel_for(0, outputs, grain, [&](int64_t lo, int64_t hi) {
            Walker out(plan.kept, lo);
            for (int64_t k = lo; k < hi; ++k, out.next())
                reducer.finish(reduce_positions(plan, x + out.x, out.out, 0, count, reducer),
                               out.out);
        });
        return;
    }
    // Few outputs with long reductions: reduce pieces of each in parallel, combine in order.
    int64_t piece = piece_length(count, 1), pieces = ceil_div(count, piece);
    std::vector<typename R::Acc> partial(static_cast<size_t>(pieces));
    Walker out(plan.kept, 0);
    for (int64_t k = 0; k < outputs; ++k, out.next()) {
        parallel_for(0, pieces, 1, [&](int64_t lo, int64_t hi) {
            for (int64_t p = lo; p < hi; ++p)
                partial[p] = reduce_positions(plan, x + out.x, out.out, p * piece,
                                              std::min(count, (p + 1) * piece), reducer);
        });
        typename R::Acc acc = partial[0];
        for (int64_t p = 1; p < pieces; ++p) acc = reducer.combine(acc, partial[p]);
        reducer.finish(acc, out.out);
    }
}

// One block of output columns: where its x and out elements start, and how many.
struct ColumnBlock {
    int64_t x = 0, out = 0, n = 0;
};

ColumnBlock column_block(const ReducePlan& plan, int64_t task, int64_t block, int64_t blocks) {
    Walker outer(plan.kept, task / blocks);
    int64_t first = task % blocks * block;
    return {outer.x + first * plan.span_x, outer.out + first * plan.span_out,
            std::min(block, plan.span - first)};
}

template <typename T, typename R>
void walk_columns(const ReducePlan& plan, const T* x, const R& reducer) {
    using Acc = typename R::Acc;
    int64_t rows = plan.rows.numel();
    if (plan.span == 0) return;
    int64_t block = std::min(plan.span, kColumnBlock), blocks = ceil_div(plan.span, block);
    int64_t tasks = plan.kept.numel() * blocks;
    if (tasks == 0) return;
    // Folds rows [first, last) into acc[0..n): each row is a contiguous run when span_x is 1.
    auto fold_rows = [&](const ColumnBlock& columns, int64_t first, int64_t last, Acc* acc) {
        for (int64_t i = 0; i < columns.n; ++i) acc[i] = reducer.identity();
        if (first >= last) return;
        Walker row(plan.rows, first);
        for (int64_t r = first; r < last; ++r, row.next())
            reducer.columns(acc, x + columns.x + row.x, columns.n, plan.span_x, r, columns.out,
                            plan.span_out);
    };
    auto finish = [&](const ColumnBlock& columns, const Acc* acc) {
        for (int64_t i = 0; i < columns.n; ++i)
            reducer.finish(acc[i], columns.out + i * plan.span_out);
    };
    if (tasks >= kSplitBelow || rows * block < 2 * kMinPiece) {
        int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(rows * block, 1));
        parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
            std::vector<Acc> acc(static_cast<size_t>(block));
            for (int64_t t = lo; t < hi; ++t) {
                ColumnBlock columns = column_block(plan, t, block, blocks);
                fold_rows(columns, 0, rows, acc.data());
                finish(columns, acc.data());
            }
        });
        return;
    }
    // Few blocks over many rows: each piece of rows streams through memory into its own
    // partial accumulators, which are then combined in row order.
    int64_t piece = piece_length(rows, block), pieces = ceil_div(rows, piece);
    std::vector<Acc> partial(static_cast<size_t>(tasks * pieces * block));
    parallel_for(0, tasks * pieces, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t item = lo; item < hi; ++item) {
            int64_t p = item % pieces;
            fold_rows(column_block(plan, item / pieces, block, blocks), p * piece,
                      std::min(rows, (p + 1) * piece), &partial[size_t(item * block)]);
        }
    });
    for (int64_t t = 0; t < tasks; ++t) {
        ColumnBlock columns = column_block(plan, t, block, blocks);
        Acc* acc = &partial[size_t(t * pieces * block)];
        for (int64_t p = 1; p < pieces; ++p)
            for (int64_t i = 0; i < columns.n; ++i)
                acc[i] = reducer.combine(acc[i], acc[p * block + i]);
        finish(columns, acc);
    }
}

template <typename T, typename R>
void walk(const ReducePlan& plan, const T* x, const R& reducer) {
    if (plan.columns) {
        walk_columns(plan, x, reducer);
    } else {
        walk_segments(plan, x, reducer);
    }
}

// bool is stored as bytes 0 / 1, so the uint8 kernels serve it.
DType storage_dtype(DType dtype) { return dtype == DType::bool_ ? DType::uint8 : dtype; }

}  // namespace

void reduce_forward(ReduceOp op, const StridedView& x, const StridedView& out, uint32_t reduced) {
    ReducePlan plan = make_plan(x, out, reduced);
    DType dtype = storage_dtype(x.dtype);
    switch (op) {
        case ReduceOp::sum:
            return dispatch_numeric(dtype, "sum", [&]<typename T>() {
                if constexpr (std::is_floating_point_v<T>) {
                    walk(plan, x.ptr<T>(), SumReducer<T, T>{out.ptr<T>()});
                } else {
                    walk(plan, x.ptr<T>(), SumReducer<T, int64_t>{out.ptr<int64_t>()});
                }
            });
        case ReduceOp::mean:
            return dispatch_floating(x.dtype, "mean", [&]<typename T>() {
                // 1 / 0 = inf makes the mean of nothing 0 * inf = NaN, as in PyTorch.
                double scale = 1.0 / double(plan.reduced_count());
                walk(plan, x.ptr<T>(), SumReducer<T, T>{out.ptr<T>(), scale});
            });
        case ReduceOp::amax:
            return dispatch_numeric(dtype, "amax", [&]<typename T>() {
                walk(plan, x.ptr<T>(), ExtremumReducer<T, true>{out.ptr<T>()});
            });
        case ReduceOp::amin:
            return dispatch_numeric(dtype, "amin", [&]<typename T>() {
                walk(plan, x.ptr<T>(), ExtremumReducer<T, false>{out.ptr<T>()});
            });
    }
}

void arg_reduce_forward(bool is_max, const StridedView& x, int dim, const StridedView& values,
                        const StridedView& indices) {
    ReducePlan plan = make_plan(x, values, 1u << dim);
    dispatch_numeric(storage_dtype(x.dtype), is_max ? "max" : "min", [&]<typename T>() {
        if (is_max) {
            walk(plan, x.ptr<T>(),
                 ArgExtremumReducer<T, true>{values.ptr<T>(), indices.ptr<int64_t>()});
        } else {
            walk(plan, x.ptr<T>(),
                 ArgExtremumReducer<T, false>{values.ptr<T>(), indices.ptr<int64_t>()});
        }
    });
}

void var_forward(const StridedView& x, const StridedView& out, uint32_t reduced, double correction,
                 bool take_sqrt) {
    ReducePlan plan = make_plan(x, out, reduced);
    dispatch_floating(x.dtype, take_sqrt ? "std" : "var", [&]<typename T>() {
        double count = double(plan.reduced_count());
        std::vector<double> mean(static_cast<size_t>(plan.out_extent()));
        walk(plan, x.ptr<T>(), SumReducer<T, double>{mean.data(), 1.0 / count});
        double divisor = std::max(count - correction, 0.0);
        walk(plan, x.ptr<T>(),
             SquaredDeviationReducer<T>{mean.data(), out.ptr<T>(), divisor, take_sqrt});
    });
}

void logsumexp_forward(const StridedView& x, const StridedView& out, uint32_t reduced) {
    ReducePlan plan = make_plan(x, out, reduced);
    dispatch_floating(x.dtype, "logsumexp", [&]<typename T>() {
        std::vector<T> max(static_cast<size_t>(plan.out_extent()));
        walk(plan, x.ptr<T>(), ExtremumReducer<T, true>{max.data()});
        walk(plan, x.ptr<T>(), SumExpReducer<T>{max.data(), out.ptr<T>()});
    });
}

}  // namespace lumen::cpu
