// CPU 3x3x3 and 3x3 convolutions at stride 1 by Winograd's minimal filtering F(2x2x2, 3x3x3)
// and F(2x2, 3x3) (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR
// 2016, eq. 8, nested over the spatial dims): each 2x2x2 (2x2) block of outputs is computed
// from a 4x4x4 (4x4) input patch d and each filter g as
//     Y = A^T [ sum over input channels of (G g G^T) (.) (B^T d B) ] A     (per dim),
// 64 products per input channel and block instead of 8 x 27 = 216 in 3-D (3.4x fewer
// multiply-adds), 16 instead of 4 x 9 = 36 in 2-D (2.25x). A 2-D convolution is the 3-D case
// with a 1x3x3 kernel: no transform along D.
// The sum over input channels at each of the 64 transform points is a GEMM, run in register
// tiles (gemm_tile, ops/cpu/row_tiles.h). The input gradient is the same computation over grad_y
// with the kernel flipped and the channels' roles swapped; the weight gradient stays with the
// direct kernels or im2col + GEMM.
//
// 1-D F(2, 3) for y_i = sum_k g_k d_{i+k}, i = 0, 1:
//     B^T d = (d0 - d2, d1 + d2, d2 - d1, d1 - d3)
//     G g   = (g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2)
//     A^T m = (m0 + m1 + m2, m1 - m2 - m3)
// The transforms' coefficients are 0, +-1 and +-1/2, so float32 results stay within a few ulps
// of the direct sums' rounding (the tests compare against float64 loops).
//
// A task is a few rows of blocks along W (sample b, output depths 2a..2a+1, heights 2c..): its
// transformed input V[point][ci][block] and products M[point][co][block] stay in cache, each
// U[point] serves about 64 blocks, and every transform runs along a row, 8 blocks per vector.
// Measured against the direct kernels (2 threads, forward / input gradient ms): 32 -> 32
// channels on 32x64x64 30 / 29 against 37 / 38, 64 -> 32 57 / 48 against 75 / 80, 64 -> 64 on
// 16x32x32 12 / 12 against 18 / 18, 128 -> 64 24 / 20 against 36 / 36; on rows of 16 or fewer
// the padded blocks cost more than they save (128 -> 128 on 8x16x16: 15 / 14 against 9 / 9).
#include <algorithm>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/storage.h"
#include "ops/conv_kernels.h"
#include "ops/cpu/conv_flip.h"
#include "ops/cpu/row_tiles.h"

