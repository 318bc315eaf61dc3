// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011):
// a counter-based generator. The 4 words for (key, counter) depend on nothing else, so
// element i of any random tensor is the same on CPU and CUDA and for any thread count.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define LUMEN_HOST_DEVICE __host__ __device__
#else
#define LUMEN_HOST_DEVICE
#endif

namespace lumen {

struct Philox4 {
    uint32_t x[4];
};

LUMEN_HOST_DEVICE inline Philox4 philox4x32(uint64_t key, uint64_t counter) {
    uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
    for (int round = 0; round < 10; ++round) {
        uint64_t p0 = uint64_t(0xD2511F53u) * c0;
        uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
        uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
        c1 = uint32_t(p1);
        c3 = uint32_t(p0);
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;  // Weyl sequence bumps of the key
        k1 += 0xBB67AE85u;
    }
    return Philox4{{c0, c1, c2, c3}};
}

// Uniform in [0, 1) from 24 random bits (float) or 53 bits (double).
LUMEN_HOST_DEVICE inline float uniform_float(uint32_t bits) {
    return float(bits >> 8) * (1.0f / 16777216.0f);
}
LUMEN_HOST_DEVICE inline double uniform_double(uint32_t high, uint32_t low) {
    uint64_t bits = (uint64_t(high) << 21) ^ (uint64_t(low) >> 11);
    return double(bits & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// Uniforms per Philox block in precision U (float or double): a float per 32-bit word, a
// double per two words.
template <typename U>
inline constexpr int kUniformsPerBlock = std::is_same_v<U, float> ? 4 : 2;

// The uniform of element e of consecutive Philox words (block j's 4 words from 4 j on): a
// float from word e, a double from words 2 e and 2 e + 1. Every random op of both backends
// maps elements to words this way.
template <typename U>
LUMEN_HOST_DEVICE inline U uniform_at(const uint32_t* words, int64_t e) {
    if constexpr (std::is_same_v<U, float>) {
        return uniform_float(words[e]);
    } else {
        return uniform_double(words[2 * e], words[2 * e + 1]);
    }
}

}  // namespace lumen
