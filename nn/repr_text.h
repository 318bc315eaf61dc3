// Values as PyTorch's module printout writes them (Python's repr): tuples "(3, 3)" and "(4,)",
// floats "1e-05" and "0.1", booleans "True". Used by the modules' extra_repr().
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace lumen::nn {

inline std::string py_tuple(const std::vector<int64_t>& values) {
    std::string out = "(";
    for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
    return out + (values.size() == 1 ? ",)" : ")");
}

// Python's repr for the usual hyperparameters (up to 12 significant digits; "1.0", not "1").
inline std::string py_float(double value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.12g", value);
    std::string out = text;
    if (out.find_first_of(".en") == std::string::npos) out += ".0";
    return out;
}

inline std::string py_bool(bool value) { return value ? "True" : "False"; }

}  // namespace lumen::nn
