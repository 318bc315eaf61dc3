// CPU convolutions as direct loops over whole rows: depthwise ones (groups == in_channels ==
// out_channels), and dense ones that write few channels (a segmentation head's classes).
//
// Depthwise: one (sample, channel) plane at a time; an im2col GEMM with one filter per group
// would do K multiply-adds per copied element. Any kernel, stride, padding and dilation
// (1-D, 2-D and 3-D alike, seen as 3-D). Every output row is built from whole input rows,
// one kernel tap at a time over the range of positions where the tap reads inside the input,
// so the inner loops carry no bounds checks and vectorize at stride 1; kernels 3 wide at
// stride 1 (3x3, 3x3x3, Mamba's k = 3) fuse their three taps in the forward pass over a row.
//
// Few channels: im2col + GEMM is a product of C_out rows (forward, weight gradient) or C_out
// columns (input gradient) against the copied columns: at 2 classes it only streams memory
// (the context study's UPerNet head, 192 -> 2 channels 3x3x3 on 2x32x64x64, took 1.2 s of a
// 3.6 s training step). Here each output row is summed from input rows as in the depthwise
// forward, over every input channel; the input gradient is that forward over grad_y with the
// kernel flipped; the weight gradient sums every tap of a (channel, class) pair in one pass
// over flat planes, as the depthwise one does.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/storage.h"
#include "ops/conv_kernels.h"
#include "ops/cpu/conv_flip.h"
#include "ops/cpu/row_tiles.h"

namespace lumen::cpu {

namespace {

// The output indices o in [0, count) with 0 <= o * stride + offset < size.
struct Range {
    int64_t lo, hi;
};
Range valid_range(int64_t count, int64_t stride, int64_t offset, int64_t size) {
    int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    int64_t last = size - 1 - offset;
    int64_t hi = last < 0 ? 0 : std::min(count, last / stride + 1);
    return {lo, std::max(lo, hi)};
}

// y_row[o] += sum over kw of w[kw] * x_row[o * stride + kw * dilation - padding] (W dim only).
template <typename T>
void accumulate_row(T* __restrict y_row, const T* __restrict x_row, const T* w,
                    const ConvShape& s) {
    int64_t count = s.output[2], size = s.input[2], sw = s.stride[2], dw = s.dilation[2];
    int64_t pw = s.padding[2];
    if (s.kernel[2] == 3 && sw == 1 && dw == 1) {
        // Interior: all three taps inside; one fused pass. Edges: tap by tap below.
        Range left = valid_range(count, 1, -pw, size), right = valid_range(count, 1, 2 - pw, size);
        int64_t lo = std::max(left.lo, right.lo), hi = std::min(left.hi, right.hi);
        if (lo < hi) {
            T w0 = w[0], w1 = w[1], w2 = w[2];
            const T* x0 = x_row - pw;
            for (int64_t o = lo; o < hi; ++o)
                y_row[o] += w0 * x0[o] + w1 * x0[o + 1] + w2 * x0[o + 2];
            for (int64_t kw = 0; kw < 3; ++kw) {
                Range r = valid_range(count, 1, kw - pw, size);
                const T* x = x_row + kw - pw;
                for (int64_t o = r.lo; o < std::min(r.hi, lo); ++o) y_row[o] += w[kw] * x[o];
                for (int64_t o = std::max(r.lo, hi); o < r.hi; ++o) y_row[o] += w[kw] * x[o];
            }
            return;
        }
    }
    for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
        int64_t offset = kw * dw - pw;
        Range r = valid_range(count, sw, offset, size);
        T tap = w[kw];
        const T* x = x_row + offset;
        if (sw == 1) {
            for (int64_t o = r.lo; o < r.hi; ++o) y_row[o] += tap * x[o];
        } else {
            for (int64_t o = r.lo; o < r.hi; ++o) y_row[o] += tap * x[o * sw];
        }
    }
}

// Calls row(input_row_offset, tap_offset) for every kernel row (kd, kh) that reads inside
// the input for output row (od, oh); offsets in elements from the plane start and weights.
template <typename Row>
void for_each_kernel_row(const ConvShape& s, int64_t od, int64_t oh, const Row& row) {
    for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
        int64_t id = od * s.stride[0] - s.padding[0] + kd * s.dilation[0];
        if (id < 0 || id >= s.input[0]) continue;
        for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
            int64_t ih = oh * s.stride[1] - s.padding[1] + kh * s.dilation[1];
            if (ih < 0 || ih >= s.input[1]) continue;
            row((id * s.input[1] + ih) * s.input[2], (kd * s.kernel[1] + kh) * s.kernel[2]);
        }
    }
}