namespace lumen::cpu {

namespace {

ConvDirect winograd_mode = ConvDirect::automatic;

// Blocks per row are padded to a multiple of this: the GEMM tile's width (2 vectors).
constexpr int64_t kTileWidth = 2 * kLanes;
// Output channels per GEMM tile.
constexpr int64_t kTileChannels = 6;
// The GEMMs' width a task aims at (blocks; rows of blocks are grouped up to it).
constexpr int64_t kGemmWidth = 64;

template <typename T>
using Vec = typename BlockOf<T>::type;
// Vectors pass by value between these always-inlined helpers only; GCC's note that a 64-byte
// vector argument's ABI depends on AVX-512 (double's blocks) does not concern them.
#pragma GCC diagnostic ignored "-Wpsabi"
template <typename T>
[[gnu::always_inline]] inline Vec<T> load(const T* p) {
    return *reinterpret_cast<const typename BlockOf<T>::unaligned*>(p);
}
template <typename T>
[[gnu::always_inline]] inline void store(T* p, const Vec<T>& v) {
    *reinterpret_cast<typename BlockOf<T>::unaligned*>(p) = v;
}

// B^T and A^T on four values (vectors of kLanes blocks).
template <typename T>
[[gnu::always_inline]] inline void input_transform(Vec<T>& d0, Vec<T>& d1, Vec<T>& d2, Vec<T>& d3) {
    Vec<T> v0 = d0 - d2, v1 = d1 + d2, v2 = d2 - d1, v3 = d1 - d3;
    d0 = v0, d1 = v1, d2 = v2, d3 = v3;
}
template <typename T>
[[gnu::always_inline]] inline void output_transform(Vec<T>& m0, Vec<T>& m1, const Vec<T>& m2,
                                                    const Vec<T>& m3) {
    Vec<T> y0 = m0 + m1 + m2, y1 = m1 - m2 - m3;
    m0 = y0, m1 = y1;
}

// row[0, length) = the input row `from` (count values) at `padding`, zeros around it (all
// zeros without one), in vector moves: these rows are short (tens of values), and the library
// calls that std::fill and std::copy turn into cost more than the moves.
template <typename T>
void fill_row(T* row, int64_t length, const T* from, int64_t count, int64_t padding) {
    const Vec<T> zero = {};
    int64_t k = 0;
    for (; k + kLanes <= length; k += kLanes) store(row + k, zero);
    for (; k < length; ++k) row[k] = T(0);
    if (!from) return;
    T* to = row + padding;
    for (k = 0; k + kLanes <= count; k += kLanes) store(to + k, load(from + k));
    for (; k < count; ++k) to[k] = from[k];
}

// Transform points and patch rows along D: 4 for a 3x3x3 kernel, 1 (no transform) for 3x3 (a
// 2-D convolution, or a 3-D one with a 1x3x3 kernel, slice by slice).
template <int KD>
constexpr int kDepthPoints = KD == 3 ? 4 : 1;
// Outputs per block along D.
template <int KD>
constexpr int kDepthOutputs = KD == 3 ? 2 : 1;

// The input transform of kLanes blocks e0.. of one channel: rows[i * 4 + j] is patch row (i, j)
// zero-padded (its input position w at w + padding), blocks e0.. start at 2 e0 there; V's
// points (16 per depth point) go to v[point * point_stride].
template <typename T, int KD>
void transform_input_blocks(const T* const* rows, int64_t e0, T* v, int64_t point_stride) {
    constexpr int Z = kDepthPoints<KD>;
    Vec<T> t[Z][4][4];
#pragma GCC unroll 16
    for (int r = 0; r < 4 * Z; ++r) {
        // d0..d3 of block e: row[2e], row[2e + 1], row[2e + 2], row[2e + 3]
        const T* p = rows[r] + 2 * e0;
        Vec<T> lo = load(p), hi = load(p + kLanes), lo2 = load(p + 2), hi2 = load(p + 2 + kLanes);
        Vec<T>* d = t[r / 4][r % 4];
        d[0] = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
        d[1] = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15);
        d[2] = __builtin_shufflevector(lo2, hi2, 0, 2, 4, 6, 8, 10, 12, 14);
        d[3] = __builtin_shufflevector(lo2, hi2, 1, 3, 5, 7, 9, 11, 13, 15);
        input_transform<T>(d[0], d[1], d[2], d[3]);  // along W
    }
#pragma GCC unroll 16
    for (int k = 0; k < 4 * Z; ++k) {  // along H: (i, j, zw) -> (i, zh, zw), k = (i, zw)
        const int i = k / 4, zw = k % 4;
        input_transform<T>(t[i][0][zw], t[i][1][zw], t[i][2][zw], t[i][3][zw]);
    }
    if constexpr (KD == 3) {
#pragma GCC unroll 16
        for (int k = 0; k < 16; ++k) {  // along D, k = (zh, zw)
            const int zh = k / 4, zw = k % 4;
            input_transform<T>(t[0][zh][zw], t[1][zh][zw], t[2][zh][zw], t[3][zh][zw]);
        }
    }
#pragma GCC unroll 64
    for (int point = 0; point < 16 * Z; ++point)
        store(v + point * point_stride, t[point / 16][point / 4 % 4][point % 4]);
}

// The output transform of kLanes blocks of one channel: m[point * point_stride] holds the
// points; out[p][q] receives the 2 x kLanes outputs of output rows (depth p, height 2c + q),
// even and odd interleaved, plus `offset`.
template <typename T, int KD>
void transform_output_blocks(const T* m, int64_t point_stride, T offset,
                             Vec<T> (&out)[kDepthOutputs<KD>][2][2]) {
    constexpr int Z = kDepthPoints<KD>;
    Vec<T> t[Z][4][4];
#pragma GCC unroll 64
    for (int point = 0; point < 16 * Z; ++point)
        t[point / 16][point / 4 % 4][point % 4] = load(m + point * point_stride);
    if constexpr (KD == 3) {
#pragma GCC unroll 16
        for (int k = 0; k < 16; ++k) {  // along D, k = (zh, zw)
            const int zh = k / 4, zw = k % 4;
            output_transform<T>(t[0][zh][zw], t[1][zh][zw], t[2][zh][zw], t[3][zh][zw]);
        }
    }
#pragma GCC unroll 8
    for (int k = 0; k < 4 * kDepthOutputs<KD>; ++k) {  // along H, k = (p, zw)
        const int p = k / 4, zw = k % 4;
        output_transform<T>(t[p][0][zw], t[p][1][zw], t[p][2][zw], t[p][3][zw]);
    }
    const Vec<T> bias = {offset, offset, offset, offset, offset, offset, offset, offset};
#pragma GCC unroll 4
    for (int k = 0; k < 2 * kDepthOutputs<KD>; ++k) {  // along W, k = (p, q)
        const int p = k / 2, q = k % 2;
        Vec<T>* r = t[p][q];
        output_transform<T>(r[0], r[1], r[2], r[3]);
        Vec<T> even = r[0] + bias, odd = r[1] + bias;
        out[p][q][0] = __builtin_shufflevector(even, odd, 0, 8, 1, 9, 2, 10, 3, 11);
        out[p][q][1] = __builtin_shufflevector(even, odd, 4, 12, 5, 13, 6, 14, 7, 15);
    }
}

// U[point][ci][co] = (G (x) G (x) G) weight[co][ci] (G (x) G for KD = 1) at every point.
template <typename T, int KD>
std::vector<T> transform_weights(const T* weight, int64_t out_channels, int64_t in_channels) {
    const T g[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    constexpr int Z = kDepthPoints<KD>;
    std::vector<T> u(size_t(16 * Z * in_channels * out_channels));
    for (int64_t co = 0; co < out_channels; ++co)
        for (int64_t ci = 0; ci < in_channels; ++ci) {
            const T* w = weight + (co * in_channels + ci) * KD * 9;
            T along_w[KD][3][4], along_h[KD][4][4];
            for (int kd = 0; kd < KD; ++kd)
                for (int kh = 0; kh < 3; ++kh)
                    for (int z = 0; z < 4; ++z)
                        along_w[kd][kh][z] = g[z][0] * w[(kd * 3 + kh) * 3] +
                                             g[z][1] * w[(kd * 3 + kh) * 3 + 1] +
                                             g[z][2] * w[(kd * 3 + kh) * 3 + 2];
            for (int kd = 0; kd < KD; ++kd)
                for (int z = 0; z < 4; ++z)
                    for (int zw = 0; zw < 4; ++zw)
                        along_h[kd][z][zw] = g[z][0] * along_w[kd][0][zw] +
                                             g[z][1] * along_w[kd][1][zw] +
                                             g[z][2] * along_w[kd][2][zw];
            for (int zd = 0; zd < Z; ++zd)
                for (int zh = 0; zh < 4; ++zh)
                    for (int zw = 0; zw < 4; ++zw) {
                        int64_t point = (zd * 4 + zh) * 4 + zw;
                        T value = along_h[0][zh][zw];
                        if constexpr (KD == 3)
                            value = g[zd][0] * along_h[0][zh][zw] + g[zd][1] * along_h[1][zh][zw] +
                                    g[zd][2] * along_h[2][zh][zw];
                        u[size_t((point * in_channels + ci) * out_channels + co)] = value;
                    }
        }
    return u;
}

template <typename T, int KD>
void winograd_forward_typed(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
    constexpr int64_t Z = kDepthPoints<KD>, P = kDepthOutputs<KD>, points = 16 * Z;
    const int64_t cin = s.in_channels, cout = s.out_channels;
    const int64_t in_size = s.input_size(), out_size = s.output_size();
    const int64_t rows_d = (s.output[0] + P - 1) / P, rows_h = (s.output[1] + 1) / 2;
    const int64_t blocks = (s.output[2] + 1) / 2;
    const int64_t n = (blocks + kTileWidth - 1) / kTileWidth * kTileWidth;  // padded blocks
    // A task takes `group` rows of blocks along H, so that the GEMMs' width (group n) is about
    // kGemmWidth: each U[point] (C_in x C_out) is read once per task, and at one row of 16
    // blocks it was streamed from L3 for every 16 columns (C_in = C_out = 64: U is 1 MiB).
    const int64_t group = std::clamp<int64_t>(kGemmWidth / n, 1, rows_h);
    const int64_t groups = (rows_h + group - 1) / group, width = group * n;
    const std::vector<T> u = transform_weights<T, KD>(weight, cout, cin);
    const int64_t tasks = s.batch * rows_d * groups;
    const int64_t task_work = points * cin * cout * width;
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, task_work));
    parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
        // Scratch: a patch's 16 input rows zero-padded (long enough for the last vector of
        // blocks: 2 n + 2 + 2 kLanes), V[point][ci][row, e], and M[point][co][row, e].
        const int64_t row_length = std::max(2 * n + 2 + 2 * kLanes, s.padding[2] + s.input[2]);
        CpuScratch<T> padded(size_t(4 * Z * row_length));
        CpuScratch<T> v(size_t(points * cin * width)), m(size_t(points * cout * width));
        const T* rows[16];
        for (int r = 0; r < 4 * Z; ++r) rows[r] = padded.data() + r * row_length;
        for (int64_t task = lo; task < hi; ++task) {
            const int64_t b = task / (rows_d * groups);
            const int64_t a = task / groups % rows_d, c0 = task % groups * group;
            const int64_t c1 = std::min(rows_h, c0 + group);
            // V[point][ci][row, e]: the input transform, channel by channel and row by row.
            for (int64_t ci = 0; ci < cin; ++ci) {
                const T* plane = x + (b * cin + ci) * in_size;
                for (int64_t c = c0; c < c1; ++c) {
                    for (int64_t r = 0; r < 4 * Z; ++r) {
                        T* row = padded.data() + r * row_length;
                        const int64_t id = P * a - s.padding[0] + r / 4;
                        const int64_t ih = 2 * c - s.padding[1] + r % 4;
                        if (id < 0 || id >= s.input[0] || ih < 0 || ih >= s.input[1]) {
                            fill_row<T>(row, row_length, nullptr, 0, 0);
                            continue;
                        }
                        fill_row(row, row_length, plane + (id * s.input[1] + ih) * s.input[2],
                                 s.input[2], s.padding[2]);
                    }
                    for (int64_t e0 = 0; e0 < n; e0 += kLanes)
                        transform_input_blocks<T, KD>(
                            rows, e0, v.data() + ci * width + (c - c0) * n + e0, cin * width);
                }
            }
            // M[point] = U[point]^T V[point], in register tiles of up to 6 channels x 16 blocks
            // (rows past the last one are left undefined and never read).
            const int64_t used = (c1 - c0) * n;
            for (int64_t point = 0; point < points; ++point)
                for (int64_t k0 = 0; k0 < cout; k0 += kTileChannels) {
                    GemmTile<T> tile = gemm_tile_for<T>(std::min(kTileChannels, cout - k0));
                    for (int64_t e = 0; e < used; e += kTileWidth)
                        tile(u.data() + point * cin * cout + k0, cout, 1,
                             v.data() + point * cin * width + e, width, cin,
                             m.data() + (point * cout + k0) * width + e, width);
                }
            // Y = A^T M A per output channel and row, plus the bias; outputs past the end are
            // dropped.
            for (int64_t co = 0; co < cout; ++co) {
                const T offset = bias ? bias[co] : T(0);
                T* out_plane = y + (b * cout + co) * out_size;
                for (int64_t c = c0; c < c1; ++c)
                    for (int64_t e0 = 0; e0 < n && 2 * e0 < s.output[2]; e0 += kLanes) {
                        Vec<T> out[P][2][2];
                        transform_output_blocks<T, KD>(m.data() + co * width + (c - c0) * n + e0,
                                                       cout * width, offset, out);
                        const int64_t w0 = 2 * e0;
                        const int64_t count = std::min<int64_t>(2 * kLanes, s.output[2] - w0);
                        for (int64_t p = 0; p < P; ++p)
                            for (int64_t q = 0; q < 2; ++q) {
                                const int64_t od = P * a + p, oh = 2 * c + q;
                                if (od >= s.output[0] || oh >= s.output[1]) continue;
                                T* to = out_plane + (od * s.output[1] + oh) * s.output[2] + w0;
                                if (count == 2 * kLanes) {
                                    store(to, out[p][q][0]);
                                    store(to + kLanes, out[p][q][1]);
                                } else {
                                    T staged[2 * kLanes];
                                    store(staged, out[p][q][0]);
                                    store(staged + kLanes, out[p][q][1]);
                                    std::copy(staged, staged + count, to);
                                }
                            }
                    }
            }
        }
    });
}

}  // namespace

