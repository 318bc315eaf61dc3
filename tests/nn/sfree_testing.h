// Helpers shared by the softmax-free (Khader et al.) / SimA tests: a float64 gradcheck of a
// module's input and every parameter element, and the peak resident memory of the process (to show
// that the linear attentions never allocate an N x N matrix).
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <string>

#include "support/gradcheck.h"

namespace lumen::testing::sfree {

// Linux: resets the peak resident set size (writing 5 to /proc/self/clear_refs); false when the
// kernel does not allow it.
inline bool reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    if (!clear) return false;
    clear << "5";
    clear.flush();
    return bool(clear);
}

// Linux: a field of /proc/self/status in kB ("VmHWM" peak, "VmRSS" current); -1 if absent.
inline int64_t proc_status_kb(const std::string& field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
    }
    return -1;
}

}  // namespace lumen::testing::sfree