// One plane: y = bias + sum of taps, rows in order.
template <typename T>
void forward_plane(const T* x, const T* w, T bias, T* y, const ConvShape& s) {
    for (int64_t od = 0; od < s.output[0]; ++od) {
        for (int64_t oh = 0; oh < s.output[1]; ++oh) {
            T* y_row = y + (od * s.output[1] + oh) * s.output[2];
            std::fill(y_row, y_row + s.output[2], bias);
            for_each_kernel_row(s, od, oh, [&](int64_t in_row, int64_t tap) {
                accumulate_row(y_row, x + in_row, w + tap, s);
            });
        }
    }
}

// Calls plane(b, c) for every (sample, channel) plane in parallel.
template <typename Plane>
void for_each_plane(const ConvShape& s, int64_t work_per_plane, const Plane& plane) {
    int64_t planes = s.batch * s.in_channels;
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, work_per_plane));
    parallel_for(0, planes, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t p = lo; p < hi; ++p) plane(p / s.in_channels, p % s.in_channels);
    });
}

// Small planes at stride 1, as one long row each. The plane is copied, zero-padded, into a
// buffer whose rows and slices are wide enough for every tap (the flat plane: dims[]), so the
// output at (od, oh, ow) sits at flat index i = (od dims[1] + oh) dims[2] + ow and tap (kd, kh,
// kw) reads the buffer at i + (kd dd dims[1] + kh dh) dims[2] + kw dw for every i alike. Each
// tap is then one stride-1 pass over the whole plane, not one per output row: rows of 7-28
// outputs (PVTv2's and SimA's 3x3 depthwise convolutions at 7x7 to 28x28) had run 1.5-2.5x
// slower than PyTorch in short loops. The dims[2] - W_out positions past each row's end are
// computed and dropped.
struct FlatPlane {
    // Flat indices are computed in whole blocks of this many, so no loop has a scalar tail
    // (a 7x7 plane's 61 indices would leave 29 past the last 32-lane block).
    static constexpr int64_t kBlock = kLanes;
    int64_t dims[3] = {1, 1, 1};  // padded D, H, W; the input starts at (padding...)
    int64_t size = 0;             // dims[0] dims[1] dims[2] + kBlock zeros read by the last block
    int64_t length = 0;           // flat indices up to the last output's + 1, rounded up to kBlock
    std::vector<int64_t> tap_rows;  // per (kd, kh): its first tap's offset in the buffer
};

// Planes of up to this many padded elements (128 KiB in float32, with the output buffer
// within a core's L2) and rows of up to kFlatRowMax outputs take the flat path. Measured
// (forward / forward + backward, ms, 2 threads, the row path against the flat one): 3x3 on
// 2x1024x28x28 1.6 / 4.2 against 0.53 / 1.6, on 4x384x14x14 0.54 / 1.3 against 0.13 / 0.36,
// on 2x512x56x56 1.8 / 5.5 against 1.6 / 4.4, 3x3x3 on 1x48x16x32x32 1.9 / 4.7 against
// 0.60 / 1.4; but on 2x128x112x112 1.2 / 4.3 against 1.7 / 4.6, and 1-D k = 3 over 1024
// positions 0.16 / 1.0 against 0.26 / 1.2: long rows already run at full vector width, and
// the flat path's copies cost more than it saves.
constexpr int64_t kFlatPlaneMax = 32768;
constexpr int64_t kFlatRowMax = 64;

bool flat_applies(const ConvShape& s) {
    if (s.output[2] > kFlatRowMax) return false;
    int64_t size = 1;
    for (int d = 0; d < 3; ++d) {
        if (s.stride[d] != 1 || s.padding[d] < 0) return false;
        size *=
            std::max(s.input[d] + s.padding[d], s.output[d] + (s.kernel[d] - 1) * s.dilation[d]);
    }
    return size <= kFlatPlaneMax;
}

