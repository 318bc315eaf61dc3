// Register tiles shared by the direct row kernels (ops/cpu/conv_rows.cpp), the Winograd
// convolution (ops/cpu/conv_winograd.cpp) and small GEMMs (ops/cpu/matmul.cpp): kLanes values as one vector (GCC and Clang vector
// extensions: one AVX2 register for float, two for double; SSE registers in a generic build),
// and a multiply-add tile of up to 8 such vectors held in registers.
#pragma once

#include <cstdint>
#include <cstring>

namespace lumen::cpu {

constexpr int64_t kLanes = 8;

template <typename T>
struct BlockOf;
template <>
struct BlockOf<float> {
    typedef float type __attribute__((vector_size(kLanes * sizeof(float))));
    typedef float unaligned
        __attribute__((vector_size(kLanes * sizeof(float)), aligned(4), may_alias));
};
template <>
struct BlockOf<double> {
    typedef double type __attribute__((vector_size(kLanes * sizeof(double))));
    typedef double unaligned
        __attribute__((vector_size(kLanes * sizeof(double)), aligned(8), may_alias));
};
template <typename T>
inline void load_block(const T* from, typename BlockOf<T>::type& block) {
    std::memcpy(&block, from, sizeof(block));
}

// The sum of a block's lanes, in a fixed order.
template <typename T>
inline T lane_sum(const typename BlockOf<T>::type& lane) {
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
           ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// acc[j][0..NB kLanes) += sum over rows r and taps kw of w[r, kw][j] rows[offsets[r] + kw
// dilation + 0..NB kLanes), for CO output channels j: CO x NB blocks in registers, 8 for
// CO x NB = 8, enough independent sums to cover the multiply-add latency. w holds the
// (tap, channel) pairs `channels` apart per tap. With taps_w = 1 and rows `k` apart this is a
// GEMM tile: acc (CO x NB kLanes) += w^T (CO x rows) rows (rows x NB kLanes).
template <typename T, int CO, int NB>
void register_tile(const T* rows, const int64_t* offsets, int64_t kernel_rows, int64_t taps_w,
                   int64_t dilation, const T* w, int64_t channels, T* acc, int64_t acc_stride) {
    using V = typename BlockOf<T>::type;
    using Unaligned = typename BlockOf<T>::unaligned;
    constexpr int64_t B = kLanes;
    V a[CO][NB];
#pragma GCC unroll 8
    for (int j = 0; j < CO; ++j)
#pragma GCC unroll 8
        for (int k = 0; k < NB; ++k)
            a[j][k] = *reinterpret_cast<const Unaligned*>(acc + j * acc_stride + k * B);
    for (int64_t r = 0; r < kernel_rows; ++r) {
        const T* row = rows + offsets[r];
        const T* wr = w + r * taps_w * channels;
        for (int64_t kw = 0; kw < taps_w; ++kw) {
            V x[NB];
#pragma GCC unroll 8
            for (int k = 0; k < NB; ++k)
                x[k] = *reinterpret_cast<const Unaligned*>(row + kw * dilation + k * B);
#pragma GCC unroll 8
            for (int j = 0; j < CO; ++j) {
                const T v = wr[kw * channels + j];
                const V wj = {v, v, v, v, v, v, v, v};
#pragma GCC unroll 8
                for (int k = 0; k < NB; ++k) a[j][k] += wj * x[k];
            }
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < CO; ++j)
#pragma GCC unroll 8
        for (int k = 0; k < NB; ++k)
            *reinterpret_cast<Unaligned*>(acc + j * acc_stride + k * B) = a[j][k];
}

// c[j][0..NB kLanes) = sum over r < k of a[r a_stride + j a_step] b[r b_stride + 0..NB kLanes)
// for CO columns j of a: a GEMM tile (C = A^T B, A k x CO, B k x NB kLanes) in registers, with
// none of register_tile's kernel rows and taps. a_step 1: A^T's rows are packed; a_stride 1 and
// a_step = a row-major matrix's row stride: C = A B for CO rows of A, read in place.
template <typename T, int CO, int NB>
void gemm_tile(const T* a, int64_t a_stride, int64_t a_step, const T* b, int64_t b_stride,
               int64_t k, T* c, int64_t c_stride) {
    using V = typename BlockOf<T>::type;
    using Unaligned = typename BlockOf<T>::unaligned;
    V sum[CO][NB] = {};
    for (int64_t r = 0; r < k; ++r, a += a_stride, b += b_stride) {
        V x[NB];
#pragma GCC unroll 8
        for (int i = 0; i < NB; ++i) x[i] = *reinterpret_cast<const Unaligned*>(b + i * kLanes);
#pragma GCC unroll 8
        for (int j = 0; j < CO; ++j) {
            const T v = a[j * a_step];
            const V aj = {v, v, v, v, v, v, v, v};
#pragma GCC unroll 8
            for (int i = 0; i < NB; ++i) sum[j][i] += aj * x[i];
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < CO; ++j)
#pragma GCC unroll 8
        for (int i = 0; i < NB; ++i)
            *reinterpret_cast<Unaligned*>(c + j * c_stride + i * kLanes) = sum[j][i];
}

template <typename T>
using GemmTile = void (*)(const T*, int64_t, int64_t, const T*, int64_t, int64_t, T*, int64_t);
// gemm_tile for co = 1..6 columns of A, 2 blocks wide.
template <typename T>
GemmTile<T> gemm_tile_for(int64_t co) {
    switch (co) {
        case 1: return &gemm_tile<T, 1, 2>;
        case 2: return &gemm_tile<T, 2, 2>;
        case 3: return &gemm_tile<T, 3, 2>;
        case 4: return &gemm_tile<T, 4, 2>;
        case 5: return &gemm_tile<T, 5, 2>;
        default: return &gemm_tile<T, 6, 2>;
    }
}

// The tile for co channels of nb blocks: nb = 8 / co for the first channels of a row (1, 2 or 4
// channels per tile), and the same nb for the rest, which may be fewer.
template <typename T>
using RegisterTile = void (*)(const T*, const int64_t*, int64_t, int64_t, int64_t, const T*,
                              int64_t, T*, int64_t);
template <typename T>
RegisterTile<T> register_tile_for(int64_t co, int64_t nb) {
    if (nb == 8) return &register_tile<T, 1, 8>;
    if (nb == 4) return co == 1 ? &register_tile<T, 1, 4> : &register_tile<T, 2, 4>;
    switch (co) {
        case 1: return &register_tile<T, 1, 2>;
        case 2: return &register_tile<T, 2, 2>;
        case 3: return &register_tile<T, 3, 2>;
        default: return &register_tile<T, 4, 2>;
    }
}

}  // namespace lumen::cpu
