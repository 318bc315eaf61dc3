// Internal: the CPU kernels of the layout family (flip, tril/triu, cumsum). flip and tril/triu
// move elements of any dtype by size; cumsum adds float32/float64 (accumulated in double) and
// integer dtypes (accumulated and stored as int64). Checks are the caller's (ops/layout.cpp).
#pragma once

#include <cstdint>

#include "core/strided.h"

namespace lumen::cpu {

// out = x with the dims whose bit is set in `flipped` reversed. x any strides, out contiguous
// of the same shape and dtype.
void flip_forward(const StridedView& x, const StridedView& out, uint32_t flipped);

// Over the last two dims (rows, cols) of contiguous x and out: keep x where
// col - row <= diagonal (lower) or col - row >= diagonal (upper), zero elsewhere.
void tril_forward(const StridedView& x, const StridedView& out, int64_t diagonal, bool lower);

// out = running sum of x along `dim` (from the end when `reverse`), one sequential sum per
// line. x and out contiguous of the same shape; out is x's dtype for floating x, int64 for
// integer and bool x.
void cumsum_forward(const StridedView& x, const StridedView& out, int dim, bool reverse);

}  // namespace lumen::cpu
