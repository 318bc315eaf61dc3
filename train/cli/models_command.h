// `lumen models`: the registered models and their config keys with defaults and help.
#pragma once

#include <ostream>

namespace lumen::train::cli {

// Prints every registered model: its name and description, then one line per key (the
// config's "model" section) with its type, default and help.
void print_models(std::ostream& out);

}  // namespace lumen::train::cli
