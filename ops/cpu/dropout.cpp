// CPU dropout: the keep mask drawn from Philox4x32-10 blocks (core/philox.h) and applied in
// the same pass. Blocks are computed 8 at a time (in AVX2 lanes where available); the words
// equal philox4x32's exactly. Work is split over whole blocks and each element depends on
// (seed, offset, index) only, so masks do not depend on the thread count. Under a sample shard
// (core/sample_shard.h) each local sample is a run of `per` consecutive global elements, drawn
// batch by batch the same way.
#include <algorithm>
#include <cstdint>
#include <cstring>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/philox.h"
#include "ops/dropout_kernels.h"

namespace lumen::cpu {

namespace {

constexpr int kLanes = 8;  // Philox blocks per philox_lanes call

// words[4 j + w] = philox4x32(key, first + j).x[w] for j < kLanes: the words of 8 blocks in
// element order. With AVX2 the 8 blocks run in the lanes of 256-bit registers: the 32 x 32
// -> 64-bit products come from _mm256_mul_epu32 on the even and the odd lanes, and a 4 x 4
// transpose per 128-bit half puts the words in element order.
void philox_lanes(uint64_t key, uint64_t first, uint32_t words[4 * kLanes]) {
#ifdef __AVX2__
    alignas(32) uint32_t low[kLanes], high[kLanes];
    for (int j = 0; j < kLanes; ++j) {
        low[j] = uint32_t(first + uint64_t(j));
        high[j] = uint32_t((first + uint64_t(j)) >> 32);
    }
    __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(low));
    __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(high));
    __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
    const __m256i m0 = _mm256_set1_epi32(int(0xD2511F53u)),
                  m1 = _mm256_set1_epi32(int(0xCD9E8D57u));
    uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
    // (low, high) 32-bit halves of m * c in every lane.
    auto multiply = [](__m256i m, __m256i c, __m256i& lo, __m256i& hi) {
        __m256i even = _mm256_mul_epu32(c, m);
        __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);
        lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
        hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    };
    for (int round = 0; round < 10; ++round) {
        __m256i lo0, hi0, lo1, hi1;
        multiply(m0, c0, lo0, hi0);
        multiply(m1, c2, lo1, hi1);
        c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(int(k0)));
        c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(int(k1)));
        c1 = lo1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpacklo_epi32(c2, c3);
    __m256i t2 = _mm256_unpackhi_epi32(c0, c1), t3 = _mm256_unpackhi_epi32(c2, c3);
    __m256i r0 = _mm256_unpacklo_epi64(t0, t1), r1 = _mm256_unpackhi_epi64(t0, t1);  // 0 4, 1 5
    __m256i r2 = _mm256_unpacklo_epi64(t2, t3), r3 = _mm256_unpackhi_epi64(t2, t3);  // 2 6, 3 7
    __m256i* out = reinterpret_cast<__m256i*>(words);
    _mm256_storeu_si256(out, _mm256_permute2x128_si256(r0, r1, 0x20));
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(r2, r3, 0x20));
    _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(r0, r1, 0x31));
    _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(r2, r3, 0x31));
#else
    for (int j = 0; j < kLanes; ++j) {
        Philox4 block = philox4x32(key, first + uint64_t(j));
        for (int w = 0; w < 4; ++w) words[4 * j + w] = block.x[w];
    }
#endif
}

template <typename T>
void forward_typed(uint64_t seed, uint64_t offset, T keep_prob, T scale, const T* x, T* out,
                   uint8_t* mask, int64_t numel) {
    constexpr int64_t kPer = kUniformsPerBlock<T>;  // as bernoulli draws them
    constexpr int64_t kBatch = kLanes * kPer;       // elements per philox_lanes call
    int64_t batches = (numel + kBatch - 1) / kBatch;
    parallel_for(
        0, batches, std::max<int64_t>(1, kGrainSize / kBatch), [&](int64_t lo, int64_t hi) {
            // Local arrays first: stores through the uint8 mask pointer could alias anything and
            // would keep the loops scalar.
            alignas(32) uint32_t words[4 * kLanes];
            alignas(32) T factor[kBatch];
            alignas(32) uint8_t keep[kBatch];
            const T threshold = keep_prob, kept_factor = scale;  // locals: selects, not loads
            for (int64_t batch = lo; batch < hi; ++batch) {
                philox_lanes(seed, offset + uint64_t(batch * kLanes), words);
                for (int64_t e = 0; e < kBatch; ++e) {
                    bool kept = uniform_at<T>(words, e) < threshold;
                    keep[e] = uint8_t(kept);
                    factor[e] = kept ? kept_factor : T(0);
                }
                int64_t first = batch * kBatch;
                int64_t count = std::min(kBatch, numel - first);
                for (int64_t e = 0; e < count; ++e) out[first + e] = x[first + e] * factor[e];
                std::memcpy(mask + first, keep, size_t(count));
            }
        });
}

