// CPU fused attention (FlashAttention-2: Dao, 2023, Algorithms 1 and 2), tile by tile with Eigen
// GEMMs on row-major maps of the operands (no copies of q, k, v).
//
// Forward, per batch element and tile of kRows query rows: for each tile of kCols keys,
// S = q k^T, s = scale S + bias (causal entries -inf), the running row max m and normaliser l
// updated online (acc and l rescaled by e^(m_old - m_new)), P = e^(s - m) dropped by the map's
// mask, acc += P v. At the end out = acc / l and lse = m + log l. Nothing of size N x M exists.
//
// Backward, per batch element (or group of elements sharing a bias slice, when the bias needs
// a gradient, so their additions into it stay on one thread) and chunk of key tiles: for each
// key tile, for each query tile, P = e^(s - lse) recomputed from the saved lse, then
//   dV += (P Z)^T dO,  dP = (dO v^T) Z,  dS = P (dP - delta),  dK += scale dS^T q,
//   dQ += scale dS k,  dBias += dS,
// Z the dropout factor (0 or 1 / (1 - p)) and delta_i = sum_c dO_ic out_ic (Algorithm 2,
// line 4 of FlashAttention-2). dK and dV of a key tile belong to one task; dQ is accumulated in
// place when one task holds all key tiles of an element, else in one buffer per extra chunk,
// summed at the end (the split happens only when there are fewer groups than threads).

// Tuned generically, as ops/cpu/matmul.cpp explains (Eigen's GEMM kernel and -march=native on
// znver3 with GCC).
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#pragma GCC target("tune=generic")
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include <Eigen/Core>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/philox.h"
#include "ops/attention_kernels.h"
#include "ops/dropout_kernels.h"
#include "ops/reduce_kernels.h"

namespace lumen::cpu {

namespace {

constexpr int64_t kRows = 64;   // query rows per tile
constexpr int64_t kCols = 128;  // keys per tile

template <typename T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMap = Eigen::Map<const Matrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using Map = Eigen::Map<Matrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

// The offset of batch element e of a view whose last two dims are (rows, cols).
int64_t batch_offset(const StridedView& view, int64_t e) {
    StridedView batch = view;
    batch.ndim = view.ndim - 2;
    return strided_offset(batch, e);
}

// rows x cols of `view` (batch element e) from row `row`, as a row-major map.
template <typename T>
ConstMap<T> rows_of(const StridedView& view, int64_t e, int64_t row, int64_t rows) {
    const int64_t rs = view.strides[view.ndim - 2];
    return ConstMap<T>(view.ptr<const T>() + batch_offset(view, e) + row * rs, rows,
                       view.shape[view.ndim - 1], Eigen::OuterStride<>(std::max<int64_t>(rs, 1)));
}

// The tile's dropout factors: z[r][c] = 1 / (1 - p) if map entry (e, i0 + r, j0 + c) is kept,
// else 0 (ops/attention_kernels.h gives the element-to-word mapping; under a sample shard a
// row's M entries are M consecutive global elements from shard.global of its first).
template <typename T>
struct DropoutTile {
    const AttentionProblem& p;
    T keep, factor;
    std::vector<uint32_t> words;
    explicit DropoutTile(const AttentionProblem& problem)
        : p(problem),
          keep(T(1.0 - problem.dropout_p)),
          factor(problem.dropout_p < 1.0 ? T(1.0 / (1.0 - problem.dropout_p)) : T(0)) {}

