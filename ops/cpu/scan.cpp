// CPU selective scan, forward and backward. Each (batch, channel) row runs the recurrence
// sequentially in time with the N states in a small array (the state loops vectorize: Bm and
// Cm arrive as (B, G, L, N)). Backward recomputes one row's states h_t and decays
// exp(dt_t A) into per-thread scratch (2 L N values), then runs the adjoint backwards:
//   gh_t = gy_t C_t + exp(dt_{t+1} A) gh_{t+1}      (gh = dL/dh_t, gy = dL/dy_t before the gate)
//   dL/dA += gh_t h_{t-1} exp(dt_t A) dt_t,   dL/ddt_t = sum_n gh_t (h_{t-1} exp(dt_t A) A + B_t
//   u_t) dL/dB_t += gh_t dt_t u_t,   dL/dC_t += gy_t h_t,   dL/du_t = gy_t D + dt_t sum_n gh_t B_t
// Gradients shared across rows (A, D, delta_bias, and Bm/Cm across the channels of a group)
// go to one buffer per partition of the rows, summed in partition order afterwards, so the
// result is the same in every run with the same thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include <Eigen/Core>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/reduce_kernels.h"
#include "ops/scan_kernels.h"
#include "ops/scan_math.h"

namespace lumen::cpu {

namespace {

// e^v for v <= 0 in plain float arithmetic, so that the loops around it vectorize.
struct CpuMath {
    template <typename T>
    static T exp_nonpositive(T v) {
        return vec::exp_nonpositive(v);
    }
};

// softplus(x) with PyTorch's threshold: x above 20, else log(1 + e^x) in plain float
// arithmetic (vec::log1p_exp) so that a loop over a row vectorizes.
inline float softplus_fast(float x) { return x > 20.0f ? x : vec::log1p_exp(x); }
inline double softplus_fast(double x) { return scan_math::softplus(x); }

// sum a[i] b[i] with 8 independent partial sums so that the loop vectorizes.
template <typename T>
[[gnu::always_inline]] inline T dot(const T* a, const T* b, int64_t n) {
    T lanes[8] = {};
    const int64_t full = n - n % 8;
    for (int64_t i = 0; i < full; i += 8)
        for (int j = 0; j < 8; ++j) lanes[j] += a[i + j] * b[i + j];
    for (int64_t j = 0; j < n - full; ++j) lanes[j] += a[full + j] * b[full + j];
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

template <typename T>
struct Scan {
    const T *u, *delta, *A, *Bm, *Cm, *D, *z, *bias;
    int64_t batch, channels, length, state, groups;
    bool softplus;

    explicit Scan(const ScanInputs& in)
        : u(static_cast<const T*>(in.u)),
          delta(static_cast<const T*>(in.delta)),
          A(static_cast<const T*>(in.A)),
          Bm(static_cast<const T*>(in.Bm)),
          Cm(static_cast<const T*>(in.Cm)),
          D(static_cast<const T*>(in.D)),
          z(static_cast<const T*>(in.z)),
          bias(static_cast<const T*>(in.delta_bias)),
          batch(in.batch),
          channels(in.channels),
          length(in.length),
          state(in.state),
          groups(in.groups),
          softplus(in.delta_softplus) {}

    int64_t rows() const { return batch * channels; }
    // Offset of row (b, d)'s (L, N) block in Bm / Cm.
    int64_t bc_offset(int64_t row) const {
        int64_t b = row / channels, g = row % channels / (channels / groups);
        return (b * groups + g) * length * state;
    }
    // dts[t] = the step sizes of row `row`, t < length.
    void steps(int64_t row, T* dts) const {
        const T* raw = delta + row * length;
        T offset = bias ? bias[row % channels] : T(0);
        if (softplus) {
            for (int64_t t = 0; t < length; ++t) dts[t] = softplus_fast(T(raw[t] + offset));
        } else {
            for (int64_t t = 0; t < length; ++t) dts[t] = raw[t] + offset;
        }
    }
};

// Runs row `row` forward: y_pre[t] = sum_n h_t C_t (no D, no gate); dts (L) receives the
// step sizes. With kStore it keeps the decays (L, N) and the states (L, N) for backward.
// kN > 0 is the state size known at compile time; with kN == 0 (size read from s) the
// state and the decays live in `scratch` (2 N).
template <typename T, int kN, bool kStore>
void scan_row(const Scan<T>& s, int64_t row, T* y_pre, T* dts, T* decays, T* states, T* scratch) {
    const int64_t N = kN > 0 ? kN : s.state, L = s.length;
    const T* a = s.A + row % s.channels * N;
    const T* b_rows = s.Bm + s.bc_offset(row);
    const T* c_rows = s.Cm + s.bc_offset(row);
    const T* u = s.u + row * L;
    s.steps(row, dts);  // off the recurrence's path
    // The state loops as Eigen arrays of N (a compile-time size when kN > 0): Eigen's packet
    // exp and fused multiply-adds vectorize where plain loops got scalarized.
    using Vec = Eigen::Array<T, (kN > 0 ? kN : Eigen::Dynamic), 1>;
    using Map = Eigen::Map<Vec>;
    using ConstMap = Eigen::Map<const Vec>;
    Vec state_store, decay_store;
    if constexpr (kN == 0) {
        (void)state_store;
        (void)decay_store;
    }
    Map state(kN > 0 ? state_store.data() : scratch, N);
    Map decay(kN > 0 ? decay_store.data() : scratch + N, N);
    ConstMap a_row(a, N);
    state.setZero();
    for (int64_t t = 0; t < L; ++t) {
        T dt = dts[t], dtu = dt * u[t];
        decay = (dt * a_row).exp();
        state = decay * state + dtu * ConstMap(b_rows + t * N, N);
        y_pre[t] = (state * ConstMap(c_rows + t * N, N)).sum();
        if constexpr (kStore) {
            Map(states + t * N, N) = state;
            Map(decays + t * N, N) = decay;
        }
    }
}

// Calls body.template operator()<kN>() with the state size as a constant for common sizes.
template <typename Body>
void with_state_size(int64_t state, const Body& body) {
    switch (state) {
        case 4: return body.template operator()<4>();
        case 8: return body.template operator()<8>();
        case 16: return body.template operator()<16>();
        case 32: return body.template operator()<32>();
        default: return body.template operator()<0>();
    }
}

template <typename T>
void forward_typed(const ScanInputs& in, T* y) {
    Scan<T> s(in);
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, s.length * s.state));
    with_state_size(s.state, [&]<int kN>() {
        parallel_for(0, s.rows(), grain, [&](int64_t lo, int64_t hi) {
            std::vector<T> scratch(size_t(2 * s.state + s.length));
            T* dts = scratch.data() + 2 * s.state;
            for (int64_t row = lo; row < hi; ++row) {
                T* out = y + row * s.length;
                scan_row<T, kN, false>(s, row, out, dts, nullptr, nullptr, scratch.data());
                const T* u = s.u + row * s.length;
                T skip = s.D ? s.D[row % s.channels] : T(0);
                for (int64_t t = 0; t < s.length; ++t) {
                    T value = out[t] + skip * u[t];
                    if (s.z) value *= scan_math::gate<CpuMath>(s.z[row * s.length + t]);
                    out[t] = value;
                }
            }
        });
    });
}

// Gradients shared between rows, accumulated by one partition of the rows.
template <typename T>
struct SharedGrads {
    T *A, *D, *bias, *Bm, *Cm;
};

// Per-row scratch for backward: dt, y_pre (L); decays, states (L, N); small N arrays.
template <typename T>
struct RowScratch {
    std::vector<T> dts, y_pre, decays, states, gh, x, ga, zeros, scan;
    explicit RowScratch(int64_t L, int64_t N)
        : dts(size_t(L)),
          y_pre(size_t(L)),
          decays(size_t(L * N)),
          states(size_t(L * N)),
          gh(size_t(N)),
          x(size_t(N)),
          ga(size_t(N)),
          zeros(size_t(N), T(0)),
          scan(size_t(2 * N)) {}
};

template <typename T, int kN>
void backward_row(const Scan<T>& s, int64_t row, const T* grad_out, const ScanGrads& grads,
                  const SharedGrads<T>& shared, RowScratch<T>& r) {
    const int64_t N = kN > 0 ? kN : s.state, L = s.length, d = row % s.channels;
    scan_row<T, kN, true>(s, row, r.y_pre.data(), r.dts.data(), r.decays.data(), r.states.data(),
                          r.scan.data());
    using Vec = Eigen::Array<T, (kN > 0 ? kN : Eigen::Dynamic), 1>;
    using Map = Eigen::Map<Vec>;
    using ConstMap = Eigen::Map<const Vec>;
    Vec gh_store, x_store, ga_store;  // fixed-size storage when kN > 0, else scratch
    Map gh(kN > 0 ? gh_store.data() : r.gh.data(), N);
    Map x(kN > 0 ? x_store.data() : r.x.data(), N);
    Map ga(kN > 0 ? ga_store.data() : r.ga.data(), N);
    ConstMap a(s.A + d * N, N);
    const T* b_rows = s.Bm + s.bc_offset(row);
    const T* c_rows = s.Cm + s.bc_offset(row);
    T* gb_rows = shared.Bm + s.bc_offset(row);
    T* gc_rows = shared.Cm + s.bc_offset(row);
    const T* u = s.u + row * L;
    const T* g = grad_out + row * L;
    T* gu = static_cast<T*>(grads.u) + row * L;
    T* gdelta = static_cast<T*>(grads.delta) + row * L;
    T skip = s.D ? s.D[d] : T(0), offset = s.bias ? s.bias[d] : T(0);
    T grad_skip = 0, grad_bias = 0;
    gh.setZero();
    ga.setZero();
    for (int64_t t = L - 1; t >= 0; --t) {
        T gy = g[t];
        if (s.z)
            gy = scan_math::gate_backward<CpuMath>(gy, r.y_pre[t] + skip * u[t], s.z[row * L + t],
                                                   static_cast<T*>(grads.z)[row * L + t]);
        grad_skip += gy * u[t];
        T dt = r.dts[t], dtu = dt * u[t];
        ConstMap decay(r.decays.data() + t * N, N);
        ConstMap previous(t > 0 ? r.states.data() + (t - 1) * N : r.zeros.data(), N);
        ConstMap b(b_rows + t * N, N);
        gh += gy * ConstMap(c_rows + t * N, N);
        Map(gc_rows + t * N, N) += gy * ConstMap(r.states.data() + t * N, N);
        x = gh * previous * decay;  // dL/d(dt A[n])
        ga += dt * x;
        Map(gb_rows + t * N, N) += dtu * gh;
        T gh_b = (gh * b).sum();
        T grad_dt = (x * a).sum() + u[t] * gh_b;
        gu[t] = gy * skip + dt * gh_b;
        gh *= decay;
        // softplus' = sigmoid
        if (s.softplus) grad_dt *= scan_math::sigmoid<CpuMath>(T(s.delta[row * L + t] + offset));
        gdelta[t] = grad_dt;
        grad_bias += grad_dt;
    }
    Map(shared.A + d * N, N) += ga;
    shared.D[d] += grad_skip;
    shared.bias[d] += grad_bias;
}

template <typename T>
void backward_typed(const ScanInputs& in, const T* grad_out, const ScanGrads& grads) {
    Scan<T> s(in);
    const int64_t N = s.state, L = s.length;
    const int64_t bc_size = s.batch * s.groups * L * N;
    const int64_t rows = s.rows();
    int64_t parts = std::min<int64_t>(get_num_threads(), rows);
    if (rows * L * N < kGrainSize) parts = 1;
    // Partition p accumulates A (D N), D (D), bias (D), Bm, Cm (B G L N) into buffer p.
    const int64_t part_size = s.channels * N + 2 * s.channels + 2 * bc_size;
    std::vector<T> buffers(size_t(parts * part_size), T(0));
    parallel_for(0, parts, 1, [&](int64_t lo, int64_t hi) {
        RowScratch<T> scratch(L, N);
        for (int64_t p = lo; p < hi; ++p) {
            T* base = buffers.data() + p * part_size;
            SharedGrads<T> shared{base, base + s.channels * N, base + s.channels * N + s.channels,
                                  base + s.channels * N + 2 * s.channels,
                                  base + s.channels * N + 2 * s.channels + bc_size};
            with_state_size(N, [&]<int kN>() {
                for (int64_t row = rows * p / parts; row < rows * (p + 1) / parts; ++row)
                    backward_row<T, kN>(s, row, grad_out, grads, shared, scratch);
            });
        }
    });
    // Sum the partitions in order into part 0, then scatter to the gradient arrays.
    T* total = buffers.data();
    parallel_for(0, part_size, kGrainSize, [&](int64_t lo, int64_t hi) {
        for (int64_t p = 1; p < parts; ++p) {
            const T* part = buffers.data() + p * part_size;
            for (int64_t i = lo; i < hi; ++i) total[i] += part[i];
        }
    });
    auto copy_out = [](const T* from, int64_t count, void* to) {
        if (to) std::copy(from, from + count, static_cast<T*>(to));
    };
    copy_out(total, s.channels * N, grads.A);
    if (s.D) copy_out(total + s.channels * N, s.channels, grads.D);
    if (s.bias) copy_out(total + s.channels * N + s.channels, s.channels, grads.delta_bias);
    copy_out(total + s.channels * N + 2 * s.channels, bc_size, grads.Bm);
    copy_out(total + s.channels * N + 2 * s.channels + bc_size, bc_size, grads.Cm);
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

}  // namespace lumen::cpu
