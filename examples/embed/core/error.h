// This program's own core/error.h, at the same path as a header of lumen's. An installed lumen
// must not pick it up: its headers include each other as "lumen/core/error.h" and its CMake
// target adds only <prefix>/include to the include path.
#pragma once

namespace app {
inline const char* own_header() { return "the program's own core/error.h"; }
}  // namespace app