// Sharded: local sample s, elements [s per, (s + 1) per), is the global run [g, g + per) with
// g = shard.global(s per). Each task draws one 8-block batch overlapping that run and keeps
// the overlap, so every element gets the words the unsharded loop gives its global index.
template <typename T>
void forward_sharded(uint64_t seed, uint64_t offset, T keep_prob, T scale, const ShardMap& shard,
                     const T* x, T* out, uint8_t* mask, int64_t numel) {
    constexpr int64_t kPer = kUniformsPerBlock<T>;
    constexpr int64_t kBatch = kLanes * kPer;
    const int64_t per = shard.per, samples = numel / per;
    // A run of `per` elements overlaps at most this many batches, however it is aligned.
    const int64_t spans = (per + kBatch - 1) / kBatch + 1;
    parallel_for(0, samples * spans, std::max<int64_t>(1, kGrainSize / kBatch),
                 [&](int64_t lo, int64_t hi) {
                     alignas(32) uint32_t words[4 * kLanes];
                     alignas(32) T factor[kBatch];
                     alignas(32) uint8_t keep[kBatch];
                     const T threshold = keep_prob, kept_factor = scale;
                     for (int64_t task = lo; task < hi; ++task) {
                         const int64_t sample = task / spans;
                         const int64_t begin = shard.global(sample * per), end = begin + per;
                         const int64_t batch = begin / kBatch + task % spans;
                         const int64_t first = std::max(batch * kBatch, begin);
                         const int64_t count = std::min((batch + 1) * kBatch, end) - first;
                         if (count <= 0) continue;
                         philox_lanes(seed, offset + uint64_t(batch * kLanes), words);
                         for (int64_t e = 0; e < kBatch; ++e) {
                             bool kept = uniform_at<T>(words, e) < threshold;
                             keep[e] = uint8_t(kept);
                             factor[e] = kept ? kept_factor : T(0);
                         }
                         const int64_t local = sample * per + (first - begin);
                         const int64_t skip = first - batch * kBatch;
                         for (int64_t e = 0; e < count; ++e)
                             out[local + e] = x[local + e] * factor[skip + e];
                         std::memcpy(mask + local, keep + skip, size_t(count));
                     }
                 });
}

}  // namespace

void philox_words(uint64_t key, uint64_t first, int64_t blocks, uint32_t* words) {
    alignas(32) uint32_t lanes[4 * kLanes];
    for (int64_t j = 0; j < blocks; j += kLanes) {
        philox_lanes(key, first + uint64_t(j), lanes);
        int64_t count = std::min<int64_t>(kLanes, blocks - j);
        std::memcpy(words + 4 * j, lanes, size_t(4 * count) * sizeof(uint32_t));
    }
}

void dropout_forward(uint64_t seed, uint64_t offset, double keep_prob, double scale,
                     const ShardMap& shard, const StridedView& x, const StridedView& out,
                     const StridedView& mask) {
    dispatch_floating(x.dtype, "dropout", [&]<typename T>() {
        if (shard.is_identity()) {
            forward_typed<T>(seed, offset, T(keep_prob), T(scale), x.ptr<const T>(), out.ptr<T>(),
                             mask.ptr<uint8_t>(), x.numel());
        } else {
            forward_sharded<T>(seed, offset, T(keep_prob), T(scale), shard, x.ptr<const T>(),
                               out.ptr<T>(), mask.ptr<uint8_t>(), x.numel());
        }
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
