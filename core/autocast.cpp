// The per-thread autocast state of core/autocast.h.
#include "core/autocast.h"

#include "core/error.h"

namespace lumen::autocast {

namespace {
thread_local bool t_enabled = false;
thread_local DType t_dtype = DType::bfloat16;
}  // namespace

bool enabled() { return t_enabled; }
DType dtype() { return t_dtype; }

Guard::Guard(DType dtype) : previous_enabled_(t_enabled), previous_dtype_(t_dtype) {
    LUMEN_CHECK(dtype == DType::float16 || dtype == DType::bfloat16 || dtype == DType::float32,
                "autocast", "dtype must be float16 or bfloat16 (float32: off), got ", dtype);
    t_enabled = dtype != DType::float32;
    if (t_enabled) t_dtype = dtype;
}

Guard::~Guard() {
    t_enabled = previous_enabled_;
    t_dtype = previous_dtype_;
}

bool lowers_gemm(DType a, DType b, DType& half) {
    if (!t_enabled) return false;
    auto eligible = [](DType d) { return d == DType::float32 || d == t_dtype; };
    if (!eligible(a) || !eligible(b) || (a != DType::float32 && b != DType::float32)) return false;
    half = t_dtype;
    return true;
}

}  // namespace lumen::autocast
