// CUDA reductions with the semantics of ops/cpu/reduce.cpp: sum, mean, amax/amin, arg max/min,
// var/std (two passes, as on the CPU) and logsumexp (max, then the sum of exp). A problem is
// planned as kept dims x reduced dims (size-1 dims dropped, both sorted by x stride and merged)
// and run by one generic kernel in one of two shapes:
//   inner: a reduced dim is closest in memory; the lanes of a warp (or block) share an output.
//   outer: a kept dim is; each thread owns an output, so neighbouring threads read neighbouring
//          memory (sums over leading dims: bias gradients, sum_to after broadcasting).
// When the outputs cannot fill the GPU, reductions are also split across blocks; the blocks
// write partial results that a second kernel combines in a fixed way (no atomics, so results
// do not vary between runs). Floating types accumulate in acc_t (float for float32 and the
// half types), integers and bool in int64.
#include <algorithm>
#include <climits>
#include <limits>
#include <memory>
#include <type_traits>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/dispatch.h"
#include "core/storage.h"
#include "ops/reduce_kernels.h"

namespace lumen::cuda {
namespace {

constexpr int kInnerThreads = 512;      // most threads of an inner block (one output per block)
constexpr int kOuterThreads = 256;      // most threads of an outer block (and of inner ones < 32)
constexpr int kMinUnitsPerThread = 16;  // loads per thread before a reduction is split further
constexpr int kMaxSplits = 1024;        // blocks sharing one output at most
constexpr int kUnroll = 4;              // loads in flight per thread

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t next_pow2(int64_t v) {
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
}

// ---- the plan ----

// n / divisor for n, divisor < 2^31 by a multiply and a shift (Granlund and Montgomery, as
// PyTorch's IntDivider): a 64-bit division costs tens of instructions per element and would
// make reductions over several dims compute-bound.
struct Divider {
    uint32_t divisor = 1, magic = 1, shift = 0;
};

Divider make_divider(uint32_t divisor) {
    Divider d;
    d.divisor = divisor;
    while (d.shift < 32 && (uint64_t(1) << d.shift) < divisor) ++d.shift;
    d.magic = uint32_t((uint64_t(1) << 32) * ((uint64_t(1) << d.shift) - divisor) / divisor + 1);
    return d;
}

__device__ __forceinline__ uint32_t divide(const Divider& d, uint32_t n) {
    return (__umulhi(n, d.magic) + n) >> d.shift;  // n < 2^31, so the sum cannot overflow
}

// Dims walked row-major: sizes, strides in x and in out (kept dims only; 0 for reduced ones).
struct DimPack {
    int ndim = 0;
    bool fast = true;  // every index < 2^31: 32-bit dividers
    int64_t size[kMaxDims] = {};
    int64_t x[kMaxDims] = {};
    int64_t out[kMaxDims] = {};
    Divider divider[kMaxDims] = {};

