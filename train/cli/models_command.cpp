// The listing of `lumen models`, aligned in columns.
#include "train/cli/models_command.h"

#include <algorithm>
#include <iomanip>

#include "models/registry.h"

namespace lumen::train::cli {

void print_models(std::ostream& out) {
    out << "Models (set with \"model\": {\"name\": NAME, KEY: VALUE, ...} in a config, or\n"
        << "--set model.name=NAME --set model.KEY=VALUE):\n";
    for (const std::string& name : models::model_names()) {
        const models::ModelEntry& entry = models::find_model(name);
        out << "\n" << name << ": " << entry.description << "\n";
        size_t key_width = 0, value_width = 0;
        for (const nn::OptionSpec& spec : entry.options) {
            key_width = std::max(key_width, spec.key.size());
            value_width = std::max(value_width, nn::format_option(spec.default_value).size());
        }
        for (const nn::OptionSpec& spec : entry.options) {
            out << "  " << std::left << std::setw(int(key_width)) << spec.key << "  "
                << std::setw(int(value_width)) << nn::format_option(spec.default_value) << "  "
                << spec.help;
            if (!spec.choices.empty()) {
                out << " (";
                for (size_t i = 0; i < spec.choices.size(); ++i)
                    out << (i ? ", " : "") << spec.choices[i];
                out << ")";
            }
            const std::string range = spec.range.str();
            if (range != "finite")
                out << (range[0] == '[' || range[0] == '(' ? "; in " : "; ") << range;
            out << "\n";
        }
    }
}

}  // namespace lumen::train::cli
