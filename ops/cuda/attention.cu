// CUDA fused attention with the semantics of ops/cpu/attention.cpp (FlashAttention-2: Dao, 2023,
// "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning",
// Algorithms 1 and 2). Tiles are 32 x 32 (query rows x keys, or rows x 32 head-dim columns);
// a block of 4 warps holds entries (warp + 4 k, lane), k < 8, of every tile, so each row of a
// score tile lives in one warp and its max and sum are warp shuffles. Operands are staged
// through shared memory 32 columns at a time, so any D and Dv work.
//
// Forward (Algorithm 1): a block per (batch element, 32 query rows, 64 output columns). For each
// tile of 32 keys: s = scale q k^T + bias (-inf where masked), the running row max m and sum l
// updated online (the accumulator rescaled by e^(m_old - m_new)), acc += (e^(s - m) Z) v.
// Then out = acc / l, lse = m + log l. The accumulator stays in registers; for Dv > 64 each
// group of 64 output columns has its own block, which recomputes the scores.
//
// Backward (Algorithm 2): a block per (batch element, 32 keys), over the query tiles that see
// them: P = e^(s - lse), dP = (dO v^T) Z, delta = rowsum(dO out), dS = P (dP - delta). Then
// dV += (P Z)^T dO and dK += scale dS^T q, read-modify-written in grad_v, grad_k (those rows
// belong to this block alone), and dQ += scale dS k and dBias += dS through atomicAdd (other
// key tiles, and batch elements sharing a bias slice, add into the same memory). The three
// gradients are zeroed first. Z is the dropout factor: 0 or 1 / (1 - p), else 1.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "core/philox.h"
#include "ops/attention_kernels.h"

namespace lumen::cuda {
namespace {

constexpr int kTile = 32;                     // rows, keys and columns of a tile
constexpr int kWarps = 4;                     // a block's warps
constexpr int kThreads = kWarps * kWarpSize;  // 128
constexpr int kPerThread = kTile / kWarps;    // entries (warp + 4 k, lane) of a tile
constexpr int kForwardColumns = 64;           // output columns of a forward block
constexpr int kChunks = kForwardColumns / kTile;
constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // grid-stride loops beyond

// Padded by one column: a warp reading a column (tile[lane][c]) hits distinct banks.
template <typename T>
using Tile = T[kTile][kTile + 1];

// An operand of ops/attention_kernels.h: batch dims, then (rows, cols).
template <typename T>
struct Operand {
    T* data = nullptr;
    StridedView batch;  // the batch dims alone: strided_offset(batch, e) is element e's offset
    int64_t row_stride = 0, col_stride = 0;

    // Row `row` of batch element e.
    __device__ T* row(int64_t e, int64_t row) const {
        return data + strided_offset(batch, e) + row * row_stride;
    }
};

template <typename T>
Operand<T> operand(const StridedView& view) {
    Operand<T> o;
    if (view.data == nullptr) return o;
    o.data = view.ptr<T>();
    o.batch = view;
    o.batch.ndim = view.ndim - 2;
    o.row_stride = view.strides[view.ndim - 2];
    o.col_stride = view.strides[view.ndim - 1];
    return o;
}

// The views the kernels read row by row with column stride 1 (ops/attention_kernels.h).
[[maybe_unused]] bool unit_columns(const StridedView& view) {
    return view.ndim >= 3 && (view.strides[view.ndim - 1] == 1 || view.shape[view.ndim - 1] <= 1);
}

// The views the kernels index as contiguous (an empty one holds nothing to index).
[[maybe_unused]] bool dense(const StridedView& view) { return view.numel() == 0 || is_dense(view); }

// The dropout of the map (ops/attention_kernels.h): entry idx = (e N + i) M + j, drawn as
// global element shard.global(idx) (the identity unless drawn under a sample shard).
template <typename T>
struct Dropout {
    bool active = false;
    uint64_t seed = 0, offset = 0;
    T keep = 1, factor = 1;
    ShardMap shard;

