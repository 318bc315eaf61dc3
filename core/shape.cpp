// Shape arithmetic; see shape.h.
#include "core/shape.h"

#include <algorithm>

#include "core/error.h"

namespace lumen {

int64_t shape_numel(const Shape& shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
}

Shape contiguous_strides(const Shape& shape) {
    Shape strides(shape.size());
    int64_t running = 1;
    for (int64_t i = int64_t(shape.size()) - 1; i >= 0; --i) {
        strides[i] = running;
        running *= std::max<int64_t>(shape[i], 1);
    }
    return strides;
}

int wrap_dim(int64_t dim, int64_t ndim, const char* op) {
    int64_t range = std::max<int64_t>(ndim, 1);
    LUMEN_CHECK(dim >= -range && dim < range, op, "dim ", dim, " is out of range for a tensor with ",
                ndim, " dims (expected ", -range, " to ", range - 1, ")");
    return int(dim < 0 ? dim + range : dim);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
    size_t ndim = std::max(a.size(), b.size());
    Shape out(ndim);
    for (size_t i = 0; i < ndim; ++i) {
        int64_t da = i < ndim - a.size() ? 1 : a[i - (ndim - a.size())];
        int64_t db = i < ndim - b.size() ? 1 : b[i - (ndim - b.size())];
        LUMEN_CHECK(da == db || da == 1 || db == 1, op, "shapes ", a, " and ", b,
                    " cannot be broadcast together (dim ", i, ": ", da, " vs ", db, ")");
        out[i] = da == 1 ? db : da;
    }
    return out;
}

}  // namespace lumen
