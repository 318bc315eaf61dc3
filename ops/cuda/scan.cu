// CUDA selective scan with the semantics of ops/cpu/scan.cpp, as a chunked two-level scan: the
// recurrence h_t = exp(dt_t A) h_{t-1} + dt_t B_t u_t is linear in h, so L is cut into chunks of
// kChunk steps, each chunk is run from h = 0 (end state, sum of dt), a carry pass walks the
// chunks of every (b, d, n) in order, and each chunk is rerun from its true start state. B x D x
// N alone (4096 threads for D = 256, N = 16) cannot fill a GPU; chunks multiply that by L / 64.
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/scratch.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/elementwise_math.h"
#include "ops/scan_kernels.h"
#include "ops/scan_math.h"

namespace lumen::cuda {
namespace {

// Time steps per chunk. Scratch is O(B D N L / kChunk), at most the size of u for N <= 64.
constexpr int kChunk = 64;
constexpr int kThreads = 128;  // threads per block of the chunk kernels

// The inputs as typed device pointers plus the launch layout: every (batch, chunk, channel)
// "slot" gets `lanes` consecutive threads (a power of two <= 32); lane j holds states
// j, j + lanes, ... (S per thread), so sums over n are shuffles within the slot's lanes.
template <typename T>
struct ScanView {
    const T *u, *delta, *A, *Bm, *Cm, *D, *z, *bias;
    int64_t batch, channels, length, state, groups, chunks;
    int lanes;
    bool softplus;
    // Whether all slots of a warp share (batch, chunk, group), so grad_Bm / grad_Cm can be
    // summed over the warp's channels before the atomics.
    bool warp_sums_groups;
};

// Where backward writes; partial_* hold one value per (chunk, batch, channel[, state]).
template <typename T>
struct GradView {
    const T* grad_y;
    const T* chunk_state;  // end state of every chunk (after the carry pass)
    T* adjoint;            // in: dL/dh flowing into each chunk from later ones; out: grad_A parts
    T *partial_D, *partial_bias;
    T *u, *delta, *Bm, *Cm, *z;
};

// The (batch, chunk, channel) of a thread. Items run channel-fastest, so the slots of a warp
// share batch and chunk whenever the channel count is a multiple of the slots per warp.
struct Slot {
    int64_t b, c, d;
    int lane;       // 0 .. lanes - 1
    unsigned mask;  // this slot's lanes within the warp, for the shuffles
    bool valid;
};

template <typename T>
__device__ Slot slot_of(const ScanView<T>& s) {
    const int64_t thread = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t item = thread / s.lanes;
    Slot slot;
    slot.lane = int(thread % s.lanes);
    slot.d = item % s.channels;
    slot.c = item / s.channels % s.chunks;
    slot.b = item / s.channels / s.chunks;
    slot.valid = slot.b < s.batch;
    const int first = int(threadIdx.x % kWarpSize) - slot.lane;
    slot.mask = s.lanes == kWarpSize ? kFullMask : ((1u << s.lanes) - 1u) << first;
    return slot;
}

// What a slot reads: its row of u / delta / z / y, its Bm and Cm block, its chunk.
template <typename T>
struct Row {
    int64_t row;     // b * channels + d: element (row, t) at row * L + t
    int64_t bc;      // offset of (b, g, 0, 0) in Bm, Cm and their gradients; (t, n) at t N + n
    int64_t cell;    // (c, b, d) in the chunk buffers: (c * batch + b) * channels + d
    int64_t t0, t1;  // the chunk's time steps
    T offset, skip;  // delta_bias[d] and D[d], 0 when absent
};

template <typename T>
__device__ Row<T> row_of(const ScanView<T>& s, const Slot& slot) {
    Row<T> r;
    const int64_t g = slot.d / (s.channels / s.groups);
    r.row = slot.b * s.channels + slot.d;
    r.bc = (slot.b * s.groups + g) * s.length * s.state;
    r.cell = (slot.c * s.batch + slot.b) * s.channels + slot.d;
    r.t0 = slot.c * kChunk;
    r.t1 = r.t0 + kChunk < s.length ? r.t0 + kChunk : s.length;
    r.offset = s.bias ? s.bias[slot.d] : T(0);
    r.skip = s.D ? s.D[slot.d] : T(0);
    return r;
}

using Math = elementwise_math::LibraryMath;

template <typename T>
__device__ T step_size(const ScanView<T>& s, const Row<T>& r, int64_t t) {
    const T x = s.delta[r.row * s.length + t] + r.offset;
    return s.softplus ? scan_math::softplus(x) : x;
}

// dL/dy before the gate: grad_out times z sigmoid(z) when z is given.
template <typename T>
__device__ T ungated(const ScanView<T>& s, const T* grad_y, int64_t at) {
    T gy = grad_y[at];
    if (s.z) gy *= scan_math::gate<Math>(s.z[at]);
    return gy;
}

// Sum over the lanes of one slot; every lane gets it.
template <typename T>
__device__ T slot_sum(T value, const Slot& slot, int lanes) {
    for (int offset = lanes / 2; offset > 0; offset >>= 1)
        value += __shfl_xor_sync(slot.mask, value, offset, lanes);
    return value;
}

// out[j] = values[n] for the thread's states n = lane + j lanes, 0 beyond the state size.
template <typename T, int S>
__device__ void load_states(const T* values, const Slot& slot, int lanes, int64_t N, T (&out)[S]) {
#pragma unroll
    for (int j = 0; j < S; ++j) {
        const int64_t n = slot.lane + j * lanes;
        out[j] = n < N ? values[n] : T(0);
    }
}

template <typename T, int S>
__device__ void store_states(const T (&in)[S], const Slot& slot, int lanes, int64_t N, T* values) {
#pragma unroll
    for (int j = 0; j < S; ++j) {
        const int64_t n = slot.lane + j * lanes;
        if (n < N) values[n] = in[j];
    }
}

// One chunk forward. kOutput = false: from h = 0, writes the chunk's end state and sum of dt.
// kOutput = true: from the end state of the previous chunk, writes y (with D and the gate).
template <typename T, int S, bool kOutput>
__global__ void scan_chunk_forward_kernel(ScanView<T> s, T* chunk_dt, T* chunk_state, T* y) {
    const Slot slot = slot_of(s);
    if (!slot.valid) return;  // a slot's lanes leave together
    const Row<T> r = row_of(s, slot);
    const int64_t N = s.state, L = s.length, cells = s.batch * s.channels;
    T a[S], h[S] = {};
    load_states(s.A + slot.d * N, slot, s.lanes, N, a);
    if (kOutput && slot.c > 0) load_states(chunk_state + (r.cell - cells) * N, slot, s.lanes, N, h);
    T dt_sum = 0;
    for (int64_t t = r.t0; t < r.t1; ++t) {
        const T dt = step_size(s, r, t), u = s.u[r.row * L + t], dtu = dt * u;
        [[maybe_unused]] T part = 0;  // this thread's share of sum_n h_t[n] C_t[n]
#pragma unroll
        for (int j = 0; j < S; ++j) {
            const int64_t n = slot.lane + j * s.lanes;
            if (n >= N) continue;
            h[j] = exp(dt * a[j]) * h[j] + dtu * s.Bm[r.bc + t * N + n];
            if constexpr (kOutput) part += h[j] * s.Cm[r.bc + t * N + n];
        }
        if constexpr (kOutput) {
            T value = slot_sum(part, slot, s.lanes) + r.skip * u;
            if (s.z) value *= scan_math::gate<Math>(s.z[r.row * L + t]);
            if (slot.lane == 0) y[r.row * L + t] = value;
        } else {
            dt_sum += dt;
        }
    }
    if constexpr (!kOutput) {
        store_states(h, slot, s.lanes, N, chunk_state + r.cell * N);
        if (slot.lane == 0) chunk_dt[r.cell] = dt_sum;
    }
}

// Carry across chunks, one thread per (b, d, n), chunks in order: the end state of chunk c is
// exp(A sum dt_c) H_{c-1} + (its end state from 0). Overwrites chunk_state with the true ones.
template <typename T>
__global__ void scan_carry_forward_kernel(ScanView<T> s, const T* chunk_dt, T* chunk_state) {
    const int64_t N = s.state, cells = s.batch * s.channels, count = cells * N;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const T a = s.A[i % (s.channels * N)];  // (b, d, n) -> A[d, n]
        T h = 0;
        for (int64_t c = 0; c < s.chunks; ++c) {
            h = exp(a * chunk_dt[c * cells + i / N]) * h + chunk_state[c * count + i];
            chunk_state[c * count + i] = h;
        }
    }
}

// The adjoint gh_t = gy_t C_t + exp(dt_{t+1} A) gh_{t+1} is linear as well. Per chunk, from
// nothing flowing in at its end: writes what flows out of its start, exp(dt_t0 A) gh_t0.
template <typename T, int S>
__global__ void scan_chunk_adjoint_kernel(ScanView<T> s, const T* grad_y, T* adjoint) {
    const Slot slot = slot_of(s);
    if (!slot.valid) return;
    const Row<T> r = row_of(s, slot);
    const int64_t N = s.state, L = s.length;
    T a[S], carry[S] = {};
    load_states(s.A + slot.d * N, slot, s.lanes, N, a);
    for (int64_t t = r.t1 - 1; t >= r.t0; --t) {
        const T dt = step_size(s, r, t), gy = ungated(s, grad_y, r.row * L + t);
#pragma unroll
        for (int j = 0; j < S; ++j) {
            const int64_t n = slot.lane + j * s.lanes;
            if (n < N) carry[j] = (gy * s.Cm[r.bc + t * N + n] + carry[j]) * exp(dt * a[j]);
        }
    }
    store_states(carry, slot, s.lanes, N, adjoint + r.cell * N);
}

// Carry of the adjoint across chunks, last to first: replaces each chunk's value with what
// flows into its end from all later chunks, E_c = out_{c+1} + exp(A sum dt_{c+1}) E_{c+1}.
template <typename T>
__global__ void scan_carry_adjoint_kernel(ScanView<T> s, const T* chunk_dt, T* adjoint) {
    const int64_t N = s.state, cells = s.batch * s.channels, count = cells * N;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const T a = s.A[i % (s.channels * N)];
        T flowing = 0;
        for (int64_t c = s.chunks - 1; c >= 0; --c) {
            const T out = adjoint[c * count + i];
            adjoint[c * count + i] = flowing;
            flowing = out + exp(a * chunk_dt[c * cells + i / N]) * flowing;
        }
    }
}

