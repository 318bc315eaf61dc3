// CPU GEMM for matmul and linear through Eigen. Each operand matrix is mapped in place, as a
// row-major or a column-major (= transposed row-major) Eigen::Map, so transposed views cost no
// copy. Many products run in parallel over the batch; a single large product is split into
// one panel per thread. Eigen itself always runs single-threaded (see gemm_split for why).
// Small float products skip Eigen for register tiles of their own (small_gemm).

// Tune this file's code generically. With -march=native on AMD Zen 3, GCC 12 tunes for znver3,
// which makes Eigen's GEMM inner kernel about 30% slower (SGEMM n = 1024, one thread: ~62
// against ~90 GFLOP/s with generic tuning, measured on the 2-core EPYC benchmark machine;
// clang reaches ~90 either way). Tuning changes no instruction set, only code generation, and
// it has to precede every include so that all inline code in this file agrees on it.
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#pragma GCC target("tune=generic")
#endif

#include <algorithm>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/cpu/row_tiles.h"
#include "ops/matmul_kernels.h"

namespace lumen::cpu {

namespace {

// Products below this many multiply-adds (n k m) run on one thread: waking the pool and
// splitting costs about as much as such a product (bench_core's sgemm_64, 262,144
// multiply-adds, ran at 56 GFLOP/s split in two and 75 on one thread; Eigen's own threshold
// for threading is 100000).
constexpr int64_t kSplitWork = 300000;
// Panels of a split product are multiples of this many rows or columns.
constexpr int64_t kPanelAlign = 16;

template <typename T, int Order>
using ConstMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>,
                            Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                          Eigen::Unaligned, Eigen::OuterStride<>>;

// Calls body(map) with the rows x cols matrix at `data` mapped in the layout its strides allow
// (ops/matmul.cpp guarantees a valid one).
template <typename T, typename Body>
void with_matrix(const T* data, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride,
                 const Body& body) {
    MatrixLayout layout = matrix_layout(rows, cols, row_stride, col_stride);
    Eigen::OuterStride<> outer(layout.outer_stride);
    if (layout.row_major) {
        body(ConstMap<T, Eigen::RowMajor>(data, rows, cols, outer));
    } else {
        body(ConstMap<T, Eigen::ColMajor>(data, rows, cols, outer));
    }
}

// The matrix dims of a batched operation and the bias, shared by every batch.
template <typename T>
struct Problem {
    int64_t n, k, m;
    int64_t a_strides[2], b_strides[2];  // (row, column) strides of one matrix of a and b
    const T* bias;                       // nullptr for none
    int64_t bias_stride;
};

// Rows [row0, row1) and columns [col0, col1) of out = a @ b (+ bias in every row) for one
// matrix; out is row-major with row stride m.
template <typename T>
void gemm_one(const Problem<T>& p, const T* a, const T* b, T* out, int64_t row0, int64_t row1,
              int64_t col0, int64_t col1) {
    int64_t rows = row1 - row0, cols = col1 - col0;
    OutMap<T> c(out + row0 * p.m + col0, rows, cols,
                Eigen::OuterStride<>(std::max<int64_t>(p.m, 1)));
    // Eigen's GEMM accumulates (c += a b) after zeroing c, so starting from the bias instead
    // of zero fuses linear's bias add into the product at no extra pass over c.
    if (p.bias) {
        Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>, Eigen::Unaligned,
                   Eigen::InnerStride<>>
            bias(p.bias + col0 * p.bias_stride, 1, cols, Eigen::InnerStride<>(p.bias_stride));
        c.rowwise() = bias;
    } else {
        c.setZero();
    }
    if (p.k == 0) return;
    const T* a_rows = a + row0 * p.a_strides[0];
    const T* b_cols = b + col0 * p.b_strides[1];
    with_matrix(a_rows, rows, p.k, p.a_strides[0], p.a_strides[1], [&](const auto& lhs) {
        with_matrix(b_cols, p.k, cols, p.b_strides[0], p.b_strides[1],
                    [&](const auto& rhs) { c.noalias() += lhs * rhs; });
    });
}

// Whether out = a @ b (+ bias) runs as small_gemm: float, under kSplitWork multiply-adds (one
// thread), unit-stride rows of b at least one register tile (16 columns) wide.
template <typename T>
bool small_gemm_applies(const Problem<T>& p) {
    return std::is_same_v<T, float> && p.n * p.k * p.m < kSplitWork && p.b_strides[1] == 1 &&
           p.m >= 2 * kLanes;
}

// out = a @ b (+ bias) for a small product, without Eigen's packing and blocking, which at
// 64 x 64 x 64 cost about as much as the multiply-adds (sgemm_64 ran at 53-61 GFLOP/s against
// 75-92 for PyTorch's OpenBLAS): six rows of a at a time, read in place, times 16-column blocks
// of b in registers (row_tiles.h's gemm_tile). b's columns past the last whole block go through
// the same tile from a zero-padded copy.
template <typename T>
void small_gemm(const Problem<T>& p, const T* a, const T* b, T* out) {
    constexpr int64_t kRows = 6, kWidth = 2 * kLanes;
    const int64_t whole = p.m / kWidth * kWidth, rest = p.m - whole;
    thread_local std::vector<T> tail;
    if (rest > 0) {
        tail.assign(size_t(p.k * kWidth), T(0));
        for (int64_t r = 0; r < p.k; ++r)
            std::copy(b + r * p.b_strides[0] + whole, b + r * p.b_strides[0] + p.m,
                      tail.data() + r * kWidth);
    }
    for (int64_t i0 = 0; i0 < p.n; i0 += kRows) {
        const int64_t rows = std::min(kRows, p.n - i0);
        const T* a_rows = a + i0 * p.a_strides[0];
        GemmTile<T> tile = gemm_tile_for<T>(rows);
        T* c = out + i0 * p.m;
        for (int64_t j0 = 0; j0 < whole; j0 += kWidth)
            tile(a_rows, p.a_strides[1], p.a_strides[0], b + j0, p.b_strides[0], p.k, c + j0, p.m);
        if (rest > 0) {
            T last[kRows * kWidth];
            tile(a_rows, p.a_strides[1], p.a_strides[0], tail.data(), kWidth, p.k, last, kWidth);
            for (int64_t j = 0; j < rows; ++j)
                std::copy(last + j * kWidth, last + j * kWidth + rest, c + j * p.m + whole);
        }
        if (p.bias)
            for (int64_t j = 0; j < rows; ++j)
                for (int64_t col = 0; col < p.m; ++col)
                    c[j * p.m + col] += p.bias[col * p.bias_stride];
    }
}

// The batch part (all dims but the last two) of a view, for batch offsets.
StridedView batch_part(const StridedView& view) {
    StridedView batch = view;
    batch.ndim = view.ndim - 2;
    return batch;
}

// Parallel over the batch when every thread gets a fair share of whole products: one thread
// per product is the most efficient way to run a GEMM.
bool parallel_over_batch(int64_t batches, int64_t n, int64_t k, int64_t m) {
    int64_t threads = get_num_threads();
    if (threads <= 1 || batches < threads) return false;
    bool small = n * k * m < kSplitWork * 8;
    return small || batches % threads == 0 || batches >= 4 * threads;
}

// One product split into a panel of output rows (or columns, whichever dim is longer) per
// thread, each panel a single-threaded Eigen GEMM. Eigen's own parallel GEMM makes its threads
// busy-wait for each other after every block; on a machine whose cores are shared that
// collapses (measured 3-15x slower than one thread at n = 256..1024 on the 2-core benchmark
// machine while another process ran), whereas panels meet only once, at the end.
template <typename T>
void gemm_split(const Problem<T>& p, const T* a, const T* b, T* out) {
    int64_t threads = get_num_threads();
    bool by_rows = p.n >= p.m;
    int64_t length = by_rows ? p.n : p.m;
    if (small_gemm_applies(p)) return small_gemm(p, a, b, out);
    if (threads <= 1 || p.n * p.k * p.m < kSplitWork || length < 2 * kPanelAlign) {
        gemm_one(p, a, b, out, 0, p.n, 0, p.m);
        return;
    }
    // Panel edges on multiples of kPanelAlign keep the GEMM's register tiles whole.
    int64_t aligned = (length + kPanelAlign - 1) / kPanelAlign;
    parallel_for(0, aligned, 1, [&](int64_t lo, int64_t hi) {
        int64_t first = lo * kPanelAlign, last = std::min(length, hi * kPanelAlign);
        if (by_rows) {
            gemm_one(p, a, b, out, first, last, 0, p.m);
        } else {
            gemm_one(p, a, b, out, 0, p.n, first, last);
        }
    });
}

template <typename T>
void matmul_typed(const StridedView& a, const StridedView& b, const StridedView& bias,
                  const StridedView& out) {
    int nd = out.ndim;
    Problem<T> p{out.shape[nd - 2],
                 a.shape[nd - 1],
                 out.shape[nd - 1],
                 {a.strides[nd - 2], a.strides[nd - 1]},
                 {b.strides[nd - 2], b.strides[nd - 1]},
                 bias.data ? bias.ptr<const T>() : nullptr,
                 bias.ndim ? bias.strides[0] : 1};
    if (p.n == 0 || p.m == 0) return;
    StridedView a_batch = batch_part(a), b_batch = batch_part(b);
    int64_t batches = batch_part(out).numel();
    const T* a_data = a.ptr<const T>();
    const T* b_data = b.ptr<const T>();
    T* out_data = out.ptr<T>();
    auto run = [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
            gemm_split(p, a_data + strided_offset(a_batch, i), b_data + strided_offset(b_batch, i),
                       out_data + i * p.n * p.m);
        }
    };
    if (parallel_over_batch(batches, p.n, p.k, p.m)) {
        parallel_for(0, batches, 1, run);
    } else {
        run(0, batches);
    }
}

}  // namespace

void matmul_forward(const StridedView& a, const StridedView& b, const StridedView& bias,
                    const StridedView& out) {
    dispatch_floating(out.dtype, "matmul", [&]<typename T>() { matmul_typed<T>(a, b, bias, out); });
}

}  // namespace lumen::cpu
