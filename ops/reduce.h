// Reductions over any set of dims, with keepdim, as in PyTorch. An empty `dims` list means
// all dims; negative dims count from the end; a dim listed twice throws [op]. Floating sums
// add float32 in vectorized partial sums folded into double every few thousand elements
// (float64 in double throughout); integer and bool sums give int64. Results do not depend
// on the thread count. CUDA tensors run the same reductions (float32 accumulated in float32,
// in a tree), and there float16/bfloat16 too: accumulated in float32, results in the input
// dtype, as in PyTorch. The CPU rejects the half types with [op].
#pragma once

#include <vector>

#include "core/tensor.h"

namespace lumen {

using Dims = std::vector<int64_t>;

struct ValuesIndices {
    Tensor values;
    Tensor indices;  // int64
};

// Sum over dims; sum of nothing is 0. Any numeric or bool dtype (ints and bool give int64).
Tensor sum(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
// Mean over dims; mean of nothing is NaN. Floating dtypes only (throws [mean] naming the dtype).
Tensor mean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
// Max/min over all elements (0-d result); the gradient goes to every maximal element equally.
// Throws [max]/[min] for an empty tensor. NaN wins, as in PyTorch.
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// Max/min along one dim, with the index of the first extremum; gradient to that index.
// Throws [max]/[min] when that dim has size 0.
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
// Max/min over dims, values only; gradient split equally among tied extrema (torch.amax).
// Throws [amax]/[amin] when the reduced dims hold no element.
Tensor amax(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // int64, first maximum
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
// Variance sum((x - mean)^2) / (n - correction) with Bessel-style `correction` (1 = unbiased,
// 0 = biased), computed in two passes (no cancellation); n <= correction gives inf or NaN as
// in PyTorch. std = sqrt(var), d std = d var / (2 std). Floating dtypes only.
// Call std as lumen::std: the name clashes with namespace std after `using namespace lumen`.
Tensor var(const Tensor& x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
Tensor std(const Tensor& x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
// log(sum(exp(x))) computed stably (max subtracted; all -inf gives -inf, any +inf gives +inf);
// the gradient is exp(x - logsumexp), the softmax over dims. Floating dtypes only.
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false);

// Sums x down to `shape` (the inverse of broadcasting `shape` up to x.shape()): over leading
// extra dims and over dims where `shape` has 1, keeping those. Returns x itself when the
// shapes already match and a reshape when only size-1 dims differ; used by the backward of
// every broadcasting op and of expand. Throws [sum_to] when `shape` does not broadcast to x.
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace lumen