FlatPlane flat_plane(const ConvShape& s) {
    FlatPlane f;
    for (int d = 0; d < 3; ++d)
        f.dims[d] =
            std::max(s.input[d] + s.padding[d], s.output[d] + (s.kernel[d] - 1) * s.dilation[d]);
    f.size = f.dims[0] * f.dims[1] * f.dims[2] + FlatPlane::kBlock;
    int64_t last = ((s.output[0] - 1) * f.dims[1] + s.output[1] - 1) * f.dims[2] + s.output[2];
    f.length = (last + FlatPlane::kBlock - 1) / FlatPlane::kBlock * FlatPlane::kBlock;
    for (int64_t kd = 0; kd < s.kernel[0]; ++kd)
        for (int64_t kh = 0; kh < s.kernel[1]; ++kh)
            f.tap_rows.push_back((kd * s.dilation[0] * f.dims[1] + kh * s.dilation[1]) * f.dims[2]);
    return f;
}

// Calls row(flat_offset, source_offset) for each row of a (d0, d1, d2) block whose rows sit at
// flat rows of stride f.dims[2] from `at` (in slices of f.dims[1] rows), and at d2 apart in the
// source.
template <typename Row>
void for_each_flat_row(const FlatPlane& f, const int64_t (&extent)[3], int64_t at, const Row& row) {
    for (int64_t d = 0; d < extent[0]; ++d)
        for (int64_t h = 0; h < extent[1]; ++h)
            row(at + (d * f.dims[1] + h) * f.dims[2], (d * extent[1] + h) * extent[2]);
}

// The input plane x into the zero-padded buffer.
template <typename T>
void pad_into(const T* x, T* padded, const FlatPlane& f, const ConvShape& s) {
    std::fill(padded, padded + f.size, T(0));
    int64_t at = (s.padding[0] * f.dims[1] + s.padding[1]) * f.dims[2] + s.padding[2];
    for_each_flat_row(f, s.input, at, [&](int64_t to, int64_t from) {
        std::copy(x + from, x + from + s.input[2], padded + to);
    });
}

template <typename T>
void forward_flat(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
    FlatPlane f = flat_plane(s);
    int64_t in_size = s.input_size(), out_size = s.output_size(), taps = s.kernel_size();
    int64_t planes = s.batch * s.in_channels;
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, f.length * taps));
    parallel_for(0, planes, grain, [&](int64_t lo, int64_t hi) {
        CpuScratch<T> padded(size_t(f.size)), out(size_t(f.length));
        T* __restrict xp = padded.data();
        T* __restrict z = out.data();
        for (int64_t p = lo; p < hi; ++p) {
            int64_t c = p % s.in_channels;
            const T* w = weight + c * taps;
            pad_into(x + p * in_size, xp, f, s);
            std::fill(z, z + f.length, bias ? bias[c] : T(0));
            for (size_t r = 0; r < f.tap_rows.size(); ++r, w += s.kernel[2]) {
                const T* row = xp + f.tap_rows[r];
                if (s.kernel[2] == 3 && s.dilation[2] == 1) {
                    T w0 = w[0], w1 = w[1], w2 = w[2];
                    for (int64_t i = 0; i < f.length; ++i)
                        z[i] += w0 * row[i] + w1 * row[i + 1] + w2 * row[i + 2];
                    continue;
                }
                for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
                    const T* tap = row + kw * s.dilation[2];
                    T value = w[kw];
                    for (int64_t i = 0; i < f.length; ++i) z[i] += value * tap[i];
                }
            }
            T* yp = y + p * out_size;
            for_each_flat_row(f, s.output, 0, [&](int64_t from, int64_t to) {
                std::copy(z + from, z + from + s.output[2], yp + to);
            });
        }
    });
}

template <typename T>
void forward_typed(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
    if (flat_applies(s)) return forward_flat(x, weight, bias, y, s);
    int64_t in_size = s.input_size(), out_size = s.output_size(), taps = s.kernel_size();
    for_each_plane(s, out_size * taps, [&](int64_t b, int64_t c) {
        int64_t plane = b * s.in_channels + c;
        forward_plane(x + plane * in_size, weight + c * taps, bias ? bias[c] : T(0),
                      y + plane * out_size, s);
    });
}

