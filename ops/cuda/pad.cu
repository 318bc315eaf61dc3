// CUDA pad over contiguous (outer, padded dims...), forward and backward, with the semantics of
// ops/cpu/pad.cpp. Forward: one thread per output element maps each padded coordinate to its
// source (or the constant). The constant backward is the forward with the pads negated (a
// crop). The other modes' backward is a gather: one thread per input element sums the outputs
// that copied it (per dim at most three ranges: the mirrored or wrapped copies and the
// replicated edges), in increasing output order like the CPU's scatter, so no atomics.
#include "core/cuda/cuda_check.h"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/pad_kernels.h"

namespace lumen::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void pad_forward_kernel(const T* x, T* y, PadGeometry g, T value, int64_t count) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t rest = i, offset = 0, stride = 1;
        bool inside = true;
        for (int j = g.dims - 1; j >= 0; --j) {
            int64_t source = pad_source_index(rest % g.out[j], g.before[j], g.in[j], g.mode);
            rest /= g.out[j];
            inside = inside && source >= 0;
            offset += source * stride;
            stride *= g.in[j];
        }
        // rest is now the outer index and stride the size of one input slice.
        y[i] = inside ? x[rest * stride + offset] : value;
    }
}

// Up to three ranges [lo, hi) of outputs along one dim, in increasing order.
struct Ranges {
    int64_t lo[3], hi[3];
    int count;
};

__device__ void add_range(Ranges& r, int64_t lo, int64_t hi, int64_t out) {
    lo = lo < 0 ? 0 : lo;
    hi = hi > out ? out : hi;
    if (lo < hi) {
        r.lo[r.count] = lo;
        r.hi[r.count] = hi;
        ++r.count;
    }
}

// The outputs o (position p = o - before) whose pad_source_index is i, for the non-constant modes.
// The pad limits checked in ops/pad.cpp keep p within [-in, 2 in), so these are all.
__device__ Ranges copies_of(int64_t i, int64_t before, int64_t in, int64_t out, PadMode mode) {
    Ranges r;
    r.count = 0;
    int64_t direct = i + before;  // p = i
    if (mode == PadMode::reflect) {
        if (i > 0) add_range(r, before - i, before - i + 1, out);  // p = -i
        add_range(r, direct, direct + 1, out);
        int64_t mirrored = before + 2 * (in - 1) - i;  // p = 2 (in - 1) - i >= in
        if (i < in - 1) add_range(r, mirrored, mirrored + 1, out);
    } else if (mode == PadMode::replicate) {
        if (i == 0) add_range(r, 0, before, out);  // every p < 0
        add_range(r, direct, direct + 1, out);
        if (i == in - 1) add_range(r, before + in, out, out);  // every p >= in
    } else {                                                   // circular: p = i - in, i, i + in
        add_range(r, direct - in, direct - in + 1, out);
        add_range(r, direct, direct + 1, out);
        add_range(r, direct + in, direct + in + 1, out);
    }
    return r;
}

// 1 to 3 padded dims; missing leading dims are treated as size 1 with one trivial range.
template <typename T>
__global__ void pad_backward_kernel(const T* grad_out, T* grad_x, PadGeometry g, int64_t count) {
    const int skip = 3 - g.dims;
    int64_t out_slice = 1;
    for (int j = 0; j < g.dims; ++j) out_slice *= g.out[j];
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Ranges r[3];
        int64_t size[3] = {1, 1, 1}, rest = i;
        for (int k = 2; k >= 0; --k) {
            if (k < skip) {
                r[k] = Ranges{{0, 0, 0}, {1, 1, 1}, 1};
                continue;
            }
            int j = k - skip;
            r[k] = copies_of(rest % g.in[j], g.before[j], g.in[j], g.out[j], g.mode);
            rest /= g.in[j];
            size[k] = g.out[j];
        }
        const T* go = grad_out + rest * out_slice;
        T total = T(0);
        for (int a = 0; a < r[0].count; ++a)
            for (int64_t o0 = r[0].lo[a]; o0 < r[0].hi[a]; ++o0)
                for (int b = 0; b < r[1].count; ++b)
                    for (int64_t o1 = r[1].lo[b]; o1 < r[1].hi[b]; ++o1)
                        for (int c = 0; c < r[2].count; ++c)
                            for (int64_t o2 = r[2].lo[c]; o2 < r[2].hi[c]; ++o2)
                                total += go[(o0 * size[1] + o1) * size[2] + o2];
        grad_x[i] = total;
    }
}

}  // namespace

void pad_forward(const StridedView& x, const StridedView& y, const PadGeometry& geometry) {
    int64_t count = y.numel();
    if (count == 0) return;
    dispatch_numeric_bool(x.dtype, "pad", [&]<typename T>() {
        pad_forward_kernel<T><<<grid_for(count), kThreads>>>(x.ptr<const T>(), y.ptr<T>(), geometry,
                                                             T(geometry.value), count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("pad_forward_kernel");
}

void pad_backward(const StridedView& grad_out, const StridedView& grad_x,
                  const PadGeometry& geometry) {
    int64_t count = grad_x.numel();
    if (count == 0) return;
    if (geometry.mode == PadMode::constant) {
        pad_forward(grad_out, grad_x, constant_pad_inverse(geometry));
        return;
    }
    dispatch_floating(grad_x.dtype, "pad", [&]<typename T>() {
        pad_backward_kernel<T><<<grid_for(count), kThreads>>>(grad_out.ptr<const T>(),
                                                              grad_x.ptr<T>(), geometry, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("pad_backward_kernel");
}

}  // namespace lumen::cuda
