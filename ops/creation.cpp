// arange, linspace and eye. Each fills a fresh tensor on the host in one parallel pass (too
// simple for a kernel file of its own) and copies it to the requested device, so the values
// are the same bits on every device. Values are computed in double, then converted, as
// PyTorch does on the CPU.
#include "ops/creation.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "core/dispatch.h"
#include "core/parallel.h"

namespace lumen {

namespace {

// A 1-D tensor of `count` elements holding value(i) converted to dtype, on `device`.
template <typename Value>
Tensor fill_1d(int64_t count, DType dtype, Device device, const char* op, const Value& value) {
    Tensor out = empty({count}, dtype, Device::cpu());
    dispatch_all(dtype, op, [&]<typename T>() {
        T* data = out.data_ptr<T>();
        parallel_for(0, count, kGrainSize, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) data[i] = convert<T>(value(i));
        });
    });
    return device.is_cpu() ? out : out.to(device);
}

// Whether `value` converts to dtype without overflow (converting an out-of-range double to an
// integer type is undefined behaviour). Floating dtypes take anything finite.
bool representable(double value, DType dtype) {
    if (is_floating(dtype)) return true;
    return dispatch_numeric(dtype, "creation", [&]<typename T>() {
        // 2^63 is not an int64, but its double is what numeric_limits<int64_t>::max() rounds to.
        return value >= double(std::numeric_limits<T>::lowest()) &&
               value < double(std::numeric_limits<T>::max()) + 1.0;
    });
}

void check_dtype(DType dtype, const char* op) {
    LUMEN_CHECK(dtype != DType::bool_, op, "not implemented for dtype bool");
}

}  // namespace

Tensor arange(double start, double end, double step, DType dtype, Device device) {
    check_dtype(dtype, "arange");
    LUMEN_CHECK(std::isfinite(start) && std::isfinite(end) && std::isfinite(step), "arange",
                "start, end and step must be finite, got start ", start, ", end ", end, ", step ",
                step);
    LUMEN_CHECK(step != 0, "arange", "step must be non-zero, got start ", start, ", end ", end,
                ", step ", step);
    LUMEN_CHECK(step > 0 ? end >= start : end <= start, "arange", "step ", step,
                " has the wrong sign to go from start ", start, " to end ", end);
    double count = std::ceil((end - start) / step);
    LUMEN_CHECK(count < 9.0e18, "arange", "too many elements (", count, ") for start ", start,
                ", end ", end, ", step ", step);
    int64_t numel = int64_t(count);
    double last = start + double(std::max<int64_t>(numel - 1, 0)) * step;
    LUMEN_CHECK(numel == 0 || (representable(start, dtype) && representable(last, dtype)), "arange",
                "values from ", start, " to ", last, " do not fit in ", dtype);
    return fill_1d(numel, dtype, device, "arange",
                   [=](int64_t i) { return start + double(i) * step; });
}

Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
    check_dtype(dtype, "linspace");
    LUMEN_CHECK(steps >= 0, "linspace", "number of steps must be non-negative, got ", steps);
    LUMEN_CHECK(std::isfinite(start) && std::isfinite(end), "linspace",
                "start and end must be finite, got start ", start, " and end ", end);
    LUMEN_CHECK(steps == 0 || (representable(start, dtype) && representable(end, dtype)),
                "linspace", "values from ", start, " to ", end, " do not fit in ", dtype);
    double step = steps > 1 ? (end - start) / double(steps - 1) : 0.0;
    int64_t half = steps / 2;
    // The first half counts up from start and the second half down from end, so both ends
    // are exact and rounding errors stay symmetric (as in PyTorch).
    return fill_1d(steps, dtype, device, "linspace", [=](int64_t i) {
        if (steps == 1) return start;
        return i < half ? start + step * double(i) : end - step * double(steps - 1 - i);
    });
}

Tensor eye(int64_t n, int64_t m, DType dtype, Device device) {
    if (m == -1) m = n;
    LUMEN_CHECK(n >= 0 && m >= 0, "eye", "sizes must be non-negative, got n ", n, " and m ", m);
    Tensor out = zeros({n, m}, dtype, Device::cpu());
    dispatch_all(dtype, "eye", [&]<typename T>() {
        T* data = out.data_ptr<T>();
        for (int64_t i = 0; i < std::min(n, m); ++i) data[i * m + i] = convert<T>(1.0);
    });
    return device.is_cpu() ? out : out.to(device);
}

}  // namespace lumen
