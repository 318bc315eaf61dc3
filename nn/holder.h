// nn::Holder<M>: a module member that is called like a function, as libtorch's TORCH_MODULE
// holders are (`torch::nn::Conv2d conv1{nullptr}; ... conv1(x)`). It is a shared_ptr<M> that
// forwards calls to M::forward, so a custom module reads:
//   nn::Holder<nn::Conv2d> conv1;                                       // empty until assigned
//   conv1 = register_module("conv1", nn::make<nn::Conv2d>(1, 16, 3));  // in the constructor
//   Tensor y = conv1(x);                                               // conv1->forward(x)
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include <cxxabi.h>

#include "core/error.h"
#include "core/profiler.h"
#include "nn/module.h"

namespace lumen::nn {

namespace detail {
// "lumen::nn::Conv2d" from typeid(M) (the compiler's name when it cannot be demangled).
inline std::string type_name_of(const std::type_info& type) {
    int status = 0;
    char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
    std::string result = status == 0 && name ? name : type.name();
    std::free(name);
    return result;
}
}  // namespace detail

template <typename M>
class Holder {
    static_assert(std::is_base_of_v<Module, M>, "nn::Holder<M> needs M derived from nn::Module");

  public:
    Holder() = default;
    Holder(std::nullptr_t) {}  // NOLINT: `Holder<M> m{nullptr}`, as libtorch's empty holders
    Holder(std::shared_ptr<M> module) : module_(std::move(module)) {}  // NOLINT: implicit

    // conv1(x, ...) is conv1->forward(x, ...), with any of M's forward overloads.
    template <typename... Args>
    decltype(auto) operator()(Args&&... args) const {
        M& module = checked();
        profiler::NamedScope profile(profiler::Kind::module, [&] { return module.type_name(); });
        return module.forward(std::forward<Args>(args)...);
    }
    // Member access and dereference; both throw [nn::Holder<M>] when the holder is empty.
    M* operator->() const { return &checked(); }
    M& operator*() const { return checked(); }
    // The module, or nullptr when empty (no check).
    M* get() const { return module_.get(); }
    const std::shared_ptr<M>& ptr() const { return module_; }
    bool is_empty() const { return module_ == nullptr; }
    explicit operator bool() const { return module_ != nullptr; }

    // As shared_ptr<M> or any base (shared_ptr<Module>), to register it elsewhere or list it
    // in a Sequential: nn::Sequential({conv1, relu}).
    template <typename T>
    requires std::is_convertible_v<M*, T*>
    operator std::shared_ptr<T>() const {  // NOLINT: implicit on purpose
        return module_;
    }

  private:
    M& checked() const {
        LUMEN_CHECK(module_ != nullptr, "nn::Holder<" + detail::type_name_of(typeid(M)) + ">",
                    "used while empty (null): assign it a module first, e.g. member = "
                    "register_module(\"name\", nn::make<M>(...)) in the constructor");
        return *module_;
    }

    std::shared_ptr<M> module_;
};

}  // namespace lumen::nn
