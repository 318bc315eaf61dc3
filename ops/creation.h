// Creation ops beyond core's empty/zeros/ones/full: ranges, linspace and identity.
#pragma once

#include "core/tensor.h"

namespace lumen {

// [start, end) in steps of `step` (torch.arange): ceil((end - start) / step) elements.
Tensor arange(double start, double end, double step = 1.0, DType dtype = DType::int64,
              Device device = Device::cpu());
inline Tensor arange(double end, DType dtype = DType::int64) { return arange(0, end, 1, dtype); }
// `steps` points from start to end inclusive (torch.linspace).
Tensor linspace(double start, double end, int64_t steps, DType dtype = kDefaultFloat,
                Device device = Device::cpu());
// Identity of shape (n, m) (m defaults to n).
Tensor eye(int64_t n, int64_t m = -1, DType dtype = kDefaultFloat, Device device = Device::cpu());

}  // namespace lumen
