// Small fixtures of the dataset-layout tests: writing a text file (folders made) and the
// LayoutOptions of a layout at a root.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "datasets/layouts.h"

namespace lumen::testing {

inline void write_text(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
}

inline datasets::LayoutOptions layout_options(const std::string& layout, const std::string& root) {
    datasets::LayoutOptions o;
    o.layout = layout;
    o.root = root;
    return o;
}

}  // namespace lumen::testing
