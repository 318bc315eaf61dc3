// nn::Module: registration, traversal by dotted names, state dicts, modes and device moves.
#include "nn/module.h"

#include <sstream>

#include "core/autograd.h"

namespace lumen::nn {

namespace {

std::string joined(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
}

std::string shape_text(const Shape& shape) {
    std::ostringstream os;
    os << shape;
    return os.str();
}

// "a, b, c" (at most 20 names, then "... (N more)") for error messages.
std::string name_list(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) {
        if (i == 20) return out + ", ... (" + std::to_string(names.size() - 20) + " more)";
        out += (i ? ", " : "") + names[i];
    }
    return out;
}

}  // namespace

Tensor Module::forward(const Tensor&) {
    LUMEN_FAIL(type_name_, "has no single-tensor forward(x); call its own forward overload");
}

void Module::check_new_name(const std::string& name) const {
    LUMEN_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_,
                "member names must be non-empty and contain no '.', got '", name, "'");
    auto taken = [&](const auto& slots) {
        for (const auto& slot : slots)
            if (slot.name == name) return true;
        return false;
    };
    bool child = false;
    for (const auto& [child_name, unused] : children_) child |= child_name == name;
    LUMEN_CHECK(!taken(parameters_) && !taken(buffers_) && !child, type_name_, "member '", name,
                "' is registered twice");
}

Tensor Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
    if (!value.defined()) return value;
    check_new_name(name);
    LUMEN_CHECK(value.is_leaf(), type_name_, "parameter '", name,
                "' must be a leaf tensor (detach() it first)");
    if (value.is_floating_point()) value.requires_grad_(requires_grad);
    parameters_.push_back({name, value, true});
    return value;
}

Tensor Module::register_buffer(const std::string& name, Tensor value, bool persistent) {
    if (!value.defined()) return value;
    check_new_name(name);
    buffers_.push_back({name, value.detach(), persistent});
    return buffers_.back().tensor;
}

void Module::set_buffer(const std::string& name, const Tensor& value) {
    for (Slot& slot : buffers_) {
        if (slot.name == name) {
            slot.tensor.set_data(value.detach());
            return;
        }
    }
    LUMEN_FAIL(type_name_, "has no buffer '", name, "'");
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
    LUMEN_CHECK(module != nullptr, type_name_, "child module '", name, "' is null");
    check_new_name(name);
    children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, bool params, bool recurse,
                     std::vector<NamedTensor>* out) const {
    for (const Slot& slot : params ? parameters_ : buffers_)
        out->emplace_back(joined(prefix, slot.name), slot.tensor);
    if (!recurse) return;
    for (const auto& [name, child] : children_)
        child->collect(joined(prefix, name), params, true, out);
}

std::vector<NamedTensor> Module::named_parameters(bool recurse) const {
    std::vector<NamedTensor> out;
    collect("", true, recurse, &out);
    return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
    std::vector<Tensor> out;
    for (auto& [name, tensor] : named_parameters(recurse)) out.push_back(tensor);
    return out;
}

std::vector<NamedTensor> Module::named_buffers(bool recurse) const {
    std::vector<NamedTensor> out;
    collect("", false, recurse, &out);
    return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
    std::vector<std::pair<std::string, Module*>> out{{"", this}};
    for (const auto& [name, child] : children_)
        for (auto& [sub, module] : child->named_modules())
            out.emplace_back(sub.empty() ? name : name + "." + sub, module);
    return out;
}

Module& Module::submodule(const std::string& path) {
    Module* at = this;
    size_t start = 0;
    while (start < path.size()) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
        Module* next = nullptr;
        for (const auto& [name, child] : at->children_)
            if (name == part) next = child.get();
        LUMEN_CHECK(next != nullptr, type_name_, "has no submodule '", path, "' ('", part,
                    "' is not a child of ", at->type_name_, ")");
        at = next;
        start = dot == std::string::npos ? path.size() : dot + 1;
    }
    return *at;
}

Tensor Module::tensor(const std::string& path) const {
    for (bool params : {true, false}) {
        std::vector<NamedTensor> all;
        collect("", params, true, &all);
        for (auto& [name, value] : all)
            if (name == path) return value;
    }
    LUMEN_FAIL(type_name_, "has no parameter or buffer '", path, "'");
}

