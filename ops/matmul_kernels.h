// Internal: the matmul kernel signatures (CPU: ops/cpu/matmul.cpp, CUDA: ops/cuda/matmul.cu)
// and the layout rule they share with ops/matmul.cpp.
// The op has already broadcast the batch dims (stride 0) and made sure every operand matrix
// can be read in place by a GEMM; the kernel only multiplies.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {

// How a GEMM reads one matrix in place: row-major (unit column stride) or column-major (unit
// row stride, i.e. a transposed row-major matrix), with the distance between consecutive rows
// (row-major) or columns (column-major) as `outer_stride`. `valid` is false for any other
// layout (both strides > 1, overlapping rows, stride 0 from expand); the op copies those.
struct MatrixLayout {
    bool valid = false;
    bool row_major = true;
    int64_t outer_stride = 1;
};

// The layout of a rows x cols matrix with the given strides (in elements). A size-1 dim has
// no meaningful stride, so a row or column vector is readable with any stride of the other dim.
inline MatrixLayout matrix_layout(int64_t rows, int64_t cols, int64_t row_stride,
                                  int64_t col_stride) {
    int64_t min_rows = std::max<int64_t>(rows, 1), min_cols = std::max<int64_t>(cols, 1);
    if (col_stride == 1 || cols <= 1) {
        int64_t outer = rows <= 1 ? min_cols : row_stride;
        if (outer >= min_cols) return {true, true, outer};
    }
    if (row_stride == 1 || rows <= 1) {
        int64_t outer = cols <= 1 ? min_rows : col_stride;
        if (outer >= min_rows) return {true, false, outer};
    }
    return {};
}

namespace cpu {

// out[i] = a[i] @ b[i] (+ bias added to every row) for every batch index i.
// Shapes: a (..., n, k), b (..., k, m), out (..., n, m) with the same batch dims (a and b may
// have stride 0 there); bias (m), or bias.data == nullptr for none. Every matrix of a and b has
// a valid matrix_layout; out is contiguous. float32 or float64, one dtype for all.
// Runs one Eigen GEMM per batch: in parallel over the batch when there are many, otherwise one
// after the other, each split into one panel of rows or columns per OpenMP thread.
void matmul_forward(const StridedView& a, const StridedView& b, const StridedView& bias,
                    const StridedView& out);

}  // namespace cpu

namespace cuda {

// The same product through cuBLAS: float32 (TF32 tensor cores only under
// set_matmul_allow_tf32(true)), float64, and float16/bfloat16 accumulated in float32 with the
// result (bias included) rounded once to the input dtype, or kept in float32 when out (and the
// bias) are float32 (autocast's lowered GEMM, core/autocast.h). Strided batched calls over the
// batch dims that follow one stride (stride 0 included), a host loop over the others.
LUMEN_CUDA_API void matmul_forward(const StridedView& a, const StridedView& b,
                                   const StridedView& bias, const StridedView& out);

}  // namespace cuda

}  // namespace lumen
