// Generator: a seed and an offset into the Philox counter stream. Each random op draws
// counters [offset, offset + n) for its n elements and advances the offset, so a seed and an
// offset fully determine every number, whatever the thread count or device.
#pragma once

#include <cstdint>

namespace lumen {

class Generator {
  public:
    explicit Generator(uint64_t seed = 0) : seed_(seed) {}
    void manual_seed(uint64_t seed) {
        seed_ = seed;
        offset_ = 0;
    }
    uint64_t seed() const { return seed_; }
    uint64_t offset() const { return offset_; }
    void set_offset(uint64_t offset) { offset_ = offset; }
    // Reserves `count` counters and returns the first one.
    uint64_t advance(uint64_t count) {
        uint64_t first = offset_;
        offset_ += count;
        return first;
    }

  private:
    uint64_t seed_ = 0;
    uint64_t offset_ = 0;
};

// The process-wide generator used when an op is given none.
Generator& default_generator();
// Seeds the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);

}  // namespace lumen