    // Z of entry idx: factor if its uniform is below keep, else 0 (ops/cuda/dropout.cu's test).
    __device__ T at(int64_t idx) const {
        constexpr int kPer = kUniformsPerBlock<T>;
        const int64_t global = shard.global(idx);
        const Philox4 bits = philox4x32(seed, offset + uint64_t(global / kPer));
        return uniform_at<T>(bits.x, global % kPer) < keep ? factor : T(0);
    }
};

template <typename T>
Dropout<T> dropout_of(const AttentionProblem& p) {
    const double keep = 1.0 - p.dropout_p;
    return {
        p.dropout_p > 0.0, p.seed, p.offset, T(keep), keep > 0.0 ? T(1.0 / keep) : T(0), p.shard};
}

unsigned grid_of(int64_t items) { return unsigned(std::clamp<int64_t>(items, 1, kMaxBlocks)); }

template <typename T>
__device__ __forceinline__ T negative_infinity() {
    return -std::numeric_limits<T>::infinity();
}

// tile[r][c] = a[r][c0 + c] for r < rows and c0 + c < width, else 0; a row-major with row
// stride a_rs. Thread (warp, lane) loads entries (warp + 4 k, lane): coalesced along rows.
template <typename T>
__device__ void load_tile(Tile<T>& tile, const T* a, int64_t a_rs, int64_t rows, int64_t width,
                          int64_t c0) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
        const int r = warp + kWarps * k;
        tile[r][lane] = r < rows && c0 + lane < width ? a[r * a_rs + c0 + lane] : T(0);
    }
}

// dot[k] = sum_c a[warp + 4 k][c] b[lane][c] over c < width: entries of a b^T for up to 32 rows
// of a and b (a_rows, b_rows; zero beyond), staged in a_tile and b_tile 32 columns at a time.
template <typename T>
__device__ void dot_rows(T (&dot)[kPerThread], const T* a, int64_t a_rs, int64_t a_rows, const T* b,
                         int64_t b_rs, int64_t b_rows, int64_t width, Tile<T>& a_tile,
                         Tile<T>& b_tile) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) dot[k] = 0;
    for (int64_t c0 = 0; c0 < width; c0 += kTile) {
        __syncthreads();  // the tiles' previous readers are done
        load_tile(a_tile, a, a_rs, a_rows, width, c0);
        load_tile(b_tile, b, b_rs, b_rows, width, c0);
        __syncthreads();
#pragma unroll 8
        for (int c = 0; c < kTile; ++c) {
            const T bv = b_tile[lane][c];
#pragma unroll
            for (int k = 0; k < kPerThread; ++k) dot[k] += a_tile[warp + kWarps * k][c] * bv;
        }
    }
}

// ---- forward ----

// The running softmax of rows warp + 4 k of a forward block (each lane of the warp holds the
// same max and sum) and their output accumulator (columns c0 + 32 h + lane).
template <typename T>
struct RowState {
    T max[kPerThread], sum[kPerThread], acc[kChunks][kPerThread];
};

// Folds the dot products s = q k^T of rows i0.. and keys j0.. into the running softmax: the
// scores scale s + bias (-inf where masked) update the row max m and the undropped sum l
// online, the accumulator is rescaled by e^(m_old - m_new), and p_tile = e^(score - m) Z.
template <typename T>
__device__ void online_softmax(RowState<T>& state, const T (&s)[kPerThread],
                               const AttentionProblem& p, int64_t e, int64_t i0, int64_t rows,
                               int64_t j0, int64_t cols, const Operand<const T>& bias,
                               const Dropout<T>& dropout, Tile<T>& p_tile) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const T* be = bias.data ? bias.row(e, i0) : nullptr;
#pragma unroll
    for (int kk = 0; kk < kPerThread; ++kk) {
        const int r = warp + kWarps * kk;
        const int64_t i = i0 + r, j = j0 + lane;
        const bool seen = r < rows && lane < cols && !(p.causal && j > i);
        T score = negative_infinity<T>();
        if (seen) {
            score = s[kk] * T(p.scale);
            if (be) score += be[r * bias.row_stride + j * bias.col_stride];
        }
        const T new_max = nan_max(state.max[kk], warp_max(score));
        // All -inf so far: subtract 0, so that the entries give e^-inf = 0, not NaN.
        const T shift = new_max == negative_infinity<T>() ? T(0) : new_max;
        const T prob = exp(score - shift), rescale = exp(state.max[kk] - shift);
        state.sum[kk] = state.sum[kk] * rescale + warp_sum(prob);
        state.max[kk] = new_max;
#pragma unroll
        for (int h = 0; h < kChunks; ++h) state.acc[h][kk] *= rescale;
        const T z = dropout.active && seen ? dropout.at((e * p.n + i) * p.m + j) : T(1);
        p_tile[r][lane] = prob * z;
    }
}

// acc += p_tile v for the 32 keys at v_rows (cols of them) and output columns c0.., v staged
// 32 columns at a time through `staged`. Ends with a barrier.
template <typename T>
__device__ void add_values(RowState<T>& state, const Tile<T>& p_tile, const T* v_rows, int64_t v_rs,
                           int64_t cols, int64_t dv, int64_t c0, Tile<T>& staged) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
