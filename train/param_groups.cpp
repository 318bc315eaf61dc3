// Weight-decay exemptions by parameter name and owning module type.
#include "train/param_groups.h"

#include <set>

#include "core/error.h"

namespace lumen::train {

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_norm_type(const std::string& type) {
    static const std::set<std::string> kNorms = {"LayerNorm",   "RMSNorm",     "GroupNorm",
                                                 "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
                                                 "SeqNorm",     "InstanceNorm"};
    return kNorms.count(type) > 0;
}

// The last dotted part of a name: "blocks.0.attn.subln.weight" -> "weight".
std::string leaf(const std::string& name) {
    size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}

bool is_exempt(const std::string& full, const std::string& owner_type, int64_t ndim,
               const WeightDecayExemptions& rules) {
    const std::string own = leaf(full);
    if (rules.biases && own == "bias") return true;
    if (rules.below_2d) return ndim < 2;
    if (rules.norm_weights && (is_norm_type(owner_type) || ends_with(full, "subln.weight")))
        return true;
    if (rules.embeddings) {
        if (own == "cls_token" || own == "dist_token" || own == "pos_embed") return true;
        if (owner_type == "Embedding" && own == "weight") return true;
    }
    return false;
}

}  // namespace

std::vector<std::string> weight_decay_exempt_names(const nn::Module& module,
                                                   const WeightDecayExemptions& rules) {
    // named_modules() is non-const only because it hands out mutable pointers; nothing here
    // modifies the module.
    auto& mutable_module = const_cast<nn::Module&>(module);
    std::set<std::string> exempt;
    for (auto& [prefix, child] : mutable_module.named_modules()) {
        for (auto& [name, tensor] : child->named_parameters(false)) {
            std::string full = prefix.empty() ? name : prefix + "." + name;
            if (is_exempt(full, child->type_name(), tensor.ndim(), rules)) exempt.insert(full);
        }
    }
    std::vector<std::string> ordered;
    for (auto& [name, tensor] : module.named_parameters())
        if (exempt.count(name)) ordered.push_back(name);
    return ordered;
}

std::vector<ParamGroup> weight_decay_groups(const nn::Module& module, double lr,
                                            double weight_decay,
                                            const WeightDecayExemptions& rules) {
    std::vector<std::string> names = weight_decay_exempt_names(module, rules);
    std::set<std::string> exempt(names.begin(), names.end());
    ParamGroup decay{{}, lr, weight_decay}, no_decay{{}, lr, 0.0};
    for (auto& [name, tensor] : module.named_parameters()) {
        if (!tensor.requires_grad()) continue;
        (exempt.count(name) ? no_decay : decay).params.push_back(tensor);
    }
    LUMEN_CHECK(!decay.params.empty() || !no_decay.params.empty(), "param_groups",
                module.type_name(), " has no trainable parameter");
    std::vector<ParamGroup> groups;
    if (!decay.params.empty()) groups.push_back(std::move(decay));
    if (!no_decay.params.empty()) groups.push_back(std::move(no_decay));
    return groups;
}

}  // namespace lumen::train