    void push(int64_t s, int64_t x_stride, int64_t out_stride) {
        size[ndim] = s;
        x[ndim] = x_stride;
        out[ndim] = out_stride;
        ++ndim;
    }
    int64_t numel() const {
        int64_t n = 1;
        for (int d = 0; d < ndim; ++d) n *= size[d];
        return n;
    }
    // Memory order (largest x stride first), then merges dims contiguous with the one before
    // in both x and out. Output indices then follow x's memory; out offsets stay explicit.
    void sort_and_coalesce() {
        for (int d = 1; d < ndim; ++d)
            for (int e = d; e > 0 && x[e - 1] < x[e]; --e) {
                std::swap(size[e - 1], size[e]);
                std::swap(x[e - 1], x[e]);
                std::swap(out[e - 1], out[e]);
            }
        int kept = 0;
        for (int d = 0; d < ndim; ++d) {
            if (kept > 0 && x[kept - 1] == x[d] * size[d] && out[kept - 1] == out[d] * size[d]) {
                size[kept - 1] *= size[d];
                x[kept - 1] = x[d];
                out[kept - 1] = out[d];
                continue;
            }
            size[kept] = size[d];
            x[kept] = x[d];
            out[kept] = out[d];
            ++kept;
        }
        ndim = kept;
        // Empty dims (a kept size 0: nothing is launched) get no dividers (no division by 0).
        int64_t n = numel();
        fast = n > 0 && n < (int64_t(1) << 31);
        for (int d = 0; d < ndim && fast; ++d) divider[d] = make_divider(uint32_t(size[d]));
    }
};

struct Offsets {
    int64_t x = 0, out = 0;
};

// The x and out offsets of the element at row-major `index` of dims.
__device__ __forceinline__ Offsets offsets_of(const DimPack& dims, int64_t index) {
    Offsets at;
    if (dims.ndim == 1) return {index * dims.x[0], index * dims.out[0]};
    if (dims.fast) {
        uint32_t i = uint32_t(index);
        for (int d = dims.ndim - 1; d > 0; --d) {
            uint32_t q = divide(dims.divider[d], i);
            int64_t r = int64_t(i - q * dims.divider[d].divisor);
            at.x += r * dims.x[d];
            at.out += r * dims.out[d];
            i = q;
        }
        if (dims.ndim > 0) {
            at.x += int64_t(i) * dims.x[0];
            at.out += int64_t(i) * dims.out[0];
        }
        return at;
    }
    for (int d = dims.ndim - 1; d >= 0; --d) {
        int64_t r = index % dims.size[d];
        at.x += r * dims.x[d];
        at.out += r * dims.out[d];
        index /= dims.size[d];
    }
    return at;
}

struct ReducePlan {
    DimPack kept, red;
    int64_t outputs = 1, count = 1;  // number of outputs, elements reduced into each
    bool inner = false;
    int64_t groups = 0;  // groups of outputs, one block row each (set by configure)
};

ReducePlan make_plan(const StridedView& x, const StridedView& out, uint32_t reduced) {
    LUMEN_ASSERT(x.ndim == out.ndim);
    ReducePlan plan;
    bool nothing_reduced = false;
    for (int d = 0; d < x.ndim; ++d) {
        if (x.shape[d] == 1) continue;
        if (reduced >> d & 1) {
            nothing_reduced |= x.shape[d] == 0;
            plan.red.push(x.shape[d], x.strides[d], 0);
        } else {
            plan.kept.push(x.shape[d], x.strides[d], out.strides[d]);
        }
    }
    if (nothing_reduced) plan.red = DimPack{};
    plan.kept.sort_and_coalesce();
    plan.red.sort_and_coalesce();
    plan.outputs = plan.kept.numel();
    plan.count = nothing_reduced ? 0 : plan.red.numel();
    int last_kept = plan.kept.ndim - 1, last_red = plan.red.ndim - 1;
    plan.inner = last_red >= 0 && (last_kept < 0 || plan.red.x[last_red] < plan.kept.x[last_kept]);
    return plan;
}

int current_device() {
    int device = 0;
    LUMEN_CUDA_CHECK(cudaGetDevice(&device));
    return device;
}

// Threads that fill the GPU once (2048 resident per SM).
int64_t target_threads() {
    static const int64_t threads = [] {
        int sms = 0;
        LUMEN_CUDA_CHECK(
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, current_device()));
        return int64_t(std::max(sms, 1)) * 2048;
    }();
    return threads;
}

struct LaunchShape {
    dim3 block, grid;
};

// Block and grid for `units` loads per output (elements, or packs of `vec` when vectorized).
// Inner: blockDim.x lanes per output, blockDim.y outputs per block. Outer: blockDim.x outputs,
// blockDim.y lanes per output. grid.x walks the output groups, grid.y splits reductions.
LaunchShape configure(ReducePlan& plan, int64_t units) {
    int64_t target = target_threads(), bx = 1, by = 1, lanes = 1;
    if (plan.inner) {
        bx = units <= kWarpSize * kMinUnitsPerThread
                 ? std::min<int64_t>(next_pow2(units), kWarpSize)
                 : std::min<int64_t>(next_pow2(ceil_div(units, kMinUnitsPerThread)), kInnerThreads);
        by = bx >= kWarpSize
                 ? 1
                 : std::clamp<int64_t>(next_pow2(plan.outputs), kWarpSize / bx, kOuterThreads / bx);
        plan.groups = ceil_div(plan.outputs, by);
        lanes = bx;
    } else {
        bx = std::min<int64_t>(next_pow2(plan.outputs), kWarpSize);
        int64_t wanted = std::min(ceil_div(target, plan.outputs),
                                  std::max<int64_t>(1, ceil_div(units, kMinUnitsPerThread)));
        by = std::clamp<int64_t>(next_pow2(wanted), std::max<int64_t>(1, kWarpSize / bx),
                                 kOuterThreads / bx);
        plan.groups = ceil_div(plan.outputs, bx);
        lanes = by;
    }
    int64_t threads = plan.groups * bx * by, splits = 1;
    if (threads < target) {
        splits = std::min({ceil_div(target, threads), ceil_div(units, lanes * kMinUnitsPerThread),
                           int64_t(kMaxSplits)});
        splits = std::max<int64_t>(splits, 1);
    }
    LaunchShape shape;
    shape.block = dim3(unsigned(bx), unsigned(by));
    shape.grid = dim3(unsigned(std::min<int64_t>(plan.groups, INT_MAX)), unsigned(splits));
    return shape;
}

// ---- the kernels ----

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
    T v[V];
};

