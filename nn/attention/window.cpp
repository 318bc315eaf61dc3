// Swin's window geometry: clipped window sizes, the shift mask and the relative position index
// are small constant tables built on the host; window_mix composes pad, roll and the window
// ops of ops/layout.h, so its gradient comes from theirs.
#include "nn/attention/window.h"

#include "core/shape.h"
#include "ops/layout.h"
#include "ops/pad.h"

namespace lumen::nn::attention {

namespace {

// Region of position i along a dim of padded size `dims` (MONAI's compute_mask): the last of the
// slices slice(-w), slice(-w, -s), slice(-s, None) that covers i. With s = 0 the third is the whole
// dim, written last, so every position is region 2.
int64_t region(int64_t i, int64_t dims, int64_t w, int64_t s) {
    if (s == 0 || i >= dims - s) return 2;
    return i >= dims - w ? 1 : 0;
}

}  // namespace

WindowShift get_window_size(const std::vector<int64_t>& spatial, const std::vector<int64_t>& window,
                            const std::vector<int64_t>& shift) {
    LUMEN_CHECK(spatial.size() == window.size() && shift.size() == window.size(), "get_window_size",
                "sizes ", spatial, ", window ", window, " and shift ", shift,
                " must have the same length");
    WindowShift out{window, shift};
    for (size_t d = 0; d < spatial.size(); ++d) {
        LUMEN_CHECK(window[d] > 0, "get_window_size", "window sizes must be positive, got ",
                    window);
        if (spatial[d] <= window[d]) {
            out.window[d] = spatial[d];
            out.shift[d] = 0;
        }
    }
    return out;
}

std::vector<int64_t> padded_sizes(const std::vector<int64_t>& spatial,
                                  const std::vector<int64_t>& window) {
    std::vector<int64_t> out(spatial.size());
    for (size_t d = 0; d < spatial.size(); ++d)
        out[d] = (spatial[d] + window[d] - 1) / window[d] * window[d];
    return out;
}

Tensor MaskCache::get(const std::vector<int64_t>& spatial, const WindowShift& ws, DType dtype,
                      Device device) {
    bool shifted = false;
    for (int64_t s : ws.shift) shifted = shifted || s > 0;
    if (!shifted) return Tensor();
    std::vector<int64_t> key = padded_sizes(spatial, ws.window);
    key.insert(key.end(), ws.window.begin(), ws.window.end());
    key.insert(key.end(), ws.shift.begin(), ws.shift.end());
    if (!mask_.defined() || key != key_ || mask_.dtype() != dtype || mask_.device() != device) {
        mask_ = compute_mask(padded_sizes(spatial, ws.window), ws.window, ws.shift, dtype, device);
        key_ = key;
    }
    return mask_;
}

Tensor compute_mask(const std::vector<int64_t>& dims, const std::vector<int64_t>& window,
                    const std::vector<int64_t>& shift, DType dtype, Device device) {
    const char* op = "compute_mask";
    size_t k = dims.size();
    LUMEN_CHECK(k >= 1 && window.size() == k && shift.size() == k, op, "dims ", dims, ", window ",
                window, " and shift ", shift, " must have the same, non-zero length");
    for (size_t d = 0; d < k; ++d) {
        LUMEN_CHECK(window[d] > 0 && dims[d] % window[d] == 0, op, "dims ", dims,
                    " must be multiples of the window ", window);
        LUMEN_CHECK(shift[d] >= 0 && shift[d] < window[d], op, "shift ", shift,
                    " must lie in [0, window) for window ", window);
    }
    // Label of every grid position: its per-dim regions as a base-3 number, which is the
    // counter value of the nested loop over slice combinations.
    int64_t n = shape_numel(window), positions = shape_numel(dims), num_windows = positions / n;
    std::vector<int64_t> grid(k), labels(size_t(num_windows * n));
    for (size_t d = 0; d < k; ++d) grid[d] = dims[d] / window[d];
    for (int64_t p = 0; p < positions; ++p) {
        int64_t rest = p, label = 0, scale = 1, win = 0, win_scale = 1, token = 0, token_scale = 1;
        for (size_t d = k; d-- > 0;) {
            int64_t i = rest % dims[d];
            rest /= dims[d];
            label += region(i, dims[d], window[d], shift[d]) * scale;
            scale *= 3;
            // window_partition order: windows row-major over the grid, tokens row-major inside.
            win += i / window[d] * win_scale;
            win_scale *= grid[d];
            token += i % window[d] * token_scale;
            token_scale *= window[d];
        }
        labels[size_t(win * n + token)] = label;
    }
    std::vector<float> mask(size_t(num_windows * n * n));
    for (int64_t w = 0; w < num_windows; ++w)
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j)
                mask[size_t((w * n + i) * n + j)] =
                    labels[size_t(w * n + i)] == labels[size_t(w * n + j)] ? 0.0f : -100.0f;
    return from_vector(mask, {num_windows, n, n}).to(dtype).to(device);
}

