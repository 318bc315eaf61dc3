// Out-of-line throwers so that the check macros stay small at every call site.
#include "core/error.h"

namespace lumen::detail {

void throw_error(const std::string& op, const std::string& message) {
    throw Error("[" + op + "] " + message);
}

void assert_fail(const char* cond, const char* file, int line) {
    throw Error(cat("[lumen internal] assertion `", cond, "` failed at ", file, ":", line,
                    ". This is a lumen bug; please report it."));
}

}  // namespace lumen::detail
