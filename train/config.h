// JSON configs with typed keys: a RawConfig is the file as written (nested sections flattened to
// dotted keys: {"optim": {"lr": 3e-4}} -> "optim.lr"), plus command-line --set overrides;
// resolve_config checks it against OptionSpecs (nn/options.h): unknown keys are errors that
// suggest the closest valid key, values must have the key's type, missing keys take defaults.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nn/options.h"

namespace lumen::train {

class RawConfig {
  public:
    // Parses JSON text. `source` names it in messages (a path, "--set", "checkpoint").
    // Throws [config] <source>: ... for invalid JSON, nesting deeper than 32 levels, a repeated
    // key, a top level that is not an object, null, a list that is not all numbers, or an
    // empty key.
    static RawConfig parse(const std::string& text, const std::string& source);
    // Reads and parses a file; throws [config] naming the path when it cannot be read, is not
    // a regular file or is over 16 MB. The JSON may nest at most 32 levels and may not repeat
    // a key.
    static RawConfig read(const std::string& path);

    // Applies "key=value" (dotted key); the value is parsed as JSON when it is valid JSON and
    // taken as a string otherwise (--set model.name=vit). `source` names the flag in messages.
    // Throws [config] without '='.
    void set(const std::string& assignment) { assign(assignment, "--set"); }
    void assign(const std::string& assignment, const std::string& source);
    void set(const std::string& key, nn::OptionValue value, const std::string& source = "--set");
    std::optional<nn::OptionValue> find(const std::string& key) const;
    const std::map<std::string, nn::OptionValue>& values() const { return values_; }
    const std::string& source() const { return source_; }
    // Where `key`'s value came from: the file's source, or "--set" for an override.
    const std::string& source_of(const std::string& key) const;

  private:
    std::string source_;
    std::map<std::string, nn::OptionValue> values_;
    std::map<std::string, std::string> overridden_;  // key -> source of an override
};

// Checks every key of `raw` against `specs` (dotted keys) and returns all of them resolved:
// the raw value converted to the spec's type (nn::coerce_option), or the default. Throws
// [config] <source>: unknown key 'optim.learning_rate'; did you mean 'optim.lr'?   or
// [config] <source>: option 'train.epochs' expects an integer, got "ten".
nn::Options resolve_config(const RawConfig& raw, const std::vector<nn::OptionSpec>& specs);

// Nested JSON of resolved options ({"optim": {"lr": 0.0003}, ...}), keys sorted, `indent`
// spaces per level (-1: one line).
std::string config_to_json(const nn::Options& options, int indent = 2);

}  // namespace lumen::train