void set_conv_winograd(ConvDirect mode) { winograd_mode = mode; }

bool conv_winograd_applies(const ConvShape& s, ConvPass pass) {
    if (winograd_mode == ConvDirect::never || pass == ConvPass::weight_gradient || s.groups != 1)
        return false;
    // 3x3x3, or 3x3 (a 2-D convolution; a 3-D one with a 1x3x3 kernel), stride 1, no dilation,
    // padding 0 to 2 along each transformed dim.
    if (s.kernel[0] != 3 && (s.kernel[0] != 1 || s.padding[0] != 0)) return false;
    for (int d = 0; d < 3; ++d)
        if (s.stride[d] != 1 || s.dilation[d] != 1 || s.padding[d] < 0 || s.padding[d] > 2)
            return false;
    if (s.kernel[1] != 3 || s.kernel[2] != 3) return false;
    if (winograd_mode == ConvDirect::always) return true;
    const int64_t read = pass == ConvPass::forward ? s.in_channels : s.out_channels;
    const int64_t written = pass == ConvPass::forward ? s.out_channels : s.in_channels;
    // Rows of 32 or more for 3x3x3 (against the direct kernels, above), of 64 or more for 3x3
    // (against im2col + GEMM, 2 threads, forward / grad_x ms: 64 -> 64 channels on 256x256
    // 19 / 18 against 34 / 37, 128 -> 64 38 / 31 against 70 / 67, 256 -> 256 on 64x64 17 / 17
    // against 32 / 31, 2 x 192 -> 192 on 64x64 17 / 18 against 30 / 34; but 512 -> 256 on 32x32
    // 15 / 20 against 14 / 16).
    const int64_t width = std::min(s.input[2], s.output[2]);
    return read >= 16 && written >= 16 && width >= (s.kernel[0] == 3 ? 32 : 64);
}