// target[index] += value summed over the channels of a group. With warp_sums_groups the
// warp's slots (same batch, chunk and group) are summed by shuffles first, so one atomic per
// state and warp remains. Atomics: the order of the sum, and so the last bits, can vary
// between runs. Called by every lane of the warp (valid marks the real states).
template <typename T>
__device__ void add_over_channels(const ScanView<T>& s, T* target, int64_t index, T value,
                                  bool valid) {
    if (s.warp_sums_groups) {
        for (int offset = s.lanes; offset < kWarpSize; offset <<= 1)
            value += __shfl_xor_sync(kFullMask, value, offset);
        if (int(threadIdx.x % kWarpSize) >= s.lanes) return;
    }
    if (valid) atomicAdd(target + index, value);
}

// Recomputes a chunk's states h_t (t0 <= t < t1) from the state before it, with the step
// sizes and, when z is given, y before D and the gate.
template <typename T, int S>
__device__ void recompute_chunk(const ScanView<T>& s, const Slot& slot, const Row<T>& r,
                                const T (&a)[S], const T (&start)[S], T (&states)[kChunk][S],
                                T (&dts)[kChunk], T (&y_pre)[kChunk]) {
    const int64_t N = s.state;
    T h[S];
#pragma unroll
    for (int j = 0; j < S; ++j) h[j] = start[j];
    for (int64_t t = r.t0; t < r.t1; ++t) {
        const int i = int(t - r.t0);
        const T dt = step_size(s, r, t), dtu = dt * s.u[r.row * s.length + t];
        T part = 0;
#pragma unroll
        for (int j = 0; j < S; ++j) {
            const int64_t n = slot.lane + j * s.lanes;
            if (n < N) {
                h[j] = exp(dt * a[j]) * h[j] + dtu * s.Bm[r.bc + t * N + n];
                part += h[j] * s.Cm[r.bc + t * N + n];
            }
            states[i][j] = h[j];
        }
        dts[i] = dt;
        if (s.z) y_pre[i] = slot_sum(part, slot, s.lanes);
    }
}