#pragma unroll
    for (int h = 0; h < kChunks; ++h) {
        if (c0 + h * kTile >= dv) break;  // the same for the whole block
        __syncthreads();                  // p_tile is written; staged's previous readers are done
        load_tile(staged, v_rows, v_rs, cols, dv, c0 + h * kTile);
        __syncthreads();
#pragma unroll 8
        for (int j = 0; j < kTile; ++j) {
            const T vj = staged[j][lane];
#pragma unroll
            for (int kk = 0; kk < kPerThread; ++kk)
                state.acc[h][kk] += p_tile[warp + kWarps * kk][j] * vj;
        }
    }
    __syncthreads();  // the next key tile rewrites p_tile and staged
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(AttentionProblem p, Operand<const T> q, Operand<const T> k,
                             Operand<const T> v, Operand<const T> bias, Dropout<T> dropout, T* out,
                             T* lse, int64_t row_tiles, int64_t column_tiles) {
    __shared__ Tile<T> a_tile, b_tile, p_tile;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    for (int64_t item = blockIdx.x; item < p.batch * row_tiles * column_tiles; item += gridDim.x) {
        const int64_t e = item / (row_tiles * column_tiles);
        const int64_t i0 = item / column_tiles % row_tiles * kTile;
        const int64_t c0 = item % column_tiles * kForwardColumns;
        const int64_t rows = std::min<int64_t>(kTile, p.n - i0);
        RowState<T> state = {};
#pragma unroll
        for (int kk = 0; kk < kPerThread; ++kk) state.max[kk] = negative_infinity<T>();
        // Causal: keys past the tile's last row are masked for all of its rows.
        const int64_t keys = p.causal ? std::min(p.m, i0 + rows) : p.m;
        for (int64_t j0 = 0; j0 < keys; j0 += kTile) {
            const int64_t cols = std::min<int64_t>(kTile, keys - j0);
            T s[kPerThread];
            dot_rows(s, q.row(e, i0), q.row_stride, rows, k.row(e, j0), k.row_stride, cols, p.d,
                     a_tile, b_tile);
            online_softmax(state, s, p, e, i0, rows, j0, cols, bias, dropout, p_tile);
            add_values(state, p_tile, v.row(e, j0), v.row_stride, cols, p.dv, c0, a_tile);
        }
        // out = acc / l (0 / 0 = NaN for a row of only -inf, as softmax), lse = m + log l.
#pragma unroll
        for (int kk = 0; kk < kPerThread; ++kk) {
            const int r = warp + kWarps * kk;
            if (r >= rows) continue;
            const int64_t row = e * p.n + i0 + r;
#pragma unroll
            for (int h = 0; h < kChunks; ++h) {
                const int64_t c = c0 + h * kTile + lane;
                if (c < p.dv) out[row * p.dv + c] = state.acc[h][kk] / state.sum[kk];
            }
            if (c0 == 0 && lane == 0) lse[row] = state.max[kk] + log(state.sum[kk]);
        }
    }
}

// ---- backward ----

// The map's gradients for the tile at (i0, j0) of element e, from s = q k^T and dp = dO v^T:
// pz_tile = P Z and ds_tile = P (dP Z - delta), 0 outside the map and where masked; dBias
// gets ds through atomicAdd. Ends with a barrier.
template <typename T>
__device__ void map_gradients(const AttentionProblem& p, const T (&s)[kPerThread],
                              const T (&dp)[kPerThread], int64_t e, int64_t i0, int64_t rows,
                              int64_t j0, int64_t cols, const T* out, const T* lse,
                              const Operand<const T>& grad_out, const Operand<const T>& bias,
                              const Operand<T>& grad_bias, const Dropout<T>& dropout,
                              Tile<T>& pz_tile, Tile<T>& ds_tile) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const T* be = bias.data ? bias.row(e, i0) : nullptr;
    T* gbe = grad_bias.data ? grad_bias.row(e, i0) : nullptr;