std::map<std::string, Tensor> Module::state_dict() const {
    std::map<std::string, Tensor> out;
    for (auto& [name, tensor] : named_parameters()) out[name] = tensor.detach();
    // Persistent buffers only: walk the slots to see the flag.
    std::vector<std::pair<std::string, const Module*>> stack{{"", this}};
    while (!stack.empty()) {
        auto [prefix, module] = stack.back();
        stack.pop_back();
        for (const Slot& slot : module->buffers_)
            if (slot.persistent) out[joined(prefix, slot.name)] = slot.tensor.detach();
        for (const auto& [name, child] : module->children_)
            stack.emplace_back(joined(prefix, name), child.get());
    }
    return out;
}

LoadReport Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict,
                                   bool allow_cast) {
    std::map<std::string, Tensor> own = state_dict();
    LoadReport report;
    for (const auto& [name, tensor] : own) {
        auto it = state.find(name);
        if (it == state.end()) {
            report.missing.push_back(name);
        } else if (!it->second.defined() || it->second.shape() != tensor.shape()) {
            report.mismatched.push_back(
                name + ": got " +
                (it->second.defined() ? shape_text(it->second.shape()) : "undefined") +
                ", expected " + shape_text(tensor.shape()));
        } else if (it->second.dtype() != tensor.dtype()) {
            std::string change =
                detail::cat(name, ": ", it->second.dtype(), " -> ", tensor.dtype());
            if (allow_cast)
                report.cast.push_back(change);
            else
                report.mismatched.push_back(detail::cat(name, ": got dtype ", it->second.dtype(),
                                                        ", expected ", tensor.dtype()));
        }
    }
    for (const auto& [name, unused] : state)
        if (!own.count(name)) report.unexpected.push_back(name);
    bool fail = !report.mismatched.empty() ||
                (strict && (!report.missing.empty() || !report.unexpected.empty()));
    if (fail) {
        std::string message = "state dict does not fit " + type_name_ + ":";
        if (!report.missing.empty()) message += "\n  missing keys: " + name_list(report.missing);
        if (!report.unexpected.empty())
            message += "\n  unexpected keys: " + name_list(report.unexpected);
        if (!report.mismatched.empty())
            message += "\n  shape or dtype mismatches: " + name_list(report.mismatched);
        LUMEN_FAIL("load_state_dict", message);
    }
    NoGradGuard no_grad;
    for (auto& [name, tensor] : own) {
        auto it = state.find(name);
        if (it != state.end()) tensor.copy_(it->second);
    }
    return report;
}

void Module::train(bool mode) {
    training_ = mode;
    for (auto& [name, child] : children_) child->train(mode);
}

Module& Module::to(Device device) {
    NoGradGuard no_grad;
    for (bool params : {true, false}) {
        for (auto& [name, tensor] : params ? named_parameters() : named_buffers()) {
            if (tensor.device() == device) continue;
            Tensor grad = tensor.grad();
            tensor.set_data(tensor.detach().to(device));
            if (grad.defined()) tensor.set_grad(grad.to(device));
        }
    }
    return *this;
}

Module& Module::to(DType dtype) {
    LUMEN_CHECK(is_floating(dtype), type_name_,
                "to(dtype) converts floating parameters and "
                "buffers, so the dtype must be floating, got ",
                dtype);
    NoGradGuard no_grad;
    for (bool params : {true, false}) {
        for (auto& [name, tensor] : params ? named_parameters() : named_buffers()) {
            if (!tensor.is_floating_point() || tensor.dtype() == dtype) continue;
            Tensor grad = tensor.grad();
            tensor.set_data(tensor.detach().to(dtype));
            if (grad.defined()) tensor.set_grad(grad.to(dtype));
        }
    }
    return *this;
}

void Module::zero_grad() {
    for (auto& [name, tensor] : named_parameters()) tensor.set_grad(Tensor());
}

int64_t Module::num_parameters(bool trainable_only) const {
    int64_t count = 0;
    for (auto& [name, tensor] : named_parameters())
        if (!trainable_only || tensor.requires_grad()) count += tensor.numel();
    return count;
}

void Module::str_into(std::string* out, int indent) const {
    out->append(type_name_).append("(").append(extra_repr());
    if (children_.empty()) {
        out->append(")");
        return;
    }
    for (const auto& [name, child] : children_) {
        out->append("\n").append(size_t(indent + 2), ' ');
        out->append("(").append(name).append("): ");
        child->str_into(out, indent + 2);
    }
    out->append("\n").append(size_t(indent), ' ').append(")");
}

std::string Module::str() const {
    std::string out;
    str_into(&out, 0);
    return out;
}

}  // namespace lumen::nn