Tensor relative_position_index(const std::vector<int64_t>& window) {
    const char* op = "relative_position_index";
    LUMEN_CHECK(!window.empty(), op, "the window has no dims");
    for (int64_t w : window) LUMEN_CHECK(w > 0, op, "window sizes must be positive, got ", window);
    size_t k = window.size();
    int64_t n = shape_numel(window);
    // stride[d] = prod over later dims of (2 w - 1): the table is row-major in the offsets.
    std::vector<int64_t> stride(k, 1);
    for (size_t d = k - 1; d-- > 0;) stride[d] = stride[d + 1] * (2 * window[d + 1] - 1);
    std::vector<int64_t> coords(size_t(n) * k);
    for (int64_t i = 0; i < n; ++i) {
        int64_t rest = i;
        for (size_t d = k; d-- > 0;) {
            coords[size_t(i) * k + d] = rest % window[d];
            rest /= window[d];
        }
    }
    std::vector<int64_t> index(size_t(n * n));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            int64_t value = 0;
            for (size_t d = 0; d < k; ++d)
                value += (coords[size_t(i) * k + d] - coords[size_t(j) * k + d] + window[d] - 1) *
                         stride[d];
            index[size_t(i * n + j)] = value;
        }
    return from_vector(index, {n, n});
}

Tensor window_mix(const Tensor& x, const std::vector<int64_t>& window,
                  const std::vector<int64_t>& shift, const WindowMixer& mix) {
    int64_t k = x.ndim() - 2;
    LUMEN_CHECK(k == 2 || k == 3, "swin", "expects a channels-last map (B, H, W, C) or ",
                "(B, D, H, W, C), got shape ", x.shape());
    LUMEN_CHECK(int64_t(window.size()) == k && int64_t(shift.size()) == k, "swin", "window ",
                window, " and shift ", shift, " must have one entry per spatial dim of ",
                x.shape());
    std::vector<int64_t> spatial(x.shape().begin() + 1, x.shape().end() - 1);
    std::vector<int64_t> padded = padded_sizes(spatial, window);
    // F.pad lists (before, after) from the last dim: channels untouched, then W, H, (D).
    Dims pads = {0, 0};
    bool any_pad = false, shifted = false;
    for (int64_t d = k - 1; d >= 0; --d) {
        int64_t extra = padded[size_t(d)] - spatial[size_t(d)];
        pads.insert(pads.end(), {0, extra});
        any_pad = any_pad || extra > 0;
    }
    Tensor u = any_pad ? pad(x, pads) : x;
    std::vector<int64_t> dims, back, forward;
    for (int64_t d = 0; d < k; ++d) {
        dims.push_back(d + 1);
        back.push_back(-shift[size_t(d)]);
        forward.push_back(shift[size_t(d)]);
        shifted = shifted || shift[size_t(d)] > 0;
    }
    if (shifted) u = roll(u, back, dims);
    Tensor windows = window_partition(u, window).flatten(1, -2);  // (B * nW, n, C)
    Shape full = {x.size(0)};
    full.insert(full.end(), padded.begin(), padded.end());
    Tensor y = window_reverse(mix(windows), window, full);
    if (shifted) y = roll(y, forward, dims);
    if (any_pad)
        for (int64_t d = 0; d < k; ++d) y = y.narrow(d + 1, 0, spatial[size_t(d)]);
    return y;
}

}  // namespace lumen::nn::attention
