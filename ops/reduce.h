// Reductions over any set of dims, with keepdim, as in PyTorch. An empty `dims` list means
// all dims. Floating sums accumulate in the input dtype with several partial sums (float32)
// or in double; integer and bool sums give int64.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace lumen {

using Dims = std::vector<int64_t>;

struct ValuesIndices {
    Tensor values;
    Tensor indices;  // int64
};

Tensor sum(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);  // floating only
// Max/min over all elements (0-d result); the gradient goes to every maximal element equally.
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// Max/min along one dim, with the index of the first extremum; gradient to that index.
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
// Max/min over dims, values only; gradient split equally among tied extrema (torch.amax).
Tensor amax(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // int64, first maximum
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
// Variance with Bessel-style `correction` (1 = unbiased, 0 = biased).
Tensor var(const Tensor& x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
Tensor std(const Tensor& x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
// log(sum(exp(x))) computed stably (max subtracted).
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false);

// Sums x down to `shape` (the inverse of broadcasting `shape` up to x.shape()); used by the
// backward of every broadcasting op.
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace lumen
