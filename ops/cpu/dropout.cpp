// CPU dropout: the keep mask drawn from Philox4x32-10 blocks (core/philox.h) and applied in
// the same pass. Blocks are computed kLanes at a time, lane by lane, so that GCC vectorizes
// the 32 x 32 -> 64-bit multiplies; the words equal philox4x32's exactly. Work is split over
// whole blocks and each element depends on (seed, offset, index) only, so masks do not
// depend on the thread count.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/philox.h"
#include "ops/dropout_kernels.h"

namespace lumen::cpu {

namespace {

constexpr int kLanes = 8;

// words[w][j] = philox4x32(key, first + j).x[w] for j < kLanes.
void philox_lanes(uint64_t key, uint64_t first, uint32_t words[4][kLanes]) {
    uint32_t c0[kLanes], c1[kLanes], c2[kLanes] = {}, c3[kLanes] = {};
    for (int j = 0; j < kLanes; ++j) {
        uint64_t counter = first + uint64_t(j);
        c0[j] = uint32_t(counter);
        c1[j] = uint32_t(counter >> 32);
    }
    uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
    for (int round = 0; round < 10; ++round) {
        for (int j = 0; j < kLanes; ++j) {
            uint64_t p0 = uint64_t(0xD2511F53u) * c0[j];
            uint64_t p1 = uint64_t(0xCD9E8D57u) * c2[j];
            uint32_t n0 = uint32_t(p1 >> 32) ^ c1[j] ^ k0;
            uint32_t n2 = uint32_t(p0 >> 32) ^ c3[j] ^ k1;
            c1[j] = uint32_t(p1);
            c3[j] = uint32_t(p0);
            c0[j] = n0;
            c2[j] = n2;
        }
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    for (int j = 0; j < kLanes; ++j) {
        words[0][j] = c0[j];
        words[1][j] = c1[j];
        words[2][j] = c2[j];
        words[3][j] = c3[j];
    }
}

// Elements per Philox block: one 24-bit uniform per word (float), one 53-bit uniform per two
// words (double), as bernoulli draws them.
template <typename T>
constexpr int64_t per_block() {
    return std::is_same_v<T, float> ? 4 : 2;
}

template <typename T>
bool keep_element(const uint32_t words[4][kLanes], int j, int w, T keep_prob) {
    if constexpr (std::is_same_v<T, float>) {
        return uniform_float(words[w][j]) < keep_prob;
    } else {
        return uniform_double(words[2 * w][j], words[2 * w + 1][j]) < keep_prob;
    }
}

template <typename T>
void forward_typed(uint64_t seed, uint64_t offset, T keep_prob, T scale, const T* x, T* out,
                   uint8_t* mask, int64_t numel) {
    constexpr int64_t kPer = per_block<T>();
    constexpr int64_t kBatch = kLanes * kPer;  // elements per philox_lanes call
    int64_t batches = (numel + kBatch - 1) / kBatch;
    parallel_for(0, batches, std::max<int64_t>(1, kGrainSize / kBatch), [&](int64_t lo,
                                                                             int64_t hi) {
        uint32_t words[4][kLanes];
        for (int64_t batch = lo; batch < hi; ++batch) {
            philox_lanes(seed, offset + uint64_t(batch * kLanes), words);
            int64_t first = batch * kBatch;
            int64_t count = std::min(kBatch, numel - first);
            for (int64_t e = 0; e < count; ++e) {
                bool keep = keep_element(words, int(e / kPer), int(e % kPer), keep_prob);
                mask[first + e] = uint8_t(keep);
                out[first + e] = x[first + e] * (keep ? scale : T(0));
            }
        }
    });
}

}  // namespace

void dropout_forward(uint64_t seed, uint64_t offset, double keep_prob, double scale,
                     const StridedView& x, const StridedView& out, const StridedView& mask) {
    dispatch_floating(x.dtype, "dropout", [&]<typename T>() {
        forward_typed<T>(seed, offset, T(keep_prob), T(scale), x.ptr<const T>(), out.ptr<T>(),
                         mask.ptr<uint8_t>(), x.numel());
    });
}

void dropout_backward(const StridedView& grad_out, const StridedView& mask, double scale,
                      const StridedView& grad_x) {
    dispatch_floating(grad_out.dtype, "dropout", [&]<typename T>() {
        const T* g = grad_out.ptr<const T>();
        const uint8_t* m = mask.ptr<const uint8_t>();
        T* gx = grad_x.ptr<T>();
        T s = T(scale);
        parallel_for(0, grad_out.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) gx[i] = g[i] * (m[i] ? s : T(0));
        });
    });
}

}  // namespace lumen::cpu
