// Internal: the kernels of the index family (gather, scatter_add, index_select, index_add,
// one_hot and the index checks), on the CPU (ops/cpu/index.cpp) and on CUDA (ops/cuda/index.cu)
// with the same signatures. Index tensors are int64 or int32. Pure data movement (gather,
// index_select) copies elements of any dtype by size; the adding kernels take float32,
// float64, int64, int32 and uint8. Shape and dtype checks are the caller's (ops/index.cpp).
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {

// An index found outside [0, size) by a kernel: the op then throws naming `value`.
struct BadIndex {
    bool found = false;
    int64_t value = 0;
};

// Calls body.template operator()<I>() with I the index dtype: int32_t or int64_t (the op has
// checked it). Host code of both backends.
template <typename F>
decltype(auto) dispatch_index(DType dtype, F&& body) {
    if (dtype == DType::int32) return body.template operator()<int32_t>();
    return body.template operator()<int64_t>();
}

namespace cpu {

// The first index outside [0, size) in `index` (any shape and strides), if any.
BadIndex find_out_of_range(const StridedView& index, int64_t size);

// Smallest and largest value of a non-empty `index` (for one_hot's num_classes = -1).
void index_min_max(const StridedView& index, int64_t& min, int64_t& max);

// out[p] = x[p with coordinate `dim` replaced by index[p]] for every position p of index
// (out has index's shape; x.shape[d] >= index.shape[d] for d != dim). x and index may have any
// strides. Out-of-range entries are skipped and reported.
BadIndex gather_forward(const StridedView& x, const StridedView& index, const StridedView& out,
                        int dim);

// out[p with coordinate `dim` replaced by index[p]] += src[p] for every position p of index
// (src.shape[d] >= index.shape[d] for all d). out holds x and is contiguous. Lines along
// `dim` run in parallel: two lines differ in another coordinate, so they never write the same
// element of out, and repeated indices within a line add in order.
BadIndex scatter_add_forward(const StridedView& out, const StridedView& index,
                             const StridedView& src, int dim);

// out = x with `dim` indexed by the 1-D index (out.shape[dim] = index size). x and out are
// contiguous; every index is already in [0, x.shape[dim]).
void index_select_forward(const StridedView& x, const StridedView& index, const StridedView& out,
                          int dim);

// out[.., index[i], ..] += alpha * source[.., i, ..] along `dim`. out (holding x) and source are
// contiguous; every index is already valid. Threads own disjoint ranges of destination rows,
// so repeated indices never race and always add in index order.
void index_add_forward(const StridedView& out, const StridedView& index, const StridedView& source,
                       int dim, double alpha);

// out (int64, contiguous (numel(index), num_classes), zero-filled) gets 1 at
// [i, index[i]]; every index is already in [0, num_classes).
void one_hot_forward(const StridedView& index, const StridedView& out, int64_t num_classes);

}  // namespace cpu

// The same kernels on the tensors' CUDA device (ops/cuda/index.cu), for the same dtypes. A
// kernel that meets an out-of-range index records the first one (in row-major order of the
// index) in device memory; the launcher reads it back after the launch (a few bytes, copied
// synchronously) and returns it, so the op throws the CPU's error. scatter_add and index_add
// add with atomics: with repeated indices, floating sums are not bit-reproducible from run to
// run (integer sums are exact).
namespace cuda {
LUMEN_CUDA_API BadIndex find_out_of_range(const StridedView& index, int64_t size);
LUMEN_CUDA_API void index_min_max(const StridedView& index, int64_t& min, int64_t& max);
LUMEN_CUDA_API BadIndex gather_forward(const StridedView& x, const StridedView& index,
                                       const StridedView& out, int dim);
LUMEN_CUDA_API BadIndex scatter_add_forward(const StridedView& out, const StridedView& index,
                                            const StridedView& src, int dim);
LUMEN_CUDA_API void index_select_forward(const StridedView& x, const StridedView& index,
                                         const StridedView& out, int dim);
LUMEN_CUDA_API void index_add_forward(const StridedView& out, const StridedView& index,
                                      const StridedView& source, int dim, double alpha);
LUMEN_CUDA_API void one_hot_forward(const StridedView& index, const StridedView& out,
                                    int64_t num_classes);
}  // namespace cuda

}  // namespace lumen
