// nn::Module: the base of every layer, block and model. A module owns named parameters,
// buffers and child modules; their names joined by dots ("blocks.0.attn.qkv.weight") are
// exactly the PyTorch state_dict keys of the reference implementations, so weights trained in
// PyTorch, timm or MONAI load directly (nn/state_dict.h reads and writes them as safetensors).
// Containers (Sequential, ModuleList) are in nn/container.h, initialisers in nn/init.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace lumen::nn {

using NamedTensor = std::pair<std::string, Tensor>;

// What load_state_dict found: keys the module has but the dict lacks, keys the dict has but
// the module lacks, and keys present in both with different shapes ("name: got [..],
// expected [..]").
struct LoadReport {
    std::vector<std::string> missing;
    std::vector<std::string> unexpected;
    std::vector<std::string> mismatched;  // "name: got [2, 3], expected [3, 2]" (shape or dtype)
    std::vector<std::string> cast;        // "name: int32 -> float32", with allow_cast only
    bool ok() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
};

template <typename M>
class Holder;  // nn/holder.h

class Module {
  public:
    // `type_name` is the class name shown in messages and str() ("Linear", "ViTBlock").
    explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
    virtual ~Module() = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    const std::string& type_name() const { return type_name_; }

    // The single-tensor forward that Sequential chains and most layers implement. Modules
    // with other signatures (attention with a mask, blocks with a grid size) add their own
    // overloads; calling this one on a module without it throws [<type_name>].
    virtual Tensor forward(const Tensor& x);
    Tensor operator()(const Tensor& x) { return forward(x); }
    // Every output a training loss reads: the main output and, for models with deep
    // supervision (UTNet, PVT-GDLA), the auxiliary ones, in the model's documented order.
    // Default: {forward(x)}.
    virtual std::vector<Tensor> forward_outputs(const Tensor& x) { return {forward(x)}; }

    // ---- named members, in registration order, children depth first ----
    std::vector<NamedTensor> named_parameters(bool recurse = true) const;
    std::vector<Tensor> parameters(bool recurse = true) const;
    // Buffers, persistent or not (running statistics, fixed index tables).
    std::vector<NamedTensor> named_buffers(bool recurse = true) const;
    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
        return children_;
    }
    // This module (name "") and every descendant, depth first.
    std::vector<std::pair<std::string, Module*>> named_modules();
    // The descendant at a dotted path ("blocks.3.attn"); throws [<type_name>] naming the
    // first missing part.
    Module& submodule(const std::string& path);
    // The parameter or buffer at a dotted path; throws [<type_name>] when there is none.
    Tensor tensor(const std::string& path) const;

    // Parameters and persistent buffers by full name, detached (they share storage).
    std::map<std::string, Tensor> state_dict() const;
    // Copies values into the module's own tensors (moving them to its device), so handles held
    // elsewhere (optimizers) stay valid. A shape mismatch always throws, and so does a dtype
    // mismatch unless `allow_cast` (then the value is converted and listed in report.cast);
    // with `strict`, missing or unexpected keys throw too. The message of [load_state_dict]
    // lists every missing, unexpected and mismatched key with both shapes or dtypes. Returns
    // what was found.
    LoadReport load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true,
                               bool allow_cast = false);

    // Training mode (dropout active, batch norm uses batch statistics) for this module and
    // every descendant; eval() is train(false).
    void train(bool mode = true);
    void eval() { train(false); }
    bool is_training() const { return training_; }

    // Moves every parameter and buffer (and existing gradients) to `device`, in place: the
    // tensors stay the same objects (Tensor::set_data), so optimizer state keeps pointing at
    // them. to(dtype) converts floating parameters and buffers only (integer index buffers
    // keep their type).
    Module& to(Device device);
    Module& to(DType dtype);
    // Clears .grad() of every parameter.
    void zero_grad();
    // Number of parameter elements (only those with requires_grad when `trainable_only`).
    int64_t num_parameters(bool trainable_only = false) const;

    // A PyTorch-like tree: "ViT(\n  (patch_embed): PatchEmbed(...)\n ...)".
    std::string str() const;
    // One line of settings shown after the type name in str(), e.g. "in=64, out=128".
    virtual std::string extra_repr() const { return ""; }

  protected:
    // Registers a parameter (a leaf; requires_grad set for floating tensors unless told
    // otherwise) and returns the handle that the subclass keeps as a member. An undefined
    // tensor registers nothing and is returned as is (an absent optional bias). Names must be
    // unique within the module and contain no dot; throws [<type_name>] otherwise.
    Tensor register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
    // A buffer: state that is not trained. Persistent buffers are part of the state_dict.
    Tensor register_buffer(const std::string& name, Tensor value, bool persistent = true);
    // A child module; its members get "name." prefixed.
    template <typename M>
    std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
        add_child(name, module);
        return module;
    }
    // The same for a holder (nn/holder.h), as libtorch's register_module takes its holders.
    template <typename M>
    Holder<M> register_module(const std::string& name, const Holder<M>& module) {
        add_child(name, module.ptr());
        return module;
    }
    // Replaces a registered buffer's value (a buffer that is reassigned, not updated in
    // place); throws [<type_name>] for an unknown name.
    void set_buffer(const std::string& name, const Tensor& value);

    // Hook for modules whose children are not known at construction (e.g. ModuleList::push).
    void add_child(const std::string& name, std::shared_ptr<Module> module);

  private:
    struct Slot {
        std::string name;
        Tensor tensor;
        bool persistent = true;
    };
    void check_new_name(const std::string& name) const;
    void collect(const std::string& prefix, bool params, bool recurse,
                 std::vector<NamedTensor>* out) const;
    void str_into(std::string* out, int indent) const;

    std::string type_name_;
    std::vector<Slot> parameters_;
    std::vector<Slot> buffers_;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
    bool training_ = true;
};

// Creates a module held by shared_ptr, the way modules are owned (parents hold children).
template <typename M, typename... Args>
std::shared_ptr<M> make(Args&&... args) {
    return std::make_shared<M>(std::forward<Args>(args)...);
}

}  // namespace lumen::nn