template <typename T>
constexpr int kVec = 16 / int(sizeof(T));  // elements in a 16-byte load

// A value of any accumulator type from lane (lane ^ mask) of the warp.
template <typename A>
__device__ __forceinline__ A shuffle_xor(A value, int mask) {
    if constexpr (std::is_same_v<A, uint8_t>) {
        return A(__shfl_xor_sync(kFullMask, int(value), mask));
    } else if constexpr (std::is_same_v<A, int64_t>) {
        return A(__shfl_xor_sync(kFullMask, (long long)value, mask));
    } else if constexpr (std::is_arithmetic_v<A>) {
        return __shfl_xor_sync(kFullMask, value, mask);
    } else {
        A out = value;
        out.value = shuffle_xor(value.value, mask);
        out.index = shuffle_xor(value.index, mask);
        return out;
    }
}

// Unit `unit` of a reduction: a 16-byte pack (the reduced dim is contiguous and aligned) or
// one element found through the reduced dims.
template <int V, typename T>
__device__ __forceinline__ Pack<T, V> load_unit(const T* base, const DimPack& red, int64_t unit) {
    if constexpr (V > 1) {
        return *reinterpret_cast<const Pack<T, V>*>(base + unit * V);
    } else {
        Pack<T, 1> p;
        p.v[0] = base[offsets_of(red, unit).x];
        return p;
    }
}

// One thread's share of an output's reduction: units first, first + step, ... < units, with
// kUnroll loads issued before they are consumed.
template <int V, typename T, typename R>
__device__ typename R::Acc reduce_units(const R& r, const typename R::Context& context,
                                        const T* base, const DimPack& red, int64_t first,
                                        int64_t step, int64_t units) {
    typename R::Acc acc = r.identity();
    int64_t u = first;
    for (; u + (kUnroll - 1) * step < units; u += kUnroll * step) {
        Pack<T, V> packs[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) packs[k] = load_unit<V>(base, red, u + k * step);
#pragma unroll
        for (int k = 0; k < kUnroll; ++k)
#pragma unroll
            for (int c = 0; c < V; ++c)
                acc = r.accumulate(acc, packs[k].v[c], context, (u + k * step) * V + c);
    }
    for (; u < units; u += step) {
        Pack<T, V> pack = load_unit<V>(base, red, u);
#pragma unroll
        for (int c = 0; c < V; ++c) acc = r.accumulate(acc, pack.v[c], context, u * V + c);
    }
    return acc;
}