// grad_x[i] = sum over taps k and outputs o with o * stride - padding + k * dilation = i of
// w[k] grad_y[o]. At stride 1 that is a forward pass over grad_y with the kernel flipped and
// padding (kernel - 1) * dilation - padding (negative padding crops, which valid_range allows);
// otherwise each grad_y row is scattered through the taps.
template <typename T>
void backward_input_typed(const T* grad_y, const T* weight, T* grad_x, const ConvShape& s) {
    int64_t in_size = s.input_size(), out_size = s.output_size(), taps = s.kernel_size();
    bool unit_stride = s.stride[0] == 1 && s.stride[1] == 1 && s.stride[2] == 1;
    if (unit_stride) {
        ConvShape flipped = s;
        for (int d = 0; d < 3; ++d) {
            flipped.input[d] = s.output[d];
            flipped.output[d] = s.input[d];
            flipped.padding[d] = (s.kernel[d] - 1) * s.dilation[d] - s.padding[d];
        }
        std::vector<T> reversed(size_t(s.in_channels * taps));
        for (int64_t c = 0; c < s.in_channels; ++c)
            for (int64_t k = 0; k < taps; ++k)
                reversed[c * taps + k] = weight[c * taps + taps - 1 - k];
        forward_typed<T>(grad_y, reversed.data(), nullptr, grad_x, flipped);
        return;
    }
    for_each_plane(s, out_size * taps, [&](int64_t b, int64_t c) {
        int64_t plane = b * s.in_channels + c;
        const T* gy = grad_y + plane * out_size;
        const T* w = weight + c * taps;
        T* gx = grad_x + plane * in_size;
        std::fill(gx, gx + in_size, T(0));
        int64_t sw = s.stride[2];
        for (int64_t od = 0; od < s.output[0]; ++od) {
            for (int64_t oh = 0; oh < s.output[1]; ++oh) {
                const T* gy_row = gy + (od * s.output[1] + oh) * s.output[2];
                for_each_kernel_row(s, od, oh, [&](int64_t in_row, int64_t tap) {
                    for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
                        int64_t offset = kw * s.dilation[2] - s.padding[2];
                        Range r = valid_range(s.output[2], sw, offset, s.input[2]);
                        T* gx_row = gx + in_row + offset;
                        T value = w[tap + kw];
                        for (int64_t o = r.lo; o < r.hi; ++o) gx_row[o * sw] += value * gy_row[o];
                    }
                });
            }
        }
    });
}

// sum of a[o] * b[o * stride] for o < n, in 8 independent lanes so that it vectorizes.
template <typename T>
T dot(const T* __restrict a, const T* __restrict b, int64_t n, int64_t stride) {
    T lanes[8] = {};
    int64_t o = 0;
    if (stride == 1) {
        for (; o + 8 <= n; o += 8)
            for (int j = 0; j < 8; ++j) lanes[j] += a[o + j] * b[o + j];
    }
    T total = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
              ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; o < n; ++o) total += a[o] * b[o * stride];
    return total;
}

// grad_w[kw] += sum over o of gy_row[o] x_row[o * stride + kw * dilation - padding] for one
// kernel row, one tap at a time over the outputs where the tap reads inside the input. (A
// fused three-tap pass measured twice as slow: GCC keeps its lanes in memory.)
template <typename T>
void row_weight_grad(const T* gy_row, const T* x_row, T* gw, const ConvShape& s) {
    int64_t sw = s.stride[2];
    for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
        int64_t offset = kw * s.dilation[2] - s.padding[2];
        Range r = valid_range(s.output[2], sw, offset, s.input[2]);
        if (r.lo < r.hi) gw[kw] += dot(gy_row + r.lo, x_row + offset + r.lo * sw, r.hi - r.lo, sw);
    }
}

// sums[t] += the kBlock lane sums of g[i] xp[offsets[t] + i] over i < length, for N taps at
// once in N vector registers (N <= 9: a 3x3 kernel's taps in one pass, one load of g each).
template <typename T, int N>
void accumulate_taps(const T* g, const T* xp, const int64_t* offsets, int64_t length,
                     typename BlockOf<T>::type* sums) {
    typename BlockOf<T>::type acc[N] = {}, gi, xi;
    for (int64_t i = 0; i < length; i += FlatPlane::kBlock) {
        load_block(g + i, gi);
        for (int t = 0; t < N; ++t) {
            load_block(xp + offsets[t] + i, xi);
            acc[t] += gi * xi;
        }
    }
    for (int t = 0; t < N; ++t) sums[t] += acc[t];
}

template <typename T, size_t... N>
constexpr auto make_tap_kernels(std::index_sequence<N...>) {
    return std::array{&accumulate_taps<T, int(N) + 1>...};
}
template <typename T>
constexpr auto kTapKernels = make_tap_kernels<T>(std::make_index_sequence<9>());

