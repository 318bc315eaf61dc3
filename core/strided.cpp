// Dim coalescing for strided kernels.
#include "core/strided.h"

namespace lumen {

void coalesce_dims(StridedView* views, int count) {
    int ndim = views[0].ndim;
    int out = 0;
    for (int d = 0; d < ndim; ++d) {
        if (views[0].shape[d] == 1) continue;
        bool merge = out > 0;
        for (int v = 0; v < count && merge; ++v)
            merge = views[v].strides[out - 1] == views[v].strides[d] * views[0].shape[d];
        if (merge) {
            for (int v = 0; v < count; ++v) {
                views[v].shape[out - 1] *= views[0].shape[d];
                views[v].strides[out - 1] = views[v].strides[d];
            }
            continue;
        }
        for (int v = 0; v < count; ++v) {
            views[v].shape[out] = views[v].shape[d];
            views[v].strides[out] = views[v].strides[d];
        }
        ++out;
    }
    for (int v = 0; v < count; ++v) views[v].ndim = out;
}

}  // namespace lumen
