// lumen::Error, the one exception type, and the check macros that build its messages.
// Every message starts with the op or component in brackets and shows the offending values:
//   LUMEN_CHECK(x.ndim() == 4, "conv2d", "expects (B, C, H, W), got shape ", x.shape());
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lumen {

class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Shapes and index lists print as [2, 3, 4] in messages.
template <typename T>
std::ostream& operator<<(std::ostream& os, const std::vector<T>& values) {
    os << '[';
    for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
    return os << ']';
}

namespace detail {
template <typename... Parts>
std::string cat(const Parts&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    return os.str();
}
[[noreturn]] void throw_error(const std::string& op, const std::string& message);
[[noreturn]] void assert_fail(const char* cond, const char* file, int line);
}  // namespace detail

}  // namespace lumen

// Checks on user input: always on. Throws lumen::Error("[op] message").
#define LUMEN_CHECK(cond, op, ...)                                                  \
    do {                                                                            \
        if (!(cond)) ::lumen::detail::throw_error(op, ::lumen::detail::cat(__VA_ARGS__)); \
    } while (0)

// Unconditional error with the same format.
#define LUMEN_FAIL(op, ...) ::lumen::detail::throw_error(op, ::lumen::detail::cat(__VA_ARGS__))

// Internal invariants: a failure is a lumen bug. On unless NDEBUG without LUMEN_FORCE_ASSERTS.
#if !defined(NDEBUG) || defined(LUMEN_FORCE_ASSERTS)
#define LUMEN_ASSERT(cond) \
    do {                   \
        if (!(cond)) ::lumen::detail::assert_fail(#cond, __FILE__, __LINE__); \
    } while (0)
#else
#define LUMEN_ASSERT(cond) ((void)0)
#endif