// The flat-plane form (forward_flat): grad_y is laid out at the outputs' flat indices, zero
// past each row's end, and every tap's gradient is summed in one pass over the plane, in
// kBlock lanes per tap (one dot product per tap over a 7x7 plane's 64 indices had run 3x slower
// than PyTorch: too short to hide the multiply-add latency in one chain).
template <typename T>
void backward_weight_flat(const T* x, const T* grad_y, T* grad_weight, const ConvShape& s) {
    FlatPlane f = flat_plane(s);
    int64_t in_size = s.input_size(), out_size = s.output_size(), taps = s.kernel_size();
    std::vector<int64_t> offsets;  // per tap
    for (int64_t row : f.tap_rows)
        for (int64_t kw = 0; kw < s.kernel[2]; ++kw) offsets.push_back(row + kw * s.dilation[2]);
    int64_t grain =
        std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, s.batch * f.length * taps));
    parallel_for(0, s.in_channels, grain, [&](int64_t lo, int64_t hi) {
        using Lanes = typename BlockOf<T>::type;
        CpuScratch<T> padded(size_t(f.size)), laid_out(size_t(f.length));
        std::vector<Lanes> lanes(static_cast<size_t>(taps));
        T* xp = padded.data();
        T* g = laid_out.data();
        for (int64_t c = lo; c < hi; ++c) {
            std::fill(lanes.begin(), lanes.end(), Lanes{});
            for (int64_t b = 0; b < s.batch; ++b) {
                int64_t plane = b * s.in_channels + c;
                pad_into(x + plane * in_size, xp, f, s);
                const T* gy = grad_y + plane * out_size;
                std::fill(g, g + f.length, T(0));
                for_each_flat_row(f, s.output, 0, [&](int64_t to, int64_t from) {
                    std::copy(gy + from, gy + from + s.output[2], g + to);
                });
                for (int64_t t = 0; t < taps; t += int64_t(kTapKernels<T>.size())) {
                    int64_t n = std::min<int64_t>(taps - t, int64_t(kTapKernels<T>.size()));
                    kTapKernels<T>[size_t(n - 1)](g, xp, offsets.data() + t, f.length,
                                                  lanes.data() + t);
                }
            }
            for (int64_t t = 0; t < taps; ++t)
                grad_weight[c * taps + t] = lane_sum<T>(lanes[size_t(t)]);
        }
    });
}

// grad_w[c, k] = sum over samples and outputs of grad_y[o] x[o * stride - padding + k *
// dilation]: one task per channel, samples in order, so no two tasks share an element.
template <typename T>
void backward_weight_typed(const T* x, const T* grad_y, T* grad_weight, const ConvShape& s) {
    if (flat_applies(s)) return backward_weight_flat(x, grad_y, grad_weight, s);
    int64_t in_size = s.input_size(), out_size = s.output_size(), taps = s.kernel_size();
    int64_t grain =
        std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, s.batch * out_size * taps));
    parallel_for(0, s.in_channels, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t c = lo; c < hi; ++c) {
            T* gw = grad_weight + c * taps;
            std::fill(gw, gw + taps, T(0));
            for (int64_t b = 0; b < s.batch; ++b) {
                int64_t plane = b * s.in_channels + c;
                const T* xp = x + plane * in_size;
                const T* gy = grad_y + plane * out_size;
                for (int64_t od = 0; od < s.output[0]; ++od) {
                    for (int64_t oh = 0; oh < s.output[1]; ++oh) {
                        const T* gy_row = gy + (od * s.output[1] + oh) * s.output[2];
                        for_each_kernel_row(s, od, oh, [&](int64_t in_row, int64_t tap) {
                            row_weight_grad(gy_row, xp + in_row, gw + tap, s);
                        });
                    }
                }
            }
        }
    });
}

// ---- Dense convolutions writing few channels ----

