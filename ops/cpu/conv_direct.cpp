// CPU direct convolution for stride 1, dilation 1 and one group, float32, on machines with
// AVX-512, forward and both gradients: the 3x3x3 convolutions of the UNETR heads, and the
// gradients of 2-D 3x3 ones on wide rows. im2col + GEMM (ops/cpu/conv.cpp) copies every input
// value once per kernel tap and the GEMM packs that copy again; with the few output channels of
// these heads (32-256) those copies took a third of the time. Here a register tile of up to 12
// output positions of one output row x 32 output channels accumulates
//   y[o, d, h, w] = bias[o] + sum over c, a, b, e of W[o, c, a, b, e] x[c, d+a-pd, h+b-ph, w+e-pw]
// one input value broadcast against the weights of 16 output channels per vector, straight
// from the input rows. Each input row is first copied once (into scratch memory from the tensor
// allocator's cache: into a fresh std::vector, element by element, the forward took 25% longer),
// padded along W so that a tile never tests a bound; taps whose input plane or row falls outside
// D or H are skipped. The 24 accumulators need AVX-512's 32 vector registers: with AVX2's 16
// the tile is too small and measured no faster than im2col + GEMM, so other machines keep that
// path.
//
// The input gradient of a stride-1 convolution is the same operation: grad_y convolved with
// the weight flipped in space and its two channel dims swapped, padded by k - 1 - p. The
// weight gradient turns the tile around: 12 (input channel, tap) pairs x 32 output channels,
// summed over the positions of an output row (grad_y's row transposed once per row).
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/parallel.h"
#include "core/storage.h"
#include "ops/conv_kernels.h"

