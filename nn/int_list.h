// An `int | tuple` argument, as PyTorch takes kernel sizes and libtorch's ExpandingArray does:
// one value (used for every spatial dim) or one per dim. Conv2d(1, 16, 3), Conv2d(1, 16, {3, 1}),
// MaxPool2d(2).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace lumen::nn {

struct IntList {
    std::vector<int64_t> values;
    // Implicit on purpose: the point is to pass 3 or {3, 1} where a size list is expected.
    IntList(int value) : values{int64_t(value)} {}  // NOLINT(google-explicit-constructor)
    IntList(int64_t value) : values{value} {}       // NOLINT(google-explicit-constructor)
    IntList(std::initializer_list<int64_t> list) : values(list) {}   // NOLINT
    IntList(std::vector<int64_t> list) : values(std::move(list)) {}  // NOLINT
};

}  // namespace lumen::nn
