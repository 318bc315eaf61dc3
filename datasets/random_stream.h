// Random numbers for the data pipeline, drawn from a lumen Generator (core/random.h) block by
// block of Philox words, so a generator's seed fixes every draw whatever the thread. Also the
// keyed hash that derives per-epoch and per-sample seeds.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/philox.h"
#include "core/random.h"

namespace lumen::datasets {

// A 64-bit seed for (seed, value): Philox used as a keyed hash, so derived seeds of nearby
// values are unrelated. derive_seed(derive_seed(s, epoch), index) seeds one sample.
inline uint64_t derive_seed(uint64_t seed, uint64_t value) {
    Philox4 words = philox4x32(seed, value);
    return (uint64_t(words.x[0]) << 32) | words.x[1];
}

// Consecutive random words of `generator`: each block of 4 reserves one counter. Draws depend
// only on the generator's seed and offset and on the sequence of calls.
class RandomStream {
  public:
    explicit RandomStream(Generator& generator) : generator_(generator) {}

    uint32_t next_u32() {
        if (used_ == 4) {
            block_ = philox4x32(generator_.seed(), generator_.advance(1));
            used_ = 0;
        }
        return block_.x[used_++];
    }
    uint64_t next_u64() { return (uint64_t(next_u32()) << 32) | next_u32(); }
    // Uniform in [0, 1) with 53 random bits.
    double uniform() { return double(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
    // Uniform in [low, high).
    double uniform(double low, double high) { return low + (high - low) * uniform(); }
    // Uniform in [0, 1) with 24 random bits: the fast draw for per-pixel noise.
    float uniform_float() { return lumen::uniform_float(next_u32()); }
    // An integer uniform in [0, n), n >= 1 (multiply-shift; bias below 2^-32 for n < 2^32).
    uint64_t below(uint64_t n) { return uint64_t((unsigned __int128)next_u64() * n >> 64); }
    // Two independent standard normals (Box-Muller in float).
    void normal_pair(float& a, float& b) {
        float u1 = 1.0f - uniform_float();  // (0, 1]: log stays finite
        float u2 = uniform_float();
        float radius = std::sqrt(-2.0f * std::log(u1));
        float angle = 6.2831853071795865f * u2;
        a = radius * std::cos(angle);
        b = radius * std::sin(angle);
    }

  private:
    Generator& generator_;
    Philox4 block_{};
    int used_ = 4;
};

}  // namespace lumen::datasets