// Combines the values of the lanes sharing an output; the lane-0 thread of each output gets
// the result. Every thread of the block calls it (it may hold barriers).
template <typename R>
__device__ typename R::Acc combine_lanes(const R& r, typename R::Acc acc, bool inner,
                                         typename R::Acc* scratch) {
    if (inner) {
        // Lanes of an output are blockDim.x (a power of two) adjacent threads of one warp...
        int width = min(int(blockDim.x), kWarpSize);
        for (int mask = width / 2; mask > 0; mask >>= 1)
            acc = r.combine(acc, shuffle_xor(acc, mask));
        if (blockDim.x <= kWarpSize) return acc;
        // ... or the whole block (blockDim.y == 1): one value per warp, folded by warp 0.
        int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
        __syncthreads();  // scratch may still be read from the previous group
        if (lane == 0) scratch[warp] = acc;
        __syncthreads();
        if (warp == 0) {
            acc = lane < int(blockDim.x) / kWarpSize ? scratch[lane] : r.identity();
            for (int mask = kWarpSize / 2; mask > 0; mask >>= 1)
                acc = r.combine(acc, shuffle_xor(acc, mask));
        }
        return acc;
    }
    if (blockDim.y == 1) return acc;
    // Outer: the lanes of an output are a column of the block; a tree over rows in shared memory.
    int at = threadIdx.y * blockDim.x + threadIdx.x;
    __syncthreads();
    scratch[at] = acc;
    __syncthreads();
    for (int half = blockDim.y / 2; half > 0; half >>= 1) {
        if (int(threadIdx.y) < half)
            scratch[at] = r.combine(scratch[at], scratch[at + half * blockDim.x]);
        __syncthreads();
    }
    return scratch[threadIdx.x];
}

template <typename T, int V, typename R>
__global__ void __launch_bounds__(kInnerThreads)
    reduce_kernel(const T* x, ReducePlan plan, R r, typename R::Acc* partial) {
    using Acc = typename R::Acc;
    __shared__ alignas(16) unsigned char raw[kOuterThreads * sizeof(Acc)];
    Acc* scratch = reinterpret_cast<Acc*>(raw);
    bool inner = plan.inner;
    int slot = inner ? threadIdx.y : threadIdx.x;  // which output of the group
    int lane = inner ? threadIdx.x : threadIdx.y;  // which worker on that output
    int slots = inner ? blockDim.y : blockDim.x;
    int lanes = inner ? blockDim.x : blockDim.y;
    int64_t worker = int64_t(blockIdx.y) * lanes + lane, workers = int64_t(gridDim.y) * lanes;
    int64_t units = plan.count / V;
    // The loop bound is the same for the whole block, so every thread reaches every barrier.
    for (int64_t group = blockIdx.x; group < plan.groups; group += gridDim.x) {
        int64_t o = group * slots + slot;
        bool active = o < plan.outputs;
        Offsets at;
        Acc acc = r.identity();
        if (active) {
            at = offsets_of(plan.kept, o);
            acc = reduce_units<V>(r, r.context(o), x + at.x, plan.red, worker, workers, units);
        }
        acc = combine_lanes(r, acc, inner, scratch);
        if (active && lane == 0) {
            if (gridDim.y == 1) {
                r.finish(acc, o, at.out);
            } else {
                partial[int64_t(blockIdx.y) * plan.outputs + o] = acc;
            }
        }
    }
}

// Second stage of a split reduction: one warp per output folds its `splits` partials.
template <typename R>
__global__ void reduce_finish_kernel(ReducePlan plan, R r, const typename R::Acc* partial,
                                     int splits) {
    int lane = threadIdx.x % kWarpSize;
    int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
    int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarpSize;
    for (int64_t o = warp; o < plan.outputs; o += warps) {
        typename R::Acc acc = r.identity();
        for (int s = lane; s < splits; s += kWarpSize)
            acc = r.combine(acc, partial[int64_t(s) * plan.outputs + o]);
        for (int mask = kWarpSize / 2; mask > 0; mask >>= 1)
            acc = r.combine(acc, shuffle_xor(acc, mask));
        if (lane == 0) r.finish(acc, o, offsets_of(plan.kept, o).out);
    }
}

