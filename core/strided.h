// StridedView: what a kernel sees of a tensor — data pointer, dtype, shape and strides in
// elements, in fixed-size arrays so it passes to CUDA kernels by value. Kernels know nothing
// of Tensor or autograd.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/shape.h"

namespace lumen {

class Tensor;

struct StridedView {
    void* data = nullptr;
    DType dtype = DType::float32;
    int ndim = 0;
    int64_t shape[kMaxDims] = {};
    int64_t strides[kMaxDims] = {};

    int64_t numel() const {
        int64_t n = 1;
        for (int i = 0; i < ndim; ++i) n *= shape[i];
        return n;
    }
    template <typename T>
    T* ptr() const {
        return static_cast<T*>(data);
    }
};

// A shape seen as (outer, length, inner) around `dim`: the product of the sizes before dim,
// the size of dim and the product of those after it (all 1 for a 0-d view). Kernels that work
// along one dim of contiguous data find element (o, l, i) at (o * length + l) * inner + i.
struct DimBlocks {
    int64_t outer = 1, length = 1, inner = 1;
};

inline DimBlocks dim_blocks(const StridedView& v, int dim) {
    DimBlocks b;
    if (v.ndim == 0) return b;
    for (int d = 0; d < dim; ++d) b.outer *= v.shape[d];
    b.length = v.shape[dim];
    for (int d = dim + 1; d < v.ndim; ++d) b.inner *= v.shape[d];
    return b;
}

// The view of t; throws [op] if t has more than kMaxDims dims.
StridedView strided(const Tensor& t, const char* op = "kernel");

// The same view with its shape broadcast to `shape` (stride 0 in stretched dims). The caller
// has checked that the shapes broadcast.
StridedView strided_as(const Tensor& t, const Shape& shape, const char* op = "kernel");

// Marks helpers that CUDA kernels call too.
#if defined(__CUDACC__)
#define LUMEN_HOST_DEVICE __host__ __device__
#else
#define LUMEN_HOST_DEVICE
#endif

// Offset in elements of the element at linear row-major position `linear` in `view`.
LUMEN_HOST_DEVICE inline int64_t strided_offset(const StridedView& view, int64_t linear) {
    int64_t offset = 0;
    for (int d = view.ndim - 1; d >= 0; --d) {
        int64_t size = view.shape[d];
        offset += (linear % size) * view.strides[d];
        linear /= size;
    }
    return offset;
}

}  // namespace lumen

namespace lumen {

// Merges adjacent dims that are contiguous with each other in every one of `count` views of
// the same shape, so kernels loop over fewer, longer dims. Drops size-1 dims.
void coalesce_dims(StridedView* views, int count);

// Calls row(first_offsets, inner_size, inner_strides) for every row of the innermost dim of
// `count` views of the same shape, in parallel chunks of about kGrainSize elements. The
// offsets are in elements, one per view.
template <int Count, typename Row>
void for_each_row(const StridedView (&views)[Count], const Row& row);

}  // namespace lumen

#include "core/strided_impl.h"