// Every gradient of one chunk, backwards in time (ops/cpu/scan.cpp's backward_row):
//   gh = gy C_t + carry;  grad_C_t += gy h_t;  x = gh h_{t-1} exp(dt A);  grad_A += dt x;
//   grad_B_t += dt u gh;  grad_dt = sum_n x A + u sum_n gh B;  grad_u = gy D + dt sum_n gh B.
template <typename T, int S>
__global__ void scan_chunk_backward_kernel(ScanView<T> s, GradView<T> g) {
    const Slot slot = slot_of(s);
    if (!slot.valid) return;
    const Row<T> r = row_of(s, slot);
    const int64_t N = s.state, L = s.length, cells = s.batch * s.channels;
    T a[S], start[S] = {}, carry[S], grad_a[S] = {};
    load_states(s.A + slot.d * N, slot, s.lanes, N, a);
    if (slot.c > 0) load_states(g.chunk_state + (r.cell - cells) * N, slot, s.lanes, N, start);
    load_states(g.adjoint + r.cell * N, slot, s.lanes, N, carry);
    T states[kChunk][S], dts[kChunk], y_pre[kChunk];  // thread-local: kChunk (S + 2) values
    recompute_chunk<T, S>(s, slot, r, a, start, states, dts, y_pre);
    T grad_skip = 0, grad_bias = 0;
    for (int i = int(r.t1 - r.t0) - 1; i >= 0; --i) {
        const int64_t t = r.t0 + i, at = r.row * L + t;
        const T u = s.u[at], dt = dts[i];
        T gy = g.grad_y[at];
        if (s.z) {
            T grad_z;
            gy = scan_math::gate_backward<Math>(gy, y_pre[i] + r.skip * u, s.z[at], grad_z);
            if (slot.lane == 0) g.z[at] = grad_z;
        }
        grad_skip += gy * u;
        T x_a = 0, gh_b = 0;
#pragma unroll
        for (int j = 0; j < S; ++j) {
            const int64_t n = slot.lane + j * s.lanes, at_bc = r.bc + t * N + n;
            const bool valid = n < N;
            const T b = valid ? s.Bm[at_bc] : T(0), c = valid ? s.Cm[at_bc] : T(0);
            const T decay = exp(dt * a[j]), previous = i > 0 ? states[i - 1][j] : start[j];
            const T gh = gy * c + carry[j];
            const T x = gh * previous * decay;  // dL/d(dt A[n])
            grad_a[j] += dt * x;
            x_a += x * a[j];
            gh_b += gh * b;
            carry[j] = gh * decay;
            add_over_channels(s, g.Cm, valid ? at_bc : 0, gy * states[i][j], valid);
            add_over_channels(s, g.Bm, valid ? at_bc : 0, dt * u * gh, valid);
        }
        gh_b = slot_sum(gh_b, slot, s.lanes);
        T grad_dt = slot_sum(x_a, slot, s.lanes) + u * gh_b;
        if (s.softplus)
            grad_dt *= scan_math::sigmoid<Math>(T(s.delta[at] + r.offset));  // softplus' = sigmoid
        if (slot.lane == 0) {
            g.delta[at] = grad_dt;
            g.u[at] = gy * r.skip + dt * gh_b;
        }
        grad_bias += grad_dt;
    }
    store_states(grad_a, slot, s.lanes, N, g.adjoint + r.cell * N);  // its carry is used up
    if (slot.lane == 0) {
        g.partial_D[r.cell] = grad_skip;
        g.partial_bias[r.cell] = grad_bias;
    }
}