#pragma unroll
    for (int kk = 0; kk < kPerThread; ++kk) {
        const int r = warp + kWarps * kk;
        const int64_t i = i0 + r, j = j0 + lane;
        // delta_i = sum_c dO_ic out_ic (Algorithm 2, line 4), over the warp's lanes.
        T delta = 0;
        if (r < rows) {
            const T* go = grad_out.row(e, i);
            const T* o = out + (e * p.n + i) * p.dv;
            for (int64_t c = lane; c < p.dv; c += kWarpSize) delta += go[c] * o[c];
        }
        delta = warp_sum(delta);
        T pz = 0, ds = 0;
        if (r < rows && lane < cols && !(p.causal && j > i)) {
            T score = s[kk] * T(p.scale);
            if (be) score += be[r * bias.row_stride + j * bias.col_stride];
            const T prob = exp(score - lse[e * p.n + i]);
            const T z = dropout.active ? dropout.at((e * p.n + i) * p.m + j) : T(1);
            pz = prob * z;
            ds = prob * (dp[kk] * z - delta);
            if (gbe) atomicAdd(gbe + r * grad_bias.row_stride + j * grad_bias.col_stride, ds);
        }
        pz_tile[r][lane] = pz;
        ds_tile[r][lane] = ds;
    }
    __syncthreads();
}

// out[j][c] += factor sum_r w[r][j] x[r][c] for j < count, c < width (out row-major, width
// columns): x is up to 32 rows (x_rows) at row stride x_rs, staged 32 columns at a time. Each
// entry of out belongs to one thread ((warp + 4 k, lane) of a chunk): no atomics.
template <typename T>
__device__ void add_transposed_product(T* out, int64_t count, int64_t width, const Tile<T>& w,
                                       const T* x, int64_t x_rs, int64_t x_rows, T factor,
                                       Tile<T>& staged) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    for (int64_t c0 = 0; c0 < width; c0 += kTile) {
        __syncthreads();  // the previous readers of staged are done
        load_tile(staged, x, x_rs, x_rows, width, c0);
        __syncthreads();
        T sum[kPerThread] = {};
#pragma unroll 8
        for (int r = 0; r < kTile; ++r) {
            const T xv = staged[r][lane];
#pragma unroll
            for (int k = 0; k < kPerThread; ++k) sum[k] += w[r][warp + kWarps * k] * xv;
        }
        if (c0 + lane >= width) continue;
#pragma unroll
        for (int k = 0; k < kPerThread; ++k) {
            const int j = warp + kWarps * k;
            if (j < count) out[j * width + c0 + lane] += factor * sum[k];
        }
    }
}

