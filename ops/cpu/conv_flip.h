// The input gradient of a stride-1 convolution as a forward convolution, shared by the kernels
// that compute it that way (ops/cpu/conv_rows.cpp, ops/cpu/conv_winograd.cpp):
//     grad_x = conv(grad_y, weight flipped in space with its channel dims swapped),
// padding (kernel - 1) * dilation - padding (negative: a crop).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ops/conv_kernels.h"

namespace lumen::cpu {

// The forward problem whose output is grad_x: grad_y's shape as input, the channels swapped.
inline ConvShape input_gradient_shape(const ConvShape& s) {
    ConvShape flipped = s;
    std::swap(flipped.in_channels, flipped.out_channels);
    for (int d = 0; d < 3; ++d) {
        flipped.input[d] = s.output[d];
        flipped.output[d] = s.input[d];
        flipped.padding[d] = (s.kernel[d] - 1) * s.dilation[d] - s.padding[d];
    }
    return flipped;
}

// Its weight: reversed[ci][co][tap] = weight[co][ci][taps - 1 - tap] (one group).
template <typename T>
std::vector<T> input_gradient_weight(const T* weight, const ConvShape& s) {
    const int64_t taps = s.kernel_size();
    std::vector<T> reversed(size_t(s.in_channels * s.out_channels * taps));
    for (int64_t co = 0; co < s.out_channels; ++co)
        for (int64_t ci = 0; ci < s.in_channels; ++ci)
            for (int64_t k = 0; k < taps; ++k)
                reversed[size_t((ci * s.out_channels + co) * taps + k)] =
                    weight[(co * s.in_channels + ci) * taps + taps - 1 - k];
    return reversed;
}

}  // namespace lumen::cpu
