// CPU kernels of the layout family: flip (a strided copy from a view with negative strides),
// tril/triu (a row-wise copy and zero fill, by bytes) and cumsum over contiguous
// (outer, length, inner) blocks: inner == 1 runs one line per task, otherwise tasks are blocks
// of adjacent columns whose running sums advance together, which vectorizes.
#include <algorithm>
#include <cstring>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/layout_kernels.h"

namespace lumen::cpu {

void flip_forward(const StridedView& x, const StridedView& out, uint32_t flipped) {
    // Reading x from the last element backwards along each flipped dim is a plain strided copy
    // with a negative stride there.
    StridedView source = x;
    int64_t start = 0;
    for (int d = 0; d < x.ndim; ++d) {
        if (!(flipped >> d & 1u) || x.shape[d] == 0) continue;
        start += (x.shape[d] - 1) * x.strides[d];
        source.strides[d] = -x.strides[d];
    }
    source.data = static_cast<char*>(x.data) + start * int64_t(itemsize(x.dtype));
    StridedView views[2] = {out, source};
    coalesce_dims(views, 2);
    dispatch_all(x.dtype, "flip", [&]<typename T>() {
        T* dst = views[0].ptr<T>();
        const T* src = views[1].ptr<T>();
        for_each_row(views, [&](const int64_t* offsets, int64_t n, const int64_t* steps) {
            T* d = dst + offsets[0];
            const T* s = src + offsets[1];
            if (steps[0] == 1 && steps[1] == 1) {
                std::memcpy(d, s, size_t(n) * sizeof(T));  // rows of unflipped inner dims
            } else if (steps[0] == 1 && steps[1] == -1) {
                for (int64_t i = 0; i < n; ++i) d[i] = s[-i];  // the last dim flipped
            } else {
                for (int64_t i = 0; i < n; ++i) d[i * steps[0]] = s[i * steps[1]];
            }
        });
    });
}

void tril_forward(const StridedView& x, const StridedView& out, int64_t diagonal, bool lower) {
    int64_t rows = x.shape[x.ndim - 2], cols = x.shape[x.ndim - 1];
    int64_t lines = x.numel() / std::max<int64_t>(cols, 1);
    if (lines == 0 || cols == 0) return;
    size_t item = itemsize(x.dtype);
    const char* src = static_cast<const char*>(x.data);
    char* dst = static_cast<char*>(out.data);
    // Zero bits are 0 in every dtype, so the kernel works on bytes.
    parallel_for(0, lines, std::max<int64_t>(1, kGrainSize / cols), [&](int64_t lo, int64_t hi) {
        for (int64_t line = lo; line < hi; ++line) {
            int64_t row = line % rows;
            // lower keeps [0, split), upper keeps [split, cols)
            int64_t split = std::clamp(row + diagonal + (lower ? 1 : 0), int64_t(0), cols);
            size_t base = size_t(line * cols) * item, head = size_t(split) * item;
            size_t tail = size_t(cols - split) * item;
            if (lower) {
                std::memcpy(dst + base, src + base, head);
                std::memset(dst + base + head, 0, tail);
            } else {
                std::memset(dst + base, 0, head);
                std::memcpy(dst + base + head, src + base + head, tail);
            }
        }
    });
}

namespace {

constexpr int64_t kColumns = 64;  // columns summed together when the dim is not the last

// Running sums of one (length x width) block whose rows are `inner` apart.
template <typename T, typename Out, typename Acc>
void cumsum_block(const T* x, Out* out, int64_t length, int64_t inner, int64_t width,
                  bool reverse) {
    Acc acc[kColumns] = {};
    for (int64_t step = 0; step < length; ++step) {
        int64_t l = reverse ? length - 1 - step : step;
        const T* row = x + l * inner;
        Out* target = out + l * inner;
        for (int64_t c = 0; c < width; ++c) {
            acc[c] += Acc(row[c]);
            target[c] = Out(acc[c]);
        }
    }
}

// One line (inner == 1): the running sum stays in a register.
template <typename T, typename Out, typename Acc>
void cumsum_line(const T* x, Out* out, int64_t length, bool reverse) {
    Acc acc = 0;
    if (reverse) {
        for (int64_t l = length - 1; l >= 0; --l) out[l] = Out(acc += Acc(x[l]));
    } else {
        for (int64_t l = 0; l < length; ++l) out[l] = Out(acc += Acc(x[l]));
    }
}

template <typename T, typename Out, typename Acc>
void cumsum_typed(const T* x, Out* out, int64_t outer, int64_t length, int64_t inner,
                  bool reverse) {
    if (inner == 1) {
        parallel_for(
            0, outer, std::max<int64_t>(1, kGrainSize / length), [&](int64_t lo, int64_t hi) {
                for (int64_t o = lo; o < hi; ++o)
                    cumsum_line<T, Out, Acc>(x + o * length, out + o * length, length, reverse);
            });
        return;
    }
    int64_t blocks = (inner + kColumns - 1) / kColumns;
    int64_t width = std::min(inner, kColumns);
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(length * width, 1));
    parallel_for(0, outer * blocks, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t task = lo; task < hi; ++task) {
            int64_t o = task / blocks, first = task % blocks * kColumns;
            int64_t offset = o * length * inner + first;
            cumsum_block<T, Out, Acc>(x + offset, out + offset, length, inner,
                                      std::min(kColumns, inner - first), reverse);
        }
    });
}

}  // namespace

void cumsum_forward(const StridedView& x, const StridedView& out, int dim, bool reverse) {
    const DimBlocks b = dim_blocks(x, dim);
    if (b.outer * b.length * b.inner == 0) return;
    dispatch_numeric_bool(x.dtype, "cumsum", [&]<typename T>() {
        using Out = typename CumsumTypes<T>::out;
        cumsum_typed<T, Out, typename CumsumTypes<T>::acc>(x.ptr<T>(), out.ptr<Out>(), b.outer,
                                                           b.length, b.inner, reverse);
    });
}

}  // namespace lumen::cpu