namespace lumen::cpu {

namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LUMEN_CONV_DIRECT 1
#define LUMEN_AVX512 __attribute__((target("avx512f,fma")))
#else
#define LUMEN_CONV_DIRECT 0
#define LUMEN_AVX512
#endif

ConvDirect direct_mode = ConvDirect::automatic;

// One stride-1 convolution as the kernel sees it: x (C, Di, Hi, Wi) per sample, y (O, Do, Ho,
// Wo), weights packed as wt[((c * KD + a) * KH + b) * KW + e][o] (output channels innermost),
// input index = output index + tap - pad along each dim (pad may be negative).
struct Geometry {
    int64_t batch, in_channels, out_channels;
    int64_t in[3], out[3], kernel[3], pad[3];
    int64_t padded_width() const { return out[2] + kernel[2] - 1; }
};

#if LUMEN_CONV_DIRECT

typedef float Vec16 __attribute__((vector_size(64)));
constexpr int kLanes = 16;
constexpr int kVectors = 2;                // output channels per tile: 32
constexpr int kBlock = kLanes * kVectors;  // output channels per block
constexpr int kPositions = 12;             // output positions per tile
// Taps (input channel x kernel tap) per pass over a tile: their weights (13.5 KB for 32 output
// channels) stay in L1, and the accumulators are loaded and stored once per pass.
constexpr int64_t kTapsPerPass = 108;

[[gnu::always_inline]] LUMEN_AVX512 inline Vec16 load(const float* p) {
    Vec16 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
[[gnu::always_inline]] LUMEN_AVX512 inline void store(float* p, Vec16 v) {
    std::memcpy(p, &v, sizeof v);
}

// tile[P positions][32 channels] += the taps of input channels [c0, c1) for the P output
// positions whose padded input starts at `row0` (channel 0, plane 0, row 0); rows[t] is the
// offset of tap t's (plane, row), first_tap[t] its first packed weight.
template <int P>
LUMEN_AVX512 void accumulate_tile(const float* __restrict row0, int64_t channel_stride,
                                  const int64_t* rows, int64_t taps, int64_t kw,
                                  const float* __restrict wt, const int64_t* first_tap,
                                  int64_t out_channels, int64_t c0, int64_t c1,
                                  float* __restrict tile) {
    Vec16 acc[P][kVectors];
    for (int p = 0; p < P; ++p)
        for (int j = 0; j < kVectors; ++j) acc[p][j] = load(tile + p * kBlock + j * kLanes);
    for (int64_t c = c0; c < c1; ++c) {
        for (int64_t t = 0; t < taps; ++t) {
            const float* in = row0 + c * channel_stride + rows[t];
            const float* w = wt + (c * first_tap[taps] + first_tap[t]) * out_channels;
            for (int64_t e = 0; e < kw; ++e) {
                Vec16 weights[kVectors];
                for (int j = 0; j < kVectors; ++j)
                    weights[j] = load(w + e * out_channels + j * kLanes);
                for (int p = 0; p < P; ++p) {
                    float v = in[e + p];
                    Vec16 b = {v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v};
                    for (int j = 0; j < kVectors; ++j) acc[p][j] += b * weights[j];
                }
            }
        }
    }
    for (int p = 0; p < P; ++p)
        for (int j = 0; j < kVectors; ++j) store(tile + p * kBlock + j * kLanes, acc[p][j]);
}

// accumulate_tile for P = 1..12 positions, indexed by P.
using TileKernel = void (*)(const float*, int64_t, const int64_t*, int64_t, int64_t, const float*,
                            const int64_t*, int64_t, int64_t, int64_t, float*);
template <int... P>
constexpr std::array<TileKernel, sizeof...(P) + 1> tile_kernels(std::integer_sequence<int, P...>) {
    return {nullptr, &accumulate_tile<P + 1>...};
}
constexpr auto kTileKernels = tile_kernels(std::make_integer_sequence<int, kPositions>());

// dst[j * dst_stride + i] = src[i * src_stride + j] for i < rows, j < cols: the tiles'
// position-major accumulators to channel rows and grad_y's rows back, 16 x 16 blocks in
// registers (unpack 32-bit pairs, then 64-bit pairs, then 128-bit lanes twice); scalar at the
// edges. Element by element, these copies took about 13 % of a 2-D forward (32 channels, 256²).
LUMEN_AVX512 void transpose(const float* src, int64_t src_stride, int64_t rows, int64_t cols,
                            float* dst, int64_t dst_stride) {
    int64_t i0 = 0;
    for (; i0 + 16 <= rows; i0 += 16) {
        int64_t j0 = 0;
        for (; j0 + 16 <= cols; j0 += 16) {
            __m512 r[16], t[16];
            for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + (i0 + i) * src_stride + j0);
            for (int i = 0; i < 8; ++i) {
                t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
                t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
            }
            for (int i = 0; i < 4; ++i)
                for (int k = 0; k < 2; ++k) {
                    __m512d a = _mm512_castps_pd(t[4 * i + k]),
                            b = _mm512_castps_pd(t[4 * i + k + 2]);
                    r[4 * i + 2 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
                    r[4 * i + 2 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
                }
            for (int i = 0; i < 2; ++i)
                for (int k = 0; k < 4; ++k) {
                    t[8 * i + k] = _mm512_shuffle_f32x4(r[8 * i + k], r[8 * i + 4 + k], 0x88);
                    t[8 * i + 4 + k] = _mm512_shuffle_f32x4(r[8 * i + k], r[8 * i + 4 + k], 0xdd);
                }
            for (int k = 0; k < 8; ++k) {
                r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
                r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd);
            }
            for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + (j0 + j) * dst_stride + i0, r[j]);
        }
        for (; j0 < cols; ++j0)
            for (int64_t i = i0; i < i0 + 16; ++i)
                dst[j0 * dst_stride + i] = src[i * src_stride + j0];
    }
    for (; i0 < rows; ++i0)
        for (int64_t j = 0; j < cols; ++j) dst[j * dst_stride + i0] = src[i0 * src_stride + j];
}

// The taps (a, b) of output row (od, oh) whose input plane and row exist: their offsets in a
// padded sample (`rows`) and their first packed weight index (`first_tap`), which ends with
// the taps per channel. Kept out of the AVX-512 code, which has no library calls.
void row_taps(const Geometry& g, int64_t od, int64_t oh, std::vector<int64_t>& rows,
              std::vector<int64_t>& first_tap) {
    rows.clear();
    first_tap.clear();
    for (int64_t a = 0; a < g.kernel[0]; ++a) {
        int64_t id = od + a - g.pad[0];
        if (id < 0 || id >= g.in[0]) continue;
        for (int64_t b = 0; b < g.kernel[1]; ++b) {
            int64_t ih = oh + b - g.pad[1];
            if (ih < 0 || ih >= g.in[1]) continue;
            rows.push_back((id * g.in[1] + ih) * g.padded_width());
            first_tap.push_back((a * g.kernel[1] + b) * g.kernel[2]);
        }
    }
    first_tap.push_back(g.kernel[0] * g.kernel[1] * g.kernel[2]);
}

// The taps of one output row (row_taps) and its accumulators.
struct RowWork {
    std::vector<int64_t> rows, first_tap;
    float* tile;  // (Wo, 32) position-major, holding the bias
};

// Every row's tile += its output row of one block of 32 output channels, in passes over a few
// input channels at a time: each pass's weights (kTapsPerPass x 32) serve all the rows while
// they are in L1 (4 rows against 1: 128 -> 64 channels on 16x32x32 36 against 41 ms, on
// 32x64x64 325 against 335).
LUMEN_AVX512 void accumulate_rows(const Geometry& g, const float* padded_sample,
                                  const float* block_wt, const std::vector<RowWork>& work) {
    const int64_t channel_stride = g.in[0] * g.in[1] * g.padded_width();
    const int64_t channels_per_pass =
        std::max<int64_t>(1, kTapsPerPass / (g.kernel[0] * g.kernel[1] * g.kernel[2]));
    // Each row in ceil(Wo / 12) tiles of nearly equal size: a 12 + 12 + 4 + 4 split of 32
    // positions ran its 4-position tiles 1.6x slower per multiply-add than 11 + 11 + 10.
    const int64_t tiles = (g.out[2] + kPositions - 1) / kPositions;
    for (int64_t c0 = 0; c0 < g.in_channels; c0 += channels_per_pass) {
        int64_t c1 = std::min(g.in_channels, c0 + channels_per_pass);
        for (const RowWork& row : work) {
            if (row.rows.empty()) continue;
            for (int64_t i = 0; i < tiles; ++i) {
                int64_t w0 = i * g.out[2] / tiles, w1 = (i + 1) * g.out[2] / tiles;
                kTileKernels[w1 - w0](padded_sample + w0, channel_stride, row.rows.data(),
                                      int64_t(row.rows.size()), g.kernel[2], block_wt,
                                      row.first_tap.data(), g.out_channels, c0, c1,
                                      row.tile + w0 * kBlock);
            }
        }
    }
}

// The rows of x (batch, C, Di, Hi, Wi).
int64_t padded_lines(const Geometry& g) { return g.batch * g.in_channels * g.in[0] * g.in[1]; }

// padded (lines, padded_width) = x with every row padded along W: element j of a padded row is
// input j - pad (0 outside).
void pad_rows(const Geometry& g, const float* x, float* padded) {
    const int64_t width = g.padded_width(), lines = padded_lines(g);
    parallel_for(0, lines, std::max<int64_t>(1, kGrainSize / width), [&](int64_t lo, int64_t hi) {
        for (int64_t line = lo; line < hi; ++line) {
            const float* src = x + line * g.in[2];
            float* dst = padded + line * width;
            // dst[j] = src[j - pad], 0 outside the row (pad may be negative: grad_x of a
            // convolution padded by more than k - 1)
            int64_t begin = std::clamp<int64_t>(g.pad[2], 0, width);
            int64_t end = std::clamp<int64_t>(g.pad[2] + g.in[2], begin, width);
            std::fill(dst, dst + begin, 0.0f);
            std::memcpy(dst + begin, src + (begin - g.pad[2]), size_t(end - begin) * sizeof(float));
            std::fill(dst + end, dst + width, 0.0f);
        }
    });
}

// Output rows per task of the forward (and grad_x): they share each pass's weights.
constexpr int64_t kRowsPerTask = 4;

// y = bias + conv(x, wt) for the whole batch.
void run(const Geometry& g, const float* x, const float* wt, const float* bias, float* y) {
    const int64_t width = g.padded_width();
    const int64_t in_rows = g.in[0] * g.in[1];
    const int64_t out_plane = g.out[1] * g.out[2], out_size = g.out[0] * out_plane;
    CpuScratch<float> padded(size_t(padded_lines(g) * g.padded_width()));
    pad_rows(g, x, padded.data());
    const int64_t blocks = g.out_channels / kBlock;
    const int64_t groups = (g.out[1] + kRowsPerTask - 1) / kRowsPerTask;  // per plane
    const int64_t tasks = g.batch * g.out[0] * groups;
    const int64_t work = kRowsPerTask * blocks * g.out[2] * g.in_channels * g.kernel[0] *
                         g.kernel[1] * g.kernel[2] * kBlock;
    parallel_for(0, tasks, std::max<int64_t>(1, 100000 / std::max<int64_t>(1, work)),
                 [&](int64_t lo, int64_t hi) {
                     std::vector<float> tiles(size_t(kRowsPerTask * g.out[2] * kBlock));
                     std::vector<RowWork> rows;
                     for (int64_t task = lo; task < hi; ++task) {
                         int64_t n = task / (g.out[0] * groups), od = task / groups % g.out[0];
                         int64_t oh0 = task % groups * kRowsPerTask;
                         int64_t count = std::min(kRowsPerTask, g.out[1] - oh0);
                         const float* sample = padded.data() + n * g.in_channels * in_rows * width;
                         rows.resize(size_t(count));
                         for (int64_t r = 0; r < count; ++r) {
                             row_taps(g, od, oh0 + r, rows[r].rows, rows[r].first_tap);
                             rows[r].tile = tiles.data() + r * g.out[2] * kBlock;
                         }
                         for (int64_t block = 0; block < blocks; ++block) {
                             float init[kBlock];
                             for (int j = 0; j < kBlock; ++j)
                                 init[j] = bias ? bias[block * kBlock + j] : 0.0f;
                             for (int64_t w = 0; w < count * g.out[2]; ++w)
                                 for (int j = 0; j < kBlock; ++j) tiles[w * kBlock + j] = init[j];
                             accumulate_rows(g, sample, wt + block * kBlock, rows);
                             // each tile (Wo, 32) -> its row of the block's 32 output channels
                             for (int64_t r = 0; r < count; ++r) {
                                 float* out = y + (n * g.out_channels + block * kBlock) * out_size +
                                              od * out_plane + (oh0 + r) * g.out[2];
                                 transpose(rows[r].tile, kBlock, g.out[2], kBlock, out, out_size);
                             }
                         }
                     }
                 });
}

// dst[j][32 channels] += sum over w < width of src[j][w] gy_row[w][32 channels] for N (input
// channel, tap) pairs j, src[j] = src + src_offset[j] the padded input row that pair j reads
// (shifted by its tap along W), dst[j] = dst + dst_offset[j]: the weight gradient of one
// output row.
template <int N>
[[gnu::always_inline]] LUMEN_AVX512 inline void accumulate_weight_tile(
    const float* src, const int64_t* src_offset, const float* __restrict gy_row, int64_t width,
    float* dst, const int64_t* dst_offset) {
    const float* rows[N];
    for (int j = 0; j < N; ++j) rows[j] = src + src_offset[j];
    Vec16 acc[N][kVectors];
    for (int j = 0; j < N; ++j)
        for (int v = 0; v < kVectors; ++v) acc[j][v] = Vec16{};
    for (int64_t w = 0; w < width; ++w) {
        Vec16 grad[kVectors];
        for (int v = 0; v < kVectors; ++v) grad[v] = load(gy_row + w * kBlock + v * kLanes);
        for (int j = 0; j < N; ++j) {
            float x = rows[j][w];
            Vec16 b = {x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
            for (int v = 0; v < kVectors; ++v) acc[j][v] += b * grad[v];
        }
    }
    for (int j = 0; j < N; ++j) {
        float* out = dst + dst_offset[j];
        for (int v = 0; v < kVectors; ++v)
            store(out + v * kLanes, load(out + v * kLanes) + acc[j][v]);
    }
}

// accumulate_weight_tile over `count` pairs, 12 at a time (24 accumulators).
LUMEN_AVX512 void accumulate_weight_row(const float* src, const int64_t* src_offset, int64_t count,
                                        const float* gy_row, int64_t width, float* dst,
                                        const int64_t* dst_offset) {
    int64_t j = 0;
    for (; j + kPositions <= count; j += kPositions)
        accumulate_weight_tile<kPositions>(src, src_offset + j, gy_row, width, dst, dst_offset + j);
    for (; j < count; ++j)
        accumulate_weight_tile<1>(src, src_offset + j, gy_row, width, dst, dst_offset + j);
}

// The kernel's view of convolution `s`, or for grad_x of the convolution that gives it:
// grad_y convolved with the weight flipped in space and its channel dims swapped, padded by
// k - 1 - p (input position i receives output i + p - a through tap a, which is output
// i - (k - 1 - p) + a' through the flipped tap a' = k - 1 - a).
Geometry geometry(const ConvShape& s, bool input_gradient) {
    Geometry g{s.batch, s.in_channels, s.out_channels, {}, {}, {}, {}};
    if (input_gradient) std::swap(g.in_channels, g.out_channels);
    for (int d = 0; d < 3; ++d) {
        g.in[d] = input_gradient ? s.output[d] : s.input[d];
        g.out[d] = input_gradient ? s.input[d] : s.output[d];
        g.kernel[d] = s.kernel[d];
        g.pad[d] = input_gradient ? s.kernel[d] - 1 - s.padding[d] : s.padding[d];
    }
    return g;
}

bool machine_has_avx512() {
    // CPUID and the OS's saving of the vector registers (the builtins check both); cpu_init
    // first in case this runs before the runtime's own initialisation (a static initialiser).
    static const bool has =
        (__builtin_cpu_init(), __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"));
    return has;
}

#endif  // LUMEN_CONV_DIRECT

}  // namespace

void set_conv_direct(ConvDirect mode) { direct_mode = mode; }
ConvDirect conv_direct_mode() { return direct_mode; }

bool conv_direct_applies(const ConvShape& s, ConvPass pass) {
#if LUMEN_CONV_DIRECT
    // The kernel reads `read` channels and writes `written` (grad_x: the forward's roles swapped).
    const bool input_gradient = pass == ConvPass::input_gradient;
    const int64_t read = input_gradient ? s.out_channels : s.in_channels;
    const int64_t written = input_gradient ? s.in_channels : s.out_channels;
    // What the kernels handle.
    if (direct_mode == ConvDirect::never || !machine_has_avx512() || s.groups != 1 ||
        written % kBlock != 0 || s.kernel_size() < 2)
        return false;
    for (int d = 0; d < 3; ++d)
        if (s.stride[d] != 1 || s.dilation[d] != 1) return false;
    if (direct_mode == ConvDirect::always) return true;
    // Where they measured faster than im2col + GEMM (2 threads, AMD Zen 4, in-process A/B, ms
    // forward / grad_x / grad_weight, direct against im2col):
    // - 3-D kernels (27 taps: im2col copies each input 27 times), forward and grad_x along rows
    //   of 16 or more: 32 -> 32 channels on 32x64x64 40/39/38 against 56/55/54; 128 -> 64 on
    //   16x32x32 38/40/45 against 57/59/53; 256 -> 128 on 8x16x16 20/19/28 against 24/24/24;
    //   256 -> 256 on 8x16x16 44/40/66 against 44/45/45. On 4x8x8 the tiles are too short
    //   (512 -> 256: 33/35/62 against 18/16/22).
    // - Their weight gradient only for 32 or 64 output channels along rows of 32 or more
    //   (64 -> 128 on 16x32x32: 48 against 49).
    // - 2-D 3x3 kernels (9 taps): the gradients, 32 or 64 channels written along rows of 128
    //   or more: 32 -> 32 on 2x256x256 -/19/16 against -/24/21, 64 -> 64 on 2x128x128 -/15/13
    //   against -/18/16; the forward is even or slower (64 -> 32 on 2x256x256: 43 against 35).
    // Below 8 channels read (a network's first convolution) the tile's setup and transposed
    // stores outweigh the multiply-adds (2x slower at 1).
    const int64_t width = std::min(s.input[2], s.output[2]);
    if (read < 8) return false;
    if (s.kernel_size() >= 27) {
        if (pass == ConvPass::weight_gradient) return written <= 2 * kBlock && width >= 32;
        return written <= 8 * kBlock && width >= 16;
    }
    return s.kernel_size() == 9 && pass != ConvPass::forward && written <= 2 * kBlock &&
           width >= 128;
#else
    (void)s, (void)pass;
    return false;
#endif
}

void conv_direct_forward(const float* x, const float* weight, const float* bias, float* y,
                         const ConvShape& s) {
#if LUMEN_CONV_DIRECT
    // wt[c, taps][o] = weight[o][c, taps]
    const int64_t rows = s.in_channels * s.kernel_size();
    std::vector<float> wt(size_t(rows * s.out_channels));
    for (int64_t o = 0; o < s.out_channels; ++o)
        for (int64_t r = 0; r < rows; ++r) wt[r * s.out_channels + o] = weight[o * rows + r];
    run(geometry(s, false), x, wt.data(), bias, y);
#else
    (void)x, (void)weight, (void)bias, (void)y, (void)s;
#endif
}

void conv_direct_backward_input(const float* grad_y, const float* weight, float* grad_x,
                                const ConvShape& s) {
#if LUMEN_CONV_DIRECT
    // wt[o, taps flipped][c] = weight[o][c, taps] (see geometry)
    const int64_t taps = s.kernel_size(), rows = s.in_channels * taps;
    std::vector<float> wt(size_t(s.out_channels * taps * s.in_channels));
    for (int64_t o = 0; o < s.out_channels; ++o)
        for (int64_t c = 0; c < s.in_channels; ++c)
            for (int64_t t = 0; t < taps; ++t)
                wt[((o * taps) + (taps - 1 - t)) * s.in_channels + c] =
                    weight[o * rows + c * taps + t];
    run(geometry(s, true), grad_y, wt.data(), nullptr, grad_x);
#else
    (void)grad_y, (void)weight, (void)grad_x, (void)s;
#endif
}

void conv_direct_backward_weight(const float* x, const float* grad_y, float* grad_weight,
                                 const ConvShape& s) {
#if LUMEN_CONV_DIRECT
    // grad_weight[o][c, tap] = sum over samples and output positions of
    // grad_y[o][position] x[c][position + tap - pad]; per output row, grad_y's row is
    // transposed to (W, 32 channels) and every (input channel, tap) pair whose input row exists
    // is one accumulator pair of the tile. Each of `parts` threads sums whole rows into its
    // own copy, and the copies are added in part order (the result depends on the thread
    // count only, as im2col + GEMM's).
    const Geometry g = geometry(s, false);
    CpuScratch<float> padded(size_t(padded_lines(g) * g.padded_width()));
    pad_rows(g, x, padded.data());
    const int64_t width = g.padded_width(), taps = s.kernel_size();
    const int64_t channel_stride = g.in[0] * g.in[1] * width;
    const int64_t rows = g.out[0] * g.out[1], tasks = g.batch * rows;
    const int64_t out_size = g.out[0] * g.out[1] * g.out[2];
    const int64_t packed = s.in_channels * taps * s.out_channels;  // [c, tap][o]
    const int64_t parts = std::clamp<int64_t>(get_num_threads(), 1, std::max<int64_t>(1, tasks));
    std::vector<float> partials(size_t(parts * packed), 0.0f);
    parallel_for(0, parts, 1, [&](int64_t lo, int64_t hi) {
        std::vector<float> gy_row(size_t(g.out[2] * kBlock));
        std::vector<int64_t> tap_rows, first_tap;
        // The pairs' offsets from the row's first tap row and from the block's first weight:
        // the same for every row with the same taps (all rows away from the borders).
        std::vector<int64_t> src_offset, dst_offset, layout, key;
        for (int64_t part = lo; part < hi; ++part) {
            float* sum = partials.data() + part * packed;
            for (int64_t task = part * tasks / parts; task < (part + 1) * tasks / parts; ++task) {
                int64_t n = task / rows, row = task % rows, od = row / g.out[1],
                        oh = row % g.out[1];
                row_taps(g, od, oh, tap_rows, first_tap);
                if (tap_rows.empty()) continue;
                key.assign(first_tap.begin(), first_tap.end());
                for (int64_t r : tap_rows) key.push_back(r - tap_rows[0]);
                if (key != layout) {
                    layout = key;
                    src_offset.clear();
                    dst_offset.clear();
                    for (int64_t c = 0; c < s.in_channels; ++c)
                        for (size_t t = 0; t < tap_rows.size(); ++t)
                            for (int64_t e = 0; e < g.kernel[2]; ++e) {
                                src_offset.push_back(c * channel_stride + tap_rows[t] -
                                                     tap_rows[0] + e);
                                dst_offset.push_back((c * taps + first_tap[t] + e) *
                                                     s.out_channels);
                            }
                }
                const float* first_row =
                    padded.data() + n * g.in_channels * channel_stride + tap_rows[0];
                for (int64_t block = 0; block < s.out_channels / kBlock; ++block) {
                    const float* gy = grad_y + (n * s.out_channels + block * kBlock) * out_size +
                                      (od * g.out[1] + oh) * g.out[2];
                    transpose(gy, out_size, kBlock, g.out[2], gy_row.data(), kBlock);
                    accumulate_weight_row(first_row, src_offset.data(), int64_t(src_offset.size()),
                                          gy_row.data(), g.out[2], sum + block * kBlock,
                                          dst_offset.data());
                }
            }
        }
    });
    for (int64_t part = 1; part < parts; ++part)
        for (int64_t i = 0; i < packed; ++i)
            partials[size_t(i)] += partials[size_t(part * packed + i)];
    const int64_t per_output = s.in_channels * taps;
    for (int64_t o = 0; o < s.out_channels; ++o)
        for (int64_t r = 0; r < per_output; ++r)
            grad_weight[o * per_output + r] = partials[size_t(r * s.out_channels + o)];
#else
    (void)x, (void)grad_y, (void)grad_weight, (void)s;
#endif
}

}  // namespace lumen::cpu