    void fill(int64_t e, int64_t i0, int64_t rows, int64_t j0, int64_t cols, T* z, int64_t ldz) {
        constexpr int64_t kPer = kUniformsPerBlock<T>;
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t first = p.shard.global((e * p.n + i0 + r) * p.m) + j0;
            const int64_t block0 = first / kPer, blocks = (first + cols - 1) / kPer - block0 + 1;
            words.resize(size_t(4 * blocks));
            philox_words(p.seed, p.offset + uint64_t(block0), blocks, words.data());
            T* zr = z + r * ldz;
            for (int64_t c = 0; c < cols; ++c) {
                const int64_t idx = first + c;
                zr[c] = uniform_at<T>(words.data() + 4 * (idx / kPer - block0), idx % kPer) < keep
                            ? factor
                            : T(0);
            }
        }
    }
};

// s = scale S + bias, causal entries -inf, for the tile at (i0, j0) of element e.
template <typename T>
void finish_scores(const AttentionProblem& p, const StridedView& bias, int64_t e, int64_t i0,
                   int64_t rows, int64_t j0, int64_t cols, Matrix<T>& s) {
    const T scale = T(p.scale);
    const T* b = nullptr;
    int64_t bsi = 0, bsj = 0;
    if (p.has_bias) {
        bsi = bias.strides[bias.ndim - 2], bsj = bias.strides[bias.ndim - 1];
        b = bias.ptr<const T>() + batch_offset(bias, e) + i0 * bsi + j0 * bsj;
    }
    for (int64_t r = 0; r < rows; ++r) {
        T* sr = s.data() + r * s.cols();
        if (b) {
            const T* br = b + r * bsi;
            if (bsj == 1) {
                for (int64_t c = 0; c < cols; ++c) sr[c] = sr[c] * scale + br[c];
            } else {
                for (int64_t c = 0; c < cols; ++c) sr[c] = sr[c] * scale + br[c * bsj];
            }
        } else {
            for (int64_t c = 0; c < cols; ++c) sr[c] *= scale;
        }
        if (p.causal)  // key j0 + c > query i0 + r
            for (int64_t c = std::max<int64_t>(0, i0 + r + 1 - j0); c < cols; ++c)
                sr[c] = -std::numeric_limits<T>::infinity();
    }
}

// The number of key columns query tile [i0, i0 + rows) sees.
int64_t visible_keys(const AttentionProblem& p, int64_t i0, int64_t rows) {
    return p.causal ? std::min(p.m, i0 + rows) : p.m;
}

template <typename T>
void forward_typed(const AttentionProblem& p, const StridedView& q, const StridedView& k,
                   const StridedView& v, const StridedView& bias, const StridedView& out,
                   const StridedView& lse) {
    const int64_t tiles = (p.n + kRows - 1) / kRows;
    const bool dropping = p.dropout_p > 0.0;
    parallel_for(0, p.batch * tiles, 1, [&](int64_t lo, int64_t hi) {
        Matrix<T> s(kRows, kCols), acc(kRows, p.dv);
        std::vector<T> row_max(kRows), row_sum(kRows);
        DropoutTile<T> dropout(p);
        Matrix<T> z;
        if (dropping) z.resize(kRows, kCols);
        for (int64_t item = lo; item < hi; ++item) {
            const int64_t e = item / tiles, i0 = (item % tiles) * kRows;
            const int64_t rows = std::min(kRows, p.n - i0);
            ConstMap<T> qt = rows_of<T>(q, e, i0, rows);
            acc.topRows(rows).setZero();
            std::fill(row_max.begin(), row_max.end(), -std::numeric_limits<T>::infinity());
            std::fill(row_sum.begin(), row_sum.end(), T(0));
            const int64_t keys = visible_keys(p, i0, rows);
            for (int64_t j0 = 0; j0 < keys; j0 += kCols) {
                const int64_t cols = std::min(kCols, keys - j0);
                Map<T> st(s.data(), rows, cols, Eigen::OuterStride<>(kCols));
                st.noalias() = qt * rows_of<T>(k, e, j0, cols).transpose();
                finish_scores<T>(p, bias, e, i0, rows, j0, cols, s);
                for (int64_t r = 0; r < rows; ++r) {
                    T* sr = s.data() + r * kCols;
                    const T tile_max = vec::extremum<true>(sr, cols);
                    const T new_max = std::max(row_max[size_t(r)], tile_max);
                    // All -inf so far: subtract 0, so that the entries give e^-inf = 0, not NaN.
                    const T shift = new_max == -std::numeric_limits<T>::infinity() ? T(0) : new_max;
                    T sum = 0;
                    for (int64_t c = 0; c < cols; ++c) {
                        sr[c] = vec::exp_nonpositive(T(sr[c] - shift));
                        sum += sr[c];
                    }
                    const T rescale = vec::exp_nonpositive(T(row_max[size_t(r)] - shift));
                    if (rescale != T(1)) acc.row(r) *= rescale;
                    row_sum[size_t(r)] = row_sum[size_t(r)] * rescale + sum;
                    row_max[size_t(r)] = new_max;
                }
                if (dropping) {
                    dropout.fill(e, i0, rows, j0, cols, z.data(), kCols);
                    st.array() *= Map<T>(z.data(), rows, cols, Eigen::OuterStride<>(kCols)).array();
                }
                acc.topRows(rows).noalias() += st * rows_of<T>(v, e, j0, cols);
            }
            T* o = out.ptr<T>() + (e * p.n + i0) * p.dv;
            T* l = lse.ptr<T>() + e * p.n + i0;
            for (int64_t r = 0; r < rows; ++r) {
                const T norm = row_sum[size_t(r)];
                for (int64_t c = 0; c < p.dv; ++c) o[r * p.dv + c] = acc(r, c) / norm;
                l[r] = row_max[size_t(r)] + std::log(norm);
            }
        }
    });
}

// Batch elements whose backward runs on one task: all elements that share a slice of the bias
// when the bias gets a gradient (they add into the same memory), else one element each.
std::vector<std::vector<int64_t>> element_groups(const AttentionProblem& p, const StridedView& bias,
                                                 bool bias_grad) {
    std::vector<std::vector<int64_t>> groups;
    if (!bias_grad) {
        groups.resize(size_t(p.batch));
        for (int64_t e = 0; e < p.batch; ++e) groups[size_t(e)] = {e};
        return groups;
    }
    std::map<int64_t, size_t> slot;
    for (int64_t e = 0; e < p.batch; ++e) {
        auto [it, added] = slot.emplace(batch_offset(bias, e), groups.size());
        if (added) groups.emplace_back();
        groups[it->second].push_back(e);
    }
    return groups;
}

template <typename T>
void backward_typed(const AttentionProblem& p, const StridedView& q, const StridedView& k,
                    const StridedView& v, const StridedView& bias, const StridedView& out,
                    const StridedView& lse, const StridedView& grad_out, const StridedView& grad_q,
                    const StridedView& grad_k, const StridedView& grad_v,
                    const StridedView& grad_bias) {
    const bool bias_grad = p.has_bias && grad_bias.data != nullptr;
    const bool dropping = p.dropout_p > 0.0;
    const std::vector<std::vector<int64_t>> groups = element_groups(p, bias, bias_grad);
    const int64_t key_tiles = (p.m + kCols - 1) / kCols;
    const int64_t group_count = int64_t(groups.size());
    // Chunks of key tiles per group: enough tasks for every thread.
    const int64_t chunks =
        std::clamp<int64_t>((get_num_threads() + group_count - 1) / group_count, 1, key_tiles);
    const int64_t tiles_per_chunk = (key_tiles + chunks - 1) / chunks;
    // dQ of chunk c > 0 goes to extra[c - 1], summed into grad_q at the end.
    const int64_t q_size = p.batch * p.n * p.d;
    std::vector<T> extra(size_t((chunks - 1) * q_size), T(0));
    T* gq_all = grad_q.ptr<T>();
    std::fill(gq_all, gq_all + q_size, T(0));

    parallel_for(0, group_count * chunks, 1, [&](int64_t lo, int64_t hi) {
        Matrix<T> s(kRows, kCols), dp(kRows, kCols), dk(kCols, p.d), dv(kCols, p.dv), z;
        if (dropping) z.resize(kRows, kCols);
        std::vector<T> delta(size_t(p.n));
        DropoutTile<T> dropout(p);
        for (int64_t item = lo; item < hi; ++item) {
            const std::vector<int64_t>& group = groups[size_t(item / chunks)];
            const int64_t chunk = item % chunks;
            const int64_t first_tile = chunk * tiles_per_chunk;
            const int64_t last_tile = std::min(key_tiles, first_tile + tiles_per_chunk);
            if (first_tile >= last_tile) continue;
            for (int64_t e : group) {
                // delta_i = sum_c dO_ic out_ic
                const T* go = grad_out.ptr<const T>() + batch_offset(grad_out, e);
                const int64_t go_rs = grad_out.strides[grad_out.ndim - 2];
                const T* o = out.ptr<const T>() + e * p.n * p.dv;
                for (int64_t i = 0; i < p.n; ++i) {
                    T sum = 0;
                    for (int64_t c = 0; c < p.dv; ++c) sum += go[i * go_rs + c] * o[i * p.dv + c];
                    delta[size_t(i)] = sum;
                }
                const T* l = lse.ptr<const T>() + e * p.n;
                T* gq = (chunk == 0 ? gq_all : extra.data() + (chunk - 1) * q_size) + e * p.n * p.d;
                for (int64_t tile = first_tile; tile < last_tile; ++tile) {
                    const int64_t j0 = tile * kCols, cols = std::min(kCols, p.m - j0);
                    ConstMap<T> kt = rows_of<T>(k, e, j0, cols), vt = rows_of<T>(v, e, j0, cols);
                    dk.topRows(cols).setZero();
                    dv.topRows(cols).setZero();
                    // Causal: query rows before j0 see none of these keys.
                    const int64_t i_first = p.causal ? j0 / kRows * kRows : 0;
                    for (int64_t i0 = i_first; i0 < p.n; i0 += kRows) {
                        const int64_t rows = std::min(kRows, p.n - i0);
                        ConstMap<T> qt = rows_of<T>(q, e, i0, rows);
                        ConstMap<T> got = rows_of<T>(grad_out, e, i0, rows);
                        Map<T> st(s.data(), rows, cols, Eigen::OuterStride<>(kCols));
                        Map<T> dpt(dp.data(), rows, cols, Eigen::OuterStride<>(kCols));
                        st.noalias() = qt * kt.transpose();
                        finish_scores<T>(p, bias, e, i0, rows, j0, cols, s);
                        for (int64_t r = 0; r < rows; ++r) {  // P = e^(s - lse)
                            T* sr = s.data() + r * kCols;
                            const T shift = l[i0 + r];
                            for (int64_t c = 0; c < cols; ++c)
                                sr[c] = vec::exp_nonpositive(T(sr[c] - shift));
                        }
                        dpt.noalias() = got * vt.transpose();
                        if (dropping) {
                            dropout.fill(e, i0, rows, j0, cols, z.data(), kCols);
                            Map<T> zt(z.data(), rows, cols, Eigen::OuterStride<>(kCols));
                            dpt.array() *= zt.array();
                            // dV += (P Z)^T dO, P Z formed in z
                            zt.array() *= st.array();
                            dv.topRows(cols).noalias() += zt.transpose() * got;
                        } else {
                            dv.topRows(cols).noalias() += st.transpose() * got;
                        }
                        // dS = P (dP - delta), into dp
                        for (int64_t r = 0; r < rows; ++r) {
                            const T* sr = s.data() + r * kCols;
                            T* dr = dp.data() + r * kCols;
                            const T dl = delta[size_t(i0 + r)];
                            for (int64_t c = 0; c < cols; ++c) dr[c] = sr[c] * (dr[c] - dl);
                        }
                        if (bias_grad) {
                            const int64_t bsi = grad_bias.strides[grad_bias.ndim - 2],
                                          bsj = grad_bias.strides[grad_bias.ndim - 1];
                            T* gb = grad_bias.ptr<T>() + batch_offset(grad_bias, e) + i0 * bsi +
                                    j0 * bsj;
                            for (int64_t r = 0; r < rows; ++r)
                                for (int64_t c = 0; c < cols; ++c)
                                    gb[r * bsi + c * bsj] += dp(r, c);
                        }
                        Map<T>(gq + i0 * p.d, rows, p.d, Eigen::OuterStride<>(p.d)).noalias() +=
                            (T(p.scale) * dpt) * kt;
                        dk.topRows(cols).noalias() += dpt.transpose() * qt;
                    }
                    T* gk = grad_k.ptr<T>() + (e * p.m + j0) * p.d;
                    T* gv = grad_v.ptr<T>() + (e * p.m + j0) * p.dv;
                    Map<T>(gk, cols, p.d, Eigen::OuterStride<>(p.d)) =
                        T(p.scale) * dk.topRows(cols);
                    Map<T>(gv, cols, p.dv, Eigen::OuterStride<>(p.dv)) = dv.topRows(cols);
                }
            }
        }
    });
    // Keys of no tile (m = 0): grad_k and grad_v are empty. The extra dQ chunks are summed.
    for (int64_t c = 0; c + 1 < chunks; ++c) {
        const T* x = extra.data() + c * q_size;
        parallel_for(0, q_size, kGrainSize, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) gq_all[i] += x[i];
        });
    }
}

}  // namespace

void attention_forward(const AttentionProblem& p, const StridedView& q, const StridedView& k,
                       const StridedView& v, const StridedView& bias, const StridedView& out,
                       const StridedView& lse) {
    dispatch_floating(q.dtype, "scaled_dot_product_attention",
                      [&]<typename T>() { forward_typed<T>(p, q, k, v, bias, out, lse); });
}

void attention_backward(const AttentionProblem& p, const StridedView& q, const StridedView& k,
                        const StridedView& v, const StridedView& bias, const StridedView& out,
                        const StridedView& lse, const StridedView& grad_out,
                        const StridedView& grad_q, const StridedView& grad_k,
                        const StridedView& grad_v, const StridedView& grad_bias) {
    dispatch_floating(q.dtype, "scaled_dot_product_attention", [&]<typename T>() {
        backward_typed<T>(p, q, k, v, bias, out, lse, grad_out, grad_q, grad_k, grad_v, grad_bias);
    });
}

}  // namespace lumen::cpu
