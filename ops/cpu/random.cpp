// CPU random kernels: Philox4x32-10 blocks (core/philox.h) turned into uniform, normal,
// integer and Bernoulli samples. Work is split over blocks, and each element depends only on
// (seed, offset, its index), so the thread count never changes a result. The element-to-block
// mapping is documented in ops/random_kernels.h.
#include <atomic>
#include <cmath>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/philox.h"
#include "ops/random_kernels.h"

namespace lumen::cpu {

namespace {

constexpr double kTwoPi = 6.283185307179586476925;

// Calls body(block, first_element, count) for each Philox block of `numel` elements packed
// `per_block` to a block, in parallel chunks of whole blocks.
template <typename Body>
void for_each_block(int64_t numel, int64_t per_block, const Body& body) {
    int64_t blocks = int64_t(philox_blocks(numel, per_block));
    parallel_for(0, blocks, kGrainSize / per_block, [&](int64_t lo, int64_t hi) {
        for (int64_t block = lo; block < hi; ++block) {
            int64_t first = block * per_block;
            body(block, first, std::min(per_block, numel - first));
        }
    });
}

// Calls body(i, u) with the uniform u in [0, 1) of every element i: a 24-bit float from one
// word (4 per block) or a 53-bit double from two words (2 per block).
template <typename U, typename Body>
void for_each_uniform(uint64_t seed, uint64_t offset, int64_t numel, const Body& body) {
    for_each_block(numel, kUniformsPerBlock<U>, [&](int64_t block, int64_t first, int64_t count) {
        Philox4 bits = philox4x32(seed, offset + uint64_t(block));
        for (int64_t w = 0; w < count; ++w) body(first + w, uniform_at<U>(bits.x, w));
    });
}

}  // namespace

void rand_forward(uint64_t seed, uint64_t offset, const StridedView& out) {
    dispatch_floating(out.dtype, "rand", [&]<typename T>() {
        T* data = out.ptr<T>();
        for_each_uniform<T>(seed, offset, out.numel(), [&](int64_t i, T u) { data[i] = u; });
    });
}

void randn_forward(uint64_t seed, uint64_t offset, const StridedView& out) {
    dispatch_floating(out.dtype, "randn", [&]<typename T>() {
        T* data = out.ptr<T>();
        for_each_block(out.numel(), 2, [&](int64_t block, int64_t first, int64_t count) {
            Philox4 bits = philox4x32(seed, offset + uint64_t(block));
            // Box-Muller: r = sqrt(-2 ln u1), z = r (cos 2 pi u2, sin 2 pi u2). 1 - u1 lies in
            // (0, 1], so the logarithm is finite.
            double u1 = 1.0 - uniform_double(bits.x[0], bits.x[1]);
            double u2 = uniform_double(bits.x[2], bits.x[3]);
            double radius = std::sqrt(-2.0 * std::log(u1));
            data[first] = T(radius * std::cos(kTwoPi * u2));
            if (count > 1) data[first + 1] = T(radius * std::sin(kTwoPi * u2));
        });
    });
}

void randint_forward(uint64_t seed, uint64_t offset, int64_t low, int64_t high,
                     const StridedView& out) {
    // Unsigned arithmetic: high - low may exceed INT64_MAX, and low + value wraps correctly.
    uint64_t range = uint64_t(high) - uint64_t(low);
    dispatch_numeric(out.dtype, "randint", [&]<typename T>() {
        T* data = out.ptr<T>();
        for_each_block(out.numel(), 2, [&](int64_t block, int64_t first, int64_t count) {
            Philox4 bits = philox4x32(seed, offset + uint64_t(block));
            for (int64_t w = 0; w < count; ++w) {
                uint64_t x = (uint64_t(bits.x[2 * w]) << 32) | bits.x[2 * w + 1];
                // floor(x * range / 2^64): the high half of a 128-bit product (Lemire).
                uint64_t value = uint64_t((unsigned __int128)x * range >> 64);
                data[first + w] = T(int64_t(uint64_t(low) + value));
            }
        });
    });
}

int64_t bernoulli_forward(uint64_t seed, uint64_t offset, const StridedView& p,
                          const StridedView& out) {
    FirstInvalid first_invalid;
    dispatch_floating(p.dtype, "bernoulli", [&]<typename P>() {
        const P* prob = p.ptr<const P>();
        dispatch_numeric_bool(out.dtype, "bernoulli", [&]<typename T>() {
            T* data = out.ptr<T>();
            for_each_uniform<P>(seed, offset, out.numel(), [&](int64_t i, P u) {
                // Written so that NaN fails the range test.
                if (!(prob[i] >= P(0) && prob[i] <= P(1))) first_invalid.note(i);
                data[i] = T(u < prob[i]);
            });
        });
    });
    return first_invalid.index.load();
}

void bernoulli_scalar_forward(uint64_t seed, uint64_t offset, double p, DType precision,
                              const StridedView& out) {
    dispatch_floating(precision, "bernoulli", [&]<typename P>() {
        dispatch_numeric_bool(out.dtype, "bernoulli", [&]<typename T>() {
            T* data = out.ptr<T>();
            P threshold = P(p);
            for_each_uniform<P>(seed, offset, out.numel(),
                                [&](int64_t i, P u) { data[i] = T(u < threshold); });
        });
    });
}

}  // namespace lumen::cpu