// y = conv(x, weight) + bias at stride 1. A task is a box of output rows (sample, od in
// [d0, d1), oh in [h0, h1)) whose sums, every channel's, stay in cache (about 256 KiB). It
// takes the input channels one at a time: the slab of input rows its box reads is copied once
// into a zero-padded buffer (rows of `stride`, zero rows outside the input), so every input
// value comes from memory about once (at 192 -> 2 channels on 2x32x64x64 the input is 200 MB,
// and rows copied per output row were read 9 times: the step was bound by memory), and every
// output row then runs register tiles of 8 blocks (channels x outputs) over all its
// kernel rows.
template <typename T>
void few_forward_typed(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
    const int64_t in_size = s.input_size(), out_size = s.output_size(), taps = s.kernel_size();
    const int64_t channels = s.out_channels, width = s.output[2];
    // wt[ci][tap][co] = weight[co][ci][tap]: a tile's channels side by side per tap.
    std::vector<T> wt(size_t(s.in_channels * taps * channels));
    for (int64_t co = 0; co < channels; ++co)
        for (int64_t r = 0; r < s.in_channels * taps; ++r)
            wt[size_t(r * channels + co)] = weight[co * s.in_channels * taps + r];
    // Channels per tile and outputs per tile (the last tile of a row runs past its end into
    // padding).
    const int64_t tile_channels = channels >= 4 ? 4 : channels >= 2 ? 2 : 1;
    int64_t blocks = 8 / tile_channels;  // fewer along short rows
    while (blocks > 2 && (blocks / 2) * FlatPlane::kBlock >= width) blocks /= 2;
    const int64_t segment = blocks * FlatPlane::kBlock;
    const int64_t rounded = (width + segment - 1) / segment * segment;
    const int64_t stride =
        std::max(rounded + (s.kernel[2] - 1) * s.dilation[2], s.padding[2] + s.input[2]);
    // The box: rows_h output rows along H (all of them if they fit), rows_d along D.
    int64_t fit =
        std::max<int64_t>(1, (int64_t(256) << 10) / int64_t(sizeof(T) * channels * rounded));
    int64_t rows_h = std::min(fit, s.output[1]);
    int64_t rows_d = std::clamp<int64_t>(fit / rows_h, 1, s.output[0]);
    int64_t boxes_h = (s.output[1] + rows_h - 1) / rows_h;
    int64_t boxes_d = (s.output[0] + rows_d - 1) / rows_d;
    // The slab a box reads, and each kernel row's offset in it.
    const int64_t slab_h = rows_h + (s.kernel[1] - 1) * s.dilation[1];
    const int64_t slab_d = rows_d + (s.kernel[0] - 1) * s.dilation[0];
    std::vector<int64_t> offsets;
    for (int64_t kd = 0; kd < s.kernel[0]; ++kd)
        for (int64_t kh = 0; kh < s.kernel[1]; ++kh)
            offsets.push_back((kd * s.dilation[0] * slab_h + kh * s.dilation[1]) * stride);
    const int64_t kernel_rows = int64_t(offsets.size());
    int64_t boxes = s.batch * boxes_d * boxes_h;
    parallel_for(0, boxes, 1, [&](int64_t lo, int64_t hi) {
        CpuScratch<T> slab(size_t(slab_d * slab_h * stride));
        CpuScratch<T> sums(size_t(rows_d * rows_h * channels * rounded));
        for (int64_t box = lo; box < hi; ++box) {
            const int64_t b = box / (boxes_d * boxes_h);
            const int64_t d0 = box / boxes_h % boxes_d * rows_d, h0 = box % boxes_h * rows_h;
            const int64_t d1 = std::min(s.output[0], d0 + rows_d);
            const int64_t h1 = std::min(s.output[1], h0 + rows_h);
            // sums[row][co][0..rounded), row = (od - d0) * rows_h + oh - h0
            T* sum = sums.data();
            for (int64_t row = 0; row < rows_d * rows_h; ++row)
                for (int64_t co = 0; co < channels; ++co)
                    std::fill(sum + (row * channels + co) * rounded,
                              sum + (row * channels + co + 1) * rounded, bias ? bias[co] : T(0));
            for (int64_t ci = 0; ci < s.in_channels; ++ci) {
                const T* plane = x + (b * s.in_channels + ci) * in_size;
                for (int64_t a = 0; a < slab_d; ++a) {
                    int64_t id = d0 - s.padding[0] + a;
                    for (int64_t c = 0; c < slab_h; ++c) {
                        int64_t ih = h0 - s.padding[1] + c;
                        T* row = slab.data() + (a * slab_h + c) * stride;
                        if (id < 0 || id >= s.input[0] || ih < 0 || ih >= s.input[1]) {
                            std::fill(row, row + stride, T(0));
                            continue;
                        }
                        const T* from = plane + (id * s.input[1] + ih) * s.input[2];
                        std::fill(row, row + s.padding[2], T(0));
                        std::copy(from, from + s.input[2], row + s.padding[2]);
                        std::fill(row + s.padding[2] + s.input[2], row + stride, T(0));
                    }
                }
                const T* w = wt.data() + ci * taps * channels;
                for (int64_t od = d0; od < d1; ++od)
                    for (int64_t oh = h0; oh < h1; ++oh) {
                        const T* rows = slab.data() + ((od - d0) * slab_h + oh - h0) * stride;
                        T* row_sums = sum + ((od - d0) * rows_h + oh - h0) * channels * rounded;
                        for (int64_t c0 = 0; c0 < channels; c0 += tile_channels) {
                            RegisterTile<T> tile = register_tile_for<T>(
                                std::min(tile_channels, channels - c0), blocks);
                            for (int64_t o = 0; o < rounded; o += segment)
                                tile(rows + o, offsets.data(), kernel_rows, s.kernel[2],
                                     s.dilation[2], w + c0, channels, row_sums + c0 * rounded + o,
                                     rounded);
                        }
                    }
            }
            for (int64_t od = d0; od < d1; ++od)
                for (int64_t oh = h0; oh < h1; ++oh)
                    for (int64_t co = 0; co < channels; ++co) {
                        const T* from =
                            sum + (((od - d0) * rows_h + oh - h0) * channels + co) * rounded;
                        std::copy(
                            from, from + width,
                            y + (b * channels + co) * out_size + (od * s.output[1] + oh) * width);
                    }
        }
    });
}