// out[i] = sum_p parts[p count + i], p in order: the per-(chunk, batch) partial gradients of
// A, D and delta_bias reduced deterministically.
template <typename T>
__global__ void sum_parts_kernel(const T* parts, int64_t count, int64_t part_count, T* out) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        T total = 0;
        for (int64_t p = 0; p < part_count; ++p) total += parts[p * count + i];
        out[i] = total;
    }
}

// ---- launchers ----

// Threads per slot: the state size rounded up to a power of two, at most a warp.
int lanes_for(int64_t state) {
    int lanes = 1;
    while (lanes < state && lanes < kWarpSize) lanes *= 2;
    return lanes;
}

template <typename T>
ScanView<T> view_of(const ScanInputs& in) {
    ScanView<T> s;
    s.u = static_cast<const T*>(in.u);
    s.delta = static_cast<const T*>(in.delta);
    s.A = static_cast<const T*>(in.A);
    s.Bm = static_cast<const T*>(in.Bm);
    s.Cm = static_cast<const T*>(in.Cm);
    s.D = static_cast<const T*>(in.D);
    s.z = static_cast<const T*>(in.z);
    s.bias = static_cast<const T*>(in.delta_bias);
    s.batch = in.batch;
    s.channels = in.channels;
    s.length = in.length;
    s.state = in.state;
    s.groups = in.groups;
    s.chunks = (in.length + kChunk - 1) / kChunk;
    s.lanes = lanes_for(in.state);
    s.softplus = in.delta_softplus;
    const int64_t slots_per_warp = kWarpSize / s.lanes;
    s.warp_sums_groups = in.groups > 0 && (in.channels / in.groups) % slots_per_warp == 0;
    return s;
}