// Runs reducer r over the plan (all outputs written by r.finish).
template <typename T, typename R>
void run_reduce(ReducePlan plan, const T* x, const R& r) {
    if (plan.outputs == 0) return;
    // 16-byte loads need the reduced dim contiguous, whole packs per output and aligned rows.
    bool vectorize = plan.inner && plan.red.ndim == 1 && plan.red.x[0] == 1 &&
                     plan.count % kVec<T> == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    for (int d = 0; d < plan.kept.ndim; ++d) vectorize = vectorize && plan.kept.x[d] % kVec<T> == 0;
    int vec = vectorize ? kVec<T> : 1;
    LaunchShape shape = configure(plan, plan.count / vec);
    int splits = int(shape.grid.y);
    using Acc = typename R::Acc;
    std::unique_ptr<Storage> partial;
    Acc* partial_data = nullptr;
    if (splits > 1) {
        size_t bytes = size_t(plan.outputs) * size_t(splits) * sizeof(Acc);
        partial = std::make_unique<Storage>(bytes, Device::cuda(current_device()));
        partial_data = static_cast<Acc*>(partial->data());
    }
    if (vectorize) {
        reduce_kernel<T, kVec<T>, R><<<shape.grid, shape.block>>>(x, plan, r, partial_data);
    } else {
        reduce_kernel<T, 1, R><<<shape.grid, shape.block>>>(x, plan, r, partial_data);
    }
    LUMEN_CUDA_CHECK_LAUNCH("reduce_kernel");
    if (splits > 1) {
        unsigned blocks = unsigned(std::min<int64_t>(ceil_div(plan.outputs, 8), 65535));
        reduce_finish_kernel<R><<<blocks, 256>>>(plan, r, partial_data, splits);
        LUMEN_CUDA_CHECK_LAUNCH("reduce_finish_kernel");
    }
    // `partial` is released here; the caching allocator reuses it only for work queued after
    // these kernels on the same (default) stream.
}

// ---- reducers ----
// Each supplies Acc, a per-output Context, identity(), accumulate(acc, value, context,
// position) for the next element of one thread's share (positions increase), combine(a, b)
// for shares of the same output (any order: it must be commutative), and finish(acc, output,
// out_offset). `position` is the element's index along the reduced dims (the arg reducers
// reduce one dim, so it is the index along that dim).

struct NoContext {};

template <typename T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, acc_t<T>>;

// Sum (scale 1) or mean (scale 1 / count); integers and bool give int64. With `temp` set the
// result goes to temp[output] in Acc (var's first pass) instead of to out.
template <typename T>
struct SumReducer {
    using Acc = sum_acc_t<T>;
    using Context = NoContext;
    void* out;
    Acc* temp;
    Acc scale;

    __device__ Acc identity() const { return Acc(0); }
    __device__ Context context(int64_t) const { return {}; }
    __device__ Acc accumulate(Acc acc, T v, Context, int64_t) const { return acc + Acc(to_acc(v)); }
    __device__ Acc combine(Acc a, Acc b) const { return a + b; }
    __device__ void finish(Acc acc, int64_t o, int64_t at) const {
        if constexpr (std::is_integral_v<T>) {
            static_cast<int64_t*>(out)[at] = acc;
        } else if (temp != nullptr) {
            temp[o] = acc * scale;
        } else {
            static_cast<T*>(out)[at] = from_acc<T>(acc * scale);
        }
    }
};

template <typename A>
__device__ __forceinline__ bool is_inf(A v) {
    if constexpr (std::numeric_limits<A>::has_infinity) {
        return v == std::numeric_limits<A>::infinity() || v == -std::numeric_limits<A>::infinity();
    } else {
        return false;
    }
}

// amax / amin, NaN propagating. With `temp` set the result goes to temp[output] in Acc
// (logsumexp's first pass).
template <typename T, bool kMax>
struct ExtremumReducer {
    using Acc = acc_t<T>;
    using Context = NoContext;
    T* out;
    Acc* temp;

    __device__ Acc identity() const {
        if constexpr (std::numeric_limits<Acc>::has_infinity) {
            return kMax ? -std::numeric_limits<Acc>::infinity()
                        : std::numeric_limits<Acc>::infinity();
        } else {
            return kMax ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max();
        }
    }
    __device__ Context context(int64_t) const { return {}; }
    __device__ Acc combine(Acc a, Acc b) const { return kMax ? nan_max(a, b) : nan_min(a, b); }
    __device__ Acc accumulate(Acc acc, T v, Context, int64_t) const {
        return combine(acc, to_acc(v));
    }
    __device__ void finish(Acc acc, int64_t o, int64_t at) const {
        if (temp != nullptr) {
            temp[o] = acc;
        } else {
            out[at] = from_acc<T>(acc);
        }
    }
};