// grad_x at stride 1: the forward over grad_y with the channels' roles swapped, the kernel
// flipped and padding (kernel - 1) * dilation - padding.
template <typename T>
void few_backward_input_typed(const T* grad_y, const T* weight, T* grad_x, const ConvShape& s) {
    few_forward_typed<T>(grad_y, input_gradient_weight(weight, s).data(), nullptr, grad_x,
                         input_gradient_shape(s));
}

// grad_weight[co, ci, tap] = sum over samples and outputs of grad_y[co] x[ci] at the tap's
// offset: grad_y's planes laid out flat once, then one task per input channel, each of its
// sample planes padded into a flat buffer and every (class, tap) pair summed over it in
// vector lanes (backward_weight_flat's scheme; samples in order, so the sums depend on nothing
// but the shape).
template <typename T>
void few_backward_weight_typed(const T* x, const T* grad_y, T* grad_weight, const ConvShape& s) {
    using Lanes = typename BlockOf<T>::type;
    FlatPlane f = flat_plane(s);
    int64_t in_size = s.input_size(), out_size = s.output_size(), taps = s.kernel_size();
    std::vector<int64_t> offsets;  // per tap
    for (int64_t row : f.tap_rows)
        for (int64_t kw = 0; kw < s.kernel[2]; ++kw) offsets.push_back(row + kw * s.dilation[2]);
    int64_t planes = s.batch * s.out_channels;
    CpuScratch<T> laid_out(size_t(planes * f.length));
    parallel_for(0, planes, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t p = lo; p < hi; ++p) {
            T* g = laid_out.data() + p * f.length;
            std::fill(g, g + f.length, T(0));
            const T* gy = grad_y + p * out_size;
            for_each_flat_row(f, s.output, 0, [&](int64_t to, int64_t from) {
                std::copy(gy + from, gy + from + s.output[2], g + to);
            });
        }
    });
    parallel_for(0, s.in_channels, 1, [&](int64_t lo, int64_t hi) {
        CpuScratch<T> padded(size_t(f.size));
        std::vector<Lanes> lanes(static_cast<size_t>(s.out_channels * taps));
        for (int64_t ci = lo; ci < hi; ++ci) {
            std::fill(lanes.begin(), lanes.end(), Lanes{});
            for (int64_t b = 0; b < s.batch; ++b) {
                pad_into(x + (b * s.in_channels + ci) * in_size, padded.data(), f, s);
                for (int64_t co = 0; co < s.out_channels; ++co) {
                    const T* g = laid_out.data() + (b * s.out_channels + co) * f.length;
                    for (int64_t t = 0; t < taps; t += int64_t(kTapKernels<T>.size())) {
                        int64_t n = std::min<int64_t>(taps - t, int64_t(kTapKernels<T>.size()));
                        kTapKernels<T>[size_t(n - 1)](g, padded.data(), offsets.data() + t,
                                                      f.length, lanes.data() + co * taps + t);
                    }
                }
            }
            for (int64_t co = 0; co < s.out_channels; ++co)
                for (int64_t t = 0; t < taps; ++t)
                    grad_weight[(co * s.in_channels + ci) * taps + t] =
                        lane_sum<T>(lanes[size_t(co * taps + t)]);
        }
    });
}

}  // namespace

