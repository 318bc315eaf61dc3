// Random tensors from the counter-based generator (core/random.h). Element i of a call
// uses Philox counters derived from (seed, offset, i) only, so results are identical for
// every thread count and on CPU and CUDA. `generator` = nullptr uses the default one.
#pragma once

#include "core/random.h"
#include "core/tensor.h"

namespace lumen {

// Uniform on [0, 1).
Tensor rand(const Shape& shape, DType dtype = kDefaultFloat, Generator* generator = nullptr,
            Device device = Device::cpu());
// Standard normal (Box-Muller).
Tensor randn(const Shape& shape, DType dtype = kDefaultFloat, Generator* generator = nullptr,
             Device device = Device::cpu());
// Integers uniform on [low, high).
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype = DType::int64,
               Generator* generator = nullptr, Device device = Device::cpu());
// 1 with probability p (elementwise, p in [0, 1]), else 0, in p's dtype.
Tensor bernoulli(const Tensor& p, Generator* generator = nullptr);
// Same with a scalar probability, shape and dtype given.
Tensor bernoulli(const Shape& shape, double p, DType dtype = kDefaultFloat,
                 Generator* generator = nullptr, Device device = Device::cpu());
Tensor rand_like(const Tensor& like, Generator* generator = nullptr);
Tensor randn_like(const Tensor& like, Generator* generator = nullptr);

}  // namespace lumen
