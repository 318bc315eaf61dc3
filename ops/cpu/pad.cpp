// CPU pad over contiguous (outer, padded dims...), forward and backward. Each padded dim is
// turned once into a table source[o] (the input index output o copies, or -1 for the constant);
// a row of the last dim is then a left border, a straight copy of the input row, and a right
// border. Forward runs in parallel over output rows. The constant backward is a forward pad
// with the pads negated (grad_x is a crop of grad_out); the other modes scatter-add several
// outputs into one input, so they run in parallel over whole outer slices.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/pad_kernels.h"

namespace lumen::cpu {

namespace {

using Tables = std::vector<std::vector<int64_t>>;

Tables source_tables(const PadGeometry& g) {
    Tables tables(size_t(g.dims));
    for (int j = 0; j < g.dims; ++j)
        for (int64_t o = 0; o < g.out[j]; ++o)
            tables[size_t(j)].push_back(pad_source_index(o, g.before[j], g.in[j], g.mode));
    return tables;
}

// Sizes of one outer slice and of its rows.
struct Sizes {
    int64_t in_slice = 1, out_slice = 1, rows_per_slice = 1;
    int64_t in_strides[kMaxDims] = {};  // in elements, within a slice
};

Sizes sizes_of(const PadGeometry& g) {
    Sizes s;
    for (int j = g.dims - 1; j >= 0; --j) {
        s.in_strides[j] = s.in_slice;
        s.in_slice *= g.in[j];
        s.out_slice *= g.out[j];
        if (j < g.dims - 1) s.rows_per_slice *= g.out[j];
    }
    return s;
}

// The offset inside a slice of the input row that output row `row` (index within its slice)
// copies, or -1 if that row is all constant.
int64_t source_row(int64_t row, const PadGeometry& g, const Tables& tables, const Sizes& s) {
    int64_t offset = 0;
    for (int j = g.dims - 2; j >= 0; --j) {
        int64_t source = tables[size_t(j)][size_t(row % g.out[j])];
        row /= g.out[j];
        if (source < 0) return -1;
        offset += source * s.in_strides[j];
    }
    return offset;
}

template <typename T>
void forward_typed(const T* x, T* y, const PadGeometry& g) {
    Tables tables = source_tables(g);
    Sizes s = sizes_of(g);
    const int last = g.dims - 1;
    const int64_t width = g.out[last], in_width = g.in[last];
    const std::vector<int64_t>& columns = tables[size_t(last)];
    // Outputs [middle_begin, middle_end) copy input o - before straight.
    int64_t middle_begin = std::clamp<int64_t>(g.before[last], 0, width);
    int64_t middle_end = std::clamp<int64_t>(g.before[last] + in_width, middle_begin, width);
    const T value = T(g.value);
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(width, 1));
    parallel_for(0, g.outer * s.rows_per_slice, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
            T* out = y + r * width;
            int64_t source = source_row(r % s.rows_per_slice, g, tables, s);
            if (source < 0) {
                std::fill(out, out + width, value);
                continue;
            }
            const T* row = x + r / s.rows_per_slice * s.in_slice + source;
            for (int64_t o = 0; o < middle_begin; ++o)
                out[o] = columns[size_t(o)] < 0 ? value : row[columns[size_t(o)]];
            if (middle_end > middle_begin)
                std::memcpy(out + middle_begin, row + (middle_begin - g.before[last]),
                            size_t(middle_end - middle_begin) * sizeof(T));
            for (int64_t o = middle_end; o < width; ++o)
                out[o] = columns[size_t(o)] < 0 ? value : row[columns[size_t(o)]];
        }
    });
}

template <typename T>
void scatter_backward_typed(const T* grad_out, T* grad_x, const PadGeometry& g) {
    Tables tables = source_tables(g);
    Sizes s = sizes_of(g);
    const int last = g.dims - 1;
    const int64_t width = g.out[last];
    const int64_t* columns = tables[size_t(last)].data();
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(s.out_slice, 1));
    parallel_for(0, g.outer, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t p = lo; p < hi; ++p) {
            T* slice = grad_x + p * s.in_slice;
            std::fill(slice, slice + s.in_slice, T(0));
            const T* go = grad_out + p * s.out_slice;
            for (int64_t r = 0; r < s.rows_per_slice; ++r, go += width) {
                T* row = slice + source_row(r, g, tables, s);
                for (int64_t o = 0; o < width; ++o) row[columns[o]] += go[o];
            }
        }
    });
}

}  // namespace

void pad_forward(const StridedView& x, const StridedView& y, const PadGeometry& geometry) {
    if (y.numel() == 0) return;
    dispatch_numeric_bool(
        x.dtype, "pad", [&]<typename T>() { forward_typed<T>(x.ptr<T>(), y.ptr<T>(), geometry); });
}

void pad_backward(const StridedView& grad_out, const StridedView& grad_x,
                  const PadGeometry& geometry) {
    if (grad_x.numel() == 0) return;
    if (geometry.mode == PadMode::constant) {
        pad_forward(grad_out, grad_x, constant_pad_inverse(geometry));
        return;
    }
    dispatch_floating(grad_x.dtype, "pad", [&]<typename T>() {
        scatter_backward_typed<T>(grad_out.ptr<T>(), grad_x.ptr<T>(), geometry);
    });
}

}  // namespace lumen::cpu