template <typename A>
struct ValueIndex {
    A value;
    int64_t index;  // -1: nothing reduced yet
};

// max / min with the index of the first extremum; NaN beats everything (the first NaN wins).
// combine breaks ties by the smaller index, so it does not depend on the order of shares.
template <typename T, bool kMax>
struct ArgReducer {
    using Acc = ValueIndex<acc_t<T>>;
    using Context = NoContext;
    T* values;
    int64_t* indices;

    __device__ static bool better(acc_t<T> v, acc_t<T> best) {
        return (kMax ? v > best : v < best) || (v != v && best == best);
    }
    __device__ Acc identity() const { return {acc_t<T>(0), -1}; }
    __device__ Context context(int64_t) const { return {}; }
    __device__ Acc accumulate(Acc acc, T v, Context, int64_t position) const {
        acc_t<T> value = to_acc(v);
        return acc.index < 0 || better(value, acc.value) ? Acc{value, position} : acc;
    }
    __device__ Acc combine(Acc a, Acc b) const {
        if (a.index < 0) return b;
        if (b.index < 0) return a;
        if (better(b.value, a.value)) return b;
        if (better(a.value, b.value)) return a;
        return b.index < a.index ? b : a;
    }
    __device__ void finish(Acc acc, int64_t, int64_t at) const {
        values[at] = from_acc<T>(acc.value);
        indices[at] = acc.index;
    }
};

// var's second pass: sum((x - mean)^2) / divisor, or its square root.
template <typename T>
struct SquaredDeviationReducer {
    using Acc = acc_t<T>;
    struct Context {
        Acc center;
    };
    const Acc* mean;
    T* out;
    Acc divisor;
    bool take_sqrt;

    __device__ Acc identity() const { return Acc(0); }
    __device__ Context context(int64_t o) const { return {mean[o]}; }
    __device__ Acc accumulate(Acc acc, T v, Context c, int64_t) const {
        Acc deviation = to_acc(v) - c.center;
        return acc + deviation * deviation;
    }
    __device__ Acc combine(Acc a, Acc b) const { return a + b; }
    __device__ void finish(Acc acc, int64_t, int64_t at) const {
        Acc variance = acc / divisor;  // n <= correction: x / 0 = inf or NaN, as in PyTorch
        out[at] = from_acc<T>(take_sqrt ? sqrt(variance) : variance);
    }
};

// logsumexp's second pass: max + log(sum(exp(x - max))). An infinite max cannot be subtracted
// (inf - inf = NaN): shifting by 0 instead keeps every argument of exp <= 0 when the max is
// -inf (all -inf: the result is -inf); a +inf max is the result itself.
template <typename T>
struct SumExpReducer {
    using Acc = acc_t<T>;
    struct Context {
        Acc shift;
    };
    const Acc* max;
    T* out;

    __device__ static Acc finite_shift(Acc m) { return is_inf(m) ? Acc(0) : m; }
    __device__ Acc identity() const { return Acc(0); }
    __device__ Context context(int64_t o) const { return {finite_shift(max[o])}; }
    __device__ Acc accumulate(Acc acc, T v, Context c, int64_t) const {
        return acc + exp(to_acc(v) - c.shift);
    }
    __device__ Acc combine(Acc a, Acc b) const { return a + b; }
    __device__ void finish(Acc acc, int64_t o, int64_t at) const {
        Acc m = max[o];
        out[at] = from_acc<T>(is_inf(m) && m > 0 ? m : finite_shift(m) + log(acc));
    }
};

// Floating dtypes (the half types included); integers and bool too when `integers`. bool is
// stored as bytes 0 / 1, so the uint8 kernels serve it.
template <typename F>
void dispatch_reduce(DType dtype, const char* op, bool integers, F&& body) {
    if (is_floating(dtype)) return dispatch_floating_half(dtype, op, body);
    LUMEN_CHECK(integers, op, "not implemented for dtype ", dtype, " (expected a floating dtype)");
    dispatch_numeric(dtype == DType::bool_ ? DType::uint8 : dtype, op, body);
}

