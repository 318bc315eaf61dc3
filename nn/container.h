// Containers: Sequential (children "0", "1", ... applied in order) and ModuleList (an indexed
// list of children without a forward of its own), named as in PyTorch so that keys like
// "blocks.3.attn.qkv.weight" or "to_patch_embedding.2.weight" line up.
#pragma once

#include <memory>
#include <vector>

#include "nn/module.h"

namespace lumen::nn {

// y = m_{n-1}(... m_1(m_0(x))); every child must have the single-tensor forward.
class Sequential : public Module {
  public:
    Sequential() : Module("Sequential") {}
    explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
    // Appends a child named by its index; returns it.
    template <typename M>
    std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
        add_child(std::to_string(modules_.size()), module);
        modules_.push_back(module);
        return module;
    }
    Tensor forward(const Tensor& x) override;
    size_t size() const { return modules_.size(); }
    Module& operator[](size_t i) const { return *modules_.at(i); }

  private:
    std::vector<std::shared_ptr<Module>> modules_;
};

// An indexed list of modules of one type (blocks of a transformer); the owner iterates it.
template <typename M>
class ModuleList : public Module {
  public:
    ModuleList() : Module("ModuleList") {}
    std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
        add_child(std::to_string(modules_.size()), module);
        modules_.push_back(module);
        return module;
    }
    size_t size() const { return modules_.size(); }
    M& operator[](size_t i) const { return *modules_.at(i); }
    auto begin() const { return modules_.begin(); }
    auto end() const { return modules_.end(); }

  private:
    std::vector<std::shared_ptr<M>> modules_;
};

}  // namespace lumen::nn