// Runs the forward for the kernel's depth (3: F(2x2x2, 3x3x3); 1: F(2x2, 3x3) slice by slice).
template <typename T>
void winograd_forward_any(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
    if (s.kernel[0] == 3)
        winograd_forward_typed<T, 3>(x, weight, bias, y, s);
    else
        winograd_forward_typed<T, 1>(x, weight, bias, y, s);
}

void conv_winograd_forward(const StridedView& x, const StridedView& weight, const StridedView& bias,
                           const StridedView& y, const ConvShape& shape) {
    dispatch_floating(y.dtype, "conv", [&]<typename T>() {
        winograd_forward_any<T>(x.ptr<const T>(), weight.ptr<const T>(),
                                bias.data ? bias.ptr<const T>() : nullptr, y.ptr<T>(), shape);
    });
}

void conv_winograd_backward_input(const StridedView& grad_y, const StridedView& weight,
                                  const StridedView& grad_x, const ConvShape& shape) {
    dispatch_floating(grad_x.dtype, "conv", [&]<typename T>() {
        // grad_x = the forward over grad_y with the kernel flipped (ops/cpu/conv_flip.h)
        const std::vector<T> reversed = input_gradient_weight(weight.ptr<const T>(), shape);
        winograd_forward_any<T>(grad_y.ptr<const T>(), reversed.data(), nullptr, grad_x.ptr<T>(),
                                input_gradient_shape(shape));
    });
}

}  // namespace lumen::cpu