// out[i][c] += factor sum_j w[i][j] x[j][c] for i < count, c < width through atomicAdd (other
// blocks add into the same rows); x as in add_transposed_product.
template <typename T>
__device__ void atomic_add_product(T* out, int64_t count, int64_t width, const Tile<T>& w,
                                   const T* x, int64_t x_rs, int64_t x_rows, T factor,
                                   Tile<T>& staged) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    for (int64_t c0 = 0; c0 < width; c0 += kTile) {
        __syncthreads();
        load_tile(staged, x, x_rs, x_rows, width, c0);
        __syncthreads();
        T sum[kPerThread] = {};
#pragma unroll 8
        for (int j = 0; j < kTile; ++j) {
            const T xv = staged[j][lane];
#pragma unroll
            for (int k = 0; k < kPerThread; ++k) sum[k] += w[warp + kWarps * k][j] * xv;
        }
        if (c0 + lane >= width) continue;
#pragma unroll
        for (int k = 0; k < kPerThread; ++k) {
            const int i = warp + kWarps * k;
            if (i < count) atomicAdd(out + i * width + c0 + lane, factor * sum[k]);
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_backward_kernel(AttentionProblem p, Operand<const T> q, Operand<const T> k,
                              Operand<const T> v, Operand<const T> bias, Dropout<T> dropout,
                              const T* out, const T* lse, Operand<const T> grad_out, T* grad_q,
                              T* grad_k, T* grad_v, Operand<T> grad_bias, int64_t key_tiles) {
    __shared__ Tile<T> a_tile, b_tile, pz_tile, ds_tile;
    const T scale = T(p.scale);
    for (int64_t item = blockIdx.x; item < p.batch * key_tiles; item += gridDim.x) {
        const int64_t e = item / key_tiles, j0 = item % key_tiles * kTile;
        const int64_t cols = std::min<int64_t>(kTile, p.m - j0);
        const T* ke = k.row(e, j0);
        const T* ve = v.row(e, j0);
        T* gk = grad_k + (e * p.m + j0) * p.d;
        T* gv = grad_v + (e * p.m + j0) * p.dv;
        // Causal: query rows before j0 see none of these keys.
        for (int64_t i0 = p.causal ? j0 : 0; i0 < p.n; i0 += kTile) {
            const int64_t rows = std::min<int64_t>(kTile, p.n - i0);
            const T* qi = q.row(e, i0);
            const T* goi = grad_out.row(e, i0);
            T s[kPerThread], dp[kPerThread];
            dot_rows(s, qi, q.row_stride, rows, ke, k.row_stride, cols, p.d, a_tile, b_tile);
            dot_rows(dp, goi, grad_out.row_stride, rows, ve, v.row_stride, cols, p.dv, a_tile,
                     b_tile);
            map_gradients(p, s, dp, e, i0, rows, j0, cols, out, lse, grad_out, bias, grad_bias,
                          dropout, pz_tile, ds_tile);
            // dV += (P Z)^T dO, dK += scale dS^T q, dQ += scale dS k
            add_transposed_product(gv, cols, p.dv, pz_tile, goi, grad_out.row_stride, rows, T(1),
                                   a_tile);
            add_transposed_product(gk, cols, p.d, ds_tile, qi, q.row_stride, rows, scale, a_tile);
            atomic_add_product(grad_q + (e * p.n + i0) * p.d, rows, p.d, ds_tile, ke, k.row_stride,
                               cols, scale, a_tile);
            __syncthreads();  // the next query tile rewrites pz_tile, ds_tile and a_tile
        }
    }
}

template <typename T>
void zero(const StridedView& view, int64_t count) {
    if (count > 0) LUMEN_CUDA_CHECK(cudaMemsetAsync(view.data, 0, size_t(count) * sizeof(T), 0));
}

}  // namespace

void attention_forward(const AttentionProblem& p, const StridedView& q, const StridedView& k,
                       const StridedView& v, const StridedView& bias, const StridedView& out,
                       const StridedView& lse) {
    if (p.batch * p.n == 0) return;
    LUMEN_ASSERT(unit_columns(q) && unit_columns(k) && unit_columns(v) && dense(out) && dense(lse));
    dispatch_floating(q.dtype, "scaled_dot_product_attention", [&]<typename T>() {
        const int64_t row_tiles = (p.n + kTile - 1) / kTile;
        // At least one column group: it writes lse even when Dv = 0.
        const int64_t column_tiles =
            std::max<int64_t>(1, (p.dv + kForwardColumns - 1) / kForwardColumns);
        attention_forward_kernel<T><<<grid_of(p.batch * row_tiles * column_tiles), kThreads>>>(
            p, operand<const T>(q), operand<const T>(k), operand<const T>(v),
            p.has_bias ? operand<const T>(bias) : Operand<const T>{}, dropout_of<T>(p),
            out.ptr<T>(), lse.ptr<T>(), row_tiles, column_tiles);
    });
    LUMEN_CUDA_CHECK_LAUNCH("attention_forward_kernel");
}

void attention_backward(const AttentionProblem& p, const StridedView& q, const StridedView& k,
                        const StridedView& v, const StridedView& bias, const StridedView& out,
                        const StridedView& lse, const StridedView& grad_out,
                        const StridedView& grad_q, const StridedView& grad_k,
                        const StridedView& grad_v, const StridedView& grad_bias) {
    LUMEN_ASSERT(unit_columns(q) && unit_columns(k) && unit_columns(v) && unit_columns(grad_out) &&
                 dense(out) && dense(lse) && dense(grad_q) && dense(grad_k) && dense(grad_v));
    const bool bias_grad = p.has_bias && grad_bias.data != nullptr;
    dispatch_floating(q.dtype, "scaled_dot_product_attention", [&]<typename T>() {
        // The kernel adds into all three (dQ from every key tile through atomics).
        zero<T>(grad_q, p.batch * p.n * p.d);
        zero<T>(grad_k, p.batch * p.m * p.d);
        zero<T>(grad_v, p.batch * p.m * p.dv);
        if (p.batch * p.n * p.m == 0) return;
        const int64_t key_tiles = (p.m + kTile - 1) / kTile;
        attention_backward_kernel<T><<<grid_of(p.batch * key_tiles), kThreads>>>(
            p, operand<const T>(q), operand<const T>(k), operand<const T>(v),
            p.has_bias ? operand<const T>(bias) : Operand<const T>{}, dropout_of<T>(p),
            out.ptr<const T>(), lse.ptr<const T>(), operand<const T>(grad_out), grad_q.ptr<T>(),
            grad_k.ptr<T>(), grad_v.ptr<T>(), bias_grad ? operand<T>(grad_bias) : Operand<T>{},
            key_tiles);
        LUMEN_CUDA_CHECK_LAUNCH("attention_backward_kernel");
    });
}

}  // namespace lumen::cuda