// Blocks covering every slot; 0 when there is nothing to do.
template <typename T>
unsigned slot_blocks(const ScanView<T>& s) {
    const int64_t threads = s.batch * s.chunks * s.channels * s.lanes;
    const int64_t blocks = (threads + kThreads - 1) / kThreads;
    LUMEN_CHECK(blocks < (int64_t(1) << 31), "selective_scan", "too many (batch, chunk, channel) ",
                "items for one launch: ", threads / s.lanes);
    return unsigned(blocks);
}

// Calls body.template operator()<S>() with S >= ceil(state / 32) states per thread.
template <typename Body>
void with_states_per_thread(int64_t state, const Body& body) {
    const int64_t per_thread = (state + kWarpSize - 1) / kWarpSize;
    if (per_thread <= 1) return body.template operator()<1>();
    if (per_thread <= 2) return body.template operator()<2>();
    if (per_thread <= 4) return body.template operator()<4>();
    return body.template operator()<8>();
}

template <typename T>
void zero(void* data, int64_t count) {
    if (data != nullptr && count > 0)
        LUMEN_CUDA_CHECK(cudaMemsetAsync(data, 0, size_t(count) * sizeof(T)));
}

// The true end state of every chunk into chunk_state, and every chunk's sum of dt.
template <typename T, int S>
void chunk_end_states(const ScanView<T>& s, T* chunk_dt, T* chunk_state) {
    scan_chunk_forward_kernel<T, S, false>
        <<<slot_blocks(s), kThreads>>>(s, chunk_dt, chunk_state, nullptr);
    LUMEN_CUDA_CHECK_LAUNCH("scan_chunk_forward_kernel");
    const int64_t count = s.batch * s.channels * s.state;
    if (count == 0) return;
    scan_carry_forward_kernel<T><<<grid_for(count), 256>>>(s, chunk_dt, chunk_state);
    LUMEN_CUDA_CHECK_LAUNCH("scan_carry_forward_kernel");
}

template <typename T>
void forward_typed(const ScanInputs& in, T* y) {
    const ScanView<T> s = view_of<T>(in);
    const int64_t cells = s.batch * s.channels, chunked = s.chunks > 1 ? s.chunks : 0;
    Scratch chunk_dt = Scratch::of<T>(chunked * cells);
    Scratch chunk_state = Scratch::of<T>(chunked * cells * s.state);
    with_states_per_thread(s.state, [&]<int S>() {
        // A single chunk starts from h = 0 and needs no carry.
        if (s.chunks > 1) chunk_end_states<T, S>(s, chunk_dt.as<T>(), chunk_state.as<T>());
        scan_chunk_forward_kernel<T, S, true>
            <<<slot_blocks(s), kThreads>>>(s, chunk_dt.as<T>(), chunk_state.as<T>(), y);
        LUMEN_CUDA_CHECK_LAUNCH("scan_chunk_forward_kernel");
    });
}