void depthwise_conv_forward(const StridedView& x, const StridedView& weight,
                            const StridedView& bias, const StridedView& y, const ConvShape& shape) {
    dispatch_floating(y.dtype, "conv", [&]<typename T>() {
        forward_typed<T>(x.ptr<const T>(), weight.ptr<const T>(),
                         bias.data ? bias.ptr<const T>() : nullptr, y.ptr<T>(), shape);
    });
}

void depthwise_conv_backward_input(const StridedView& grad_y, const StridedView& weight,
                                   const StridedView& grad_x, const ConvShape& shape) {
    dispatch_floating(grad_x.dtype, "conv", [&]<typename T>() {
        backward_input_typed<T>(grad_y.ptr<const T>(), weight.ptr<const T>(), grad_x.ptr<T>(),
                                shape);
    });
}

void depthwise_conv_backward_weight(const StridedView& x, const StridedView& grad_y,
                                    const StridedView& grad_weight, const ConvShape& shape) {
    dispatch_floating(grad_weight.dtype, "conv", [&]<typename T>() {
        backward_weight_typed<T>(x.ptr<const T>(), grad_y.ptr<const T>(), grad_weight.ptr<T>(),
                                 shape);
    });
}

bool few_channels_conv_applies(const ConvShape& s, ConvPass pass) {
    (void)pass;  // the three passes measured alike
    if (conv_direct_mode() == ConvDirect::never || s.groups != 1) return false;
    // Stride 1, and padding that neither the forward nor the flipped input gradient crops.
    for (int d = 0; d < 3; ++d)
        if (s.stride[d] != 1 || s.padding[d] < 0 ||
            s.padding[d] > (s.kernel[d] - 1) * s.dilation[d])
            return false;
    if (conv_direct_mode() == ConvDirect::always) return true;
    // Measured (2 threads, forward / forward + backward ms, these kernels against im2col + GEMM):
    // 192 -> 2 channels 3x3 on 2x256x256 18 / 50 against 57 / 104, 3x3x3 on 2x32x64x64 61 / 163
    // against 356 / 730; 64 -> 4 on 2x128x128 2.2 / 3.9 against 3.2 / 7.3; 32 -> 8 3x3x3 on
    // 1x32x64x64 20 / 35 against 27 / 38; but 64 -> 8 3x3 on 2x128x128 4.2 / 7.1 against
    // 4.0 / 6.4. A 1x1 kernel copies nothing for its GEMM; rows under 16 waste the tiles.
    const int64_t taps = s.kernel_size();
    return taps >= 2 && s.output[2] >= 16 &&
           (s.out_channels <= 4 || (s.out_channels <= kFewChannels && taps >= 27));
}

void few_channels_conv_forward(const StridedView& x, const StridedView& weight,
                               const StridedView& bias, const StridedView& y,
                               const ConvShape& shape) {
    dispatch_floating(y.dtype, "conv", [&]<typename T>() {
        few_forward_typed<T>(x.ptr<const T>(), weight.ptr<const T>(),
                             bias.data ? bias.ptr<const T>() : nullptr, y.ptr<T>(), shape);
    });
}

void few_channels_conv_backward_input(const StridedView& grad_y, const StridedView& weight,
                                      const StridedView& grad_x, const ConvShape& shape) {
    dispatch_floating(grad_x.dtype, "conv", [&]<typename T>() {
        few_backward_input_typed<T>(grad_y.ptr<const T>(), weight.ptr<const T>(), grad_x.ptr<T>(),
                                    shape);
    });
}

void few_channels_conv_backward_weight(const StridedView& x, const StridedView& grad_y,
                                       const StridedView& grad_weight, const ConvShape& shape) {
    dispatch_floating(grad_weight.dtype, "conv", [&]<typename T>() {
        few_backward_weight_typed<T>(x.ptr<const T>(), grad_y.ptr<const T>(), grad_weight.ptr<T>(),
                                     shape);
    });
}

}  // namespace lumen::cpu