const char* reduce_name(ReduceOp op) {
    switch (op) {
        case ReduceOp::sum: return "sum";
        case ReduceOp::mean: return "mean";
        case ReduceOp::amax: return "amax";
        case ReduceOp::amin: return "amin";
    }
    return "reduce";
}

}  // namespace

void reduce_forward(ReduceOp op, const StridedView& x, const StridedView& out, uint32_t reduced) {
    ReducePlan plan = make_plan(x, out, reduced);
    dispatch_reduce(x.dtype, reduce_name(op), op != ReduceOp::mean, [&]<typename T>() {
        const T* data = x.ptr<const T>();
        using Acc = typename SumReducer<T>::Acc;
        switch (op) {
            case ReduceOp::sum:
                return run_reduce(plan, data, SumReducer<T>{out.data, nullptr, Acc(1)});
            case ReduceOp::mean: {
                // 1 / 0 = inf makes the mean of nothing 0 * inf = NaN, as in PyTorch.
                Acc scale = Acc(1.0 / double(plan.count));
                return run_reduce(plan, data, SumReducer<T>{out.data, nullptr, scale});
            }
            case ReduceOp::amax:
                return run_reduce(plan, data, ExtremumReducer<T, true>{out.ptr<T>(), nullptr});
            case ReduceOp::amin:
                return run_reduce(plan, data, ExtremumReducer<T, false>{out.ptr<T>(), nullptr});
        }
    });
}

void arg_reduce_forward(bool is_max, const StridedView& x, int dim, const StridedView& values,
                        const StridedView& indices) {
    ReducePlan plan = make_plan(x, values, 1u << dim);
    dispatch_reduce(x.dtype, is_max ? "max" : "min", true, [&]<typename T>() {
        const T* data = x.ptr<const T>();
        if (is_max) {
            run_reduce(plan, data, ArgReducer<T, true>{values.ptr<T>(), indices.ptr<int64_t>()});
        } else {
            run_reduce(plan, data, ArgReducer<T, false>{values.ptr<T>(), indices.ptr<int64_t>()});
        }
    });
}

void var_forward(const StridedView& x, const StridedView& out, uint32_t reduced, double correction,
                 bool take_sqrt) {
    ReducePlan plan = make_plan(x, out, reduced);
    if (plan.outputs == 0) return;
    dispatch_floating_half(x.dtype, take_sqrt ? "std" : "var", [&]<typename T>() {
        using Acc = acc_t<T>;
        // Two passes as on the CPU: the means (one per output, indexed by output), then the
        // sum of squared deviations from them, which has no cancellation.
        Storage buffer(size_t(plan.outputs) * sizeof(Acc), Device::cuda(current_device()));
        Acc* means = static_cast<Acc*>(buffer.data());
        const T* data = x.ptr<const T>();
        run_reduce(plan, data, SumReducer<T>{nullptr, means, Acc(1.0 / double(plan.count))});
        Acc divisor = Acc(std::max(double(plan.count) - correction, 0.0));
        run_reduce(plan, data, SquaredDeviationReducer<T>{means, out.ptr<T>(), divisor, take_sqrt});
    });
}

void logsumexp_forward(const StridedView& x, const StridedView& out, uint32_t reduced) {
    ReducePlan plan = make_plan(x, out, reduced);
    if (plan.outputs == 0) return;
    dispatch_floating_half(x.dtype, "logsumexp", [&]<typename T>() {
        using Acc = acc_t<T>;
        Storage buffer(size_t(plan.outputs) * sizeof(Acc), Device::cuda(current_device()));
        Acc* maxima = static_cast<Acc*>(buffer.data());
        const T* data = x.ptr<const T>();
        run_reduce(plan, data, ExtremumReducer<T, true>{nullptr, maxima});
        run_reduce(plan, data, SumExpReducer<T>{maxima, out.ptr<T>()});
    });
}

}  // namespace lumen::cuda
