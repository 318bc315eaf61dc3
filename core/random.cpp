// The default generator.
#include "core/random.h"

namespace lumen {

Generator& default_generator() {
    static Generator generator(0);
    return generator;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace lumen