// grad_A, grad_D, grad_delta_bias from the per-(chunk, batch) parts.
template <typename T>
void sum_shared_grads(const ScanView<T>& s, const GradView<T>& g, const ScanGrads& grads) {
    const int64_t parts = s.chunks * s.batch;
    auto sum = [&](const T* from, int64_t count, void* to) {
        if (to == nullptr || count == 0) return;
        sum_parts_kernel<T><<<grid_for(count), 256>>>(from, count, parts, static_cast<T*>(to));
        LUMEN_CUDA_CHECK_LAUNCH("sum_parts_kernel");
    };
    sum(g.adjoint, s.channels * s.state, grads.A);
    if (s.D) sum(g.partial_D, s.channels, grads.D);
    if (s.bias) sum(g.partial_bias, s.channels, grads.delta_bias);
}

template <typename T>
void backward_typed(const ScanInputs& in, const T* grad_y, const ScanGrads& grads) {
    const ScanView<T> s = view_of<T>(in);
    const int64_t cells = s.batch * s.channels, count = cells * s.state;
    zero<T>(grads.Bm, s.batch * s.groups * s.length * s.state);  // atomics add into them
    zero<T>(grads.Cm, s.batch * s.groups * s.length * s.state);
    if (cells * s.length == 0) {  // no time steps: the shared gradients are 0
        zero<T>(grads.A, s.channels * s.state);
        if (s.D) zero<T>(grads.D, s.channels);
        if (s.bias) zero<T>(grads.delta_bias, s.channels);
        return;
    }
    Scratch chunk_dt = Scratch::of<T>(s.chunks * cells);
    Scratch chunk_state = Scratch::of<T>(s.chunks * count),
            adjoint = Scratch::of<T>(s.chunks * count);
    Scratch partial_D = Scratch::of<T>(s.chunks * cells);
    Scratch partial_bias = Scratch::of<T>(s.chunks * cells);
    GradView<T> g{grad_y,
                  chunk_state.as<T>(),
                  adjoint.as<T>(),
                  partial_D.as<T>(),
                  partial_bias.as<T>(),
                  static_cast<T*>(grads.u),
                  static_cast<T*>(grads.delta),
                  static_cast<T*>(grads.Bm),
                  static_cast<T*>(grads.Cm),
                  static_cast<T*>(grads.z)};
    with_states_per_thread(s.state, [&]<int S>() {
        chunk_end_states<T, S>(s, chunk_dt.as<T>(), chunk_state.as<T>());
        scan_chunk_adjoint_kernel<T, S><<<slot_blocks(s), kThreads>>>(s, grad_y, adjoint.as<T>());
        LUMEN_CUDA_CHECK_LAUNCH("scan_chunk_adjoint_kernel");
        if (count > 0) {
            scan_carry_adjoint_kernel<T>
                <<<grid_for(count), 256>>>(s, chunk_dt.as<T>(), adjoint.as<T>());
            LUMEN_CUDA_CHECK_LAUNCH("scan_carry_adjoint_kernel");
        }
        scan_chunk_backward_kernel<T, S><<<slot_blocks(s), kThreads>>>(s, g);
        LUMEN_CUDA_CHECK_LAUNCH("scan_chunk_backward_kernel");
    });
    sum_shared_grads(s, g, grads);
}

}  // namespace

void selective_scan_forward(const ScanInputs& in, void* y) {
    if (in.batch * in.channels * in.length == 0) return;
    dispatch_floating(in.dtype, "selective_scan",
                      [&]<typename T>() { forward_typed<T>(in, static_cast<T*>(y)); });
}

void selective_scan_backward(const ScanInputs& in, const void* grad_out, const ScanGrads& grads) {
    dispatch_floating(in.dtype, "selective_scan", [&]<typename T>() {
        backward_typed<T>(in, static_cast<const T*>(grad_out), grads);
    });
}

}  // namespace lumen::cuda
