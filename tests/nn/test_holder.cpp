// nn::Holder<M>: members called as conv1(x) forward to M::forward (any overload); registered
// through register_module they appear under their name; they go into a Sequential as
// shared_ptr<Module>; an empty holder throws an error naming the module type.
#include "nn/holder.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// Conv -> ReLU -> pool -> Linear, written libtorch-style with holders.
struct HolderNet : nn::Module {
    HolderNet() : nn::Module("HolderNet") {
        conv1 = register_module("conv1",
                                nn::make<nn::Conv2d>(1, 4, 3, nn::ConvOptions{.padding = {1}}));
        pool = register_module("pool", nn::make<nn::AdaptiveAvgPool2d>(1));
        nn::Holder<nn::Linear> head = nn::make<nn::Linear>(4, 2);
        fc = register_module("fc", head);  // a holder registers as its module
    }
    Tensor forward(const Tensor& x) override { return fc(pool(relu(conv1(x))).flatten(1)); }
    nn::Holder<nn::Conv2d> conv1;
    nn::Holder<nn::AdaptiveAvgPool2d> pool;
    nn::Holder<nn::Linear> fc{nullptr};
};

// A module whose forward takes two tensors: the holder forwards both.
struct AddScaled : nn::Module {
    AddScaled() : nn::Module("AddScaled") {}
    Tensor forward(const Tensor& a, const Tensor& b, double scale) { return add(a, mul(b, scale)); }
};

}  // namespace

TEST_CASE("a holder calls forward, and registered holders are named children", "[nn][module]") {
    manual_seed(0);
    HolderNet net;
    Tensor x = randn({2, 1, 5, 5});
    Tensor expected = net.fc->forward(net.pool->forward(relu(net.conv1->forward(x))).flatten(1));
    require_close(net.forward(x), expected);
    require_close(net.conv1(x), (*net.conv1).forward(x));
    CHECK(net.conv1.get() == &net.submodule("conv1"));
    CHECK(net.tensor("conv1.weight").impl() == net.conv1->weight.impl());
    std::vector<std::string> names;
    for (auto& [name, unused] : net.named_parameters()) names.push_back(name);
    CHECK(names == std::vector<std::string>{"conv1.weight", "conv1.bias", "fc.weight", "fc.bias"});

    nn::Holder<AddScaled> add_scaled = nn::make<AddScaled>();
    require_close(add_scaled(ones({2}), ones({2}), 2.0), {3.0, 3.0});
}

TEST_CASE("holders go into a Sequential and convert to shared_ptr<Module>", "[nn][module]") {
    nn::Holder<nn::Linear> fc = nn::make<nn::Linear>(3, 2);
    nn::Holder<nn::ReLU> act = nn::make<nn::ReLU>();
    nn::Sequential sequential({fc, act});
    CHECK(sequential.size() == 2);
    CHECK(&sequential[0] == fc.get());
    Tensor x = randn({4, 3});
    require_close(sequential.forward(x), relu(fc(x)));
    std::shared_ptr<nn::Module> base = fc;
    CHECK(base.get() == fc.get());
    CHECK(fc.ptr().use_count() == 4);  // fc, the Sequential's child and list, base
}

TEST_CASE("an empty holder throws an error naming the module type", "[nn][module]") {
    nn::Holder<nn::Conv2d> conv1{nullptr};
    nn::Holder<nn::Linear> fc;
    CHECK(conv1.is_empty());
    CHECK_FALSE(bool(fc));
    CHECK(fc.get() == nullptr);
    require_error(
        [&] {
            conv1(zeros({1, 1, 4, 4}));
        },
        {"[nn::Holder<lumen::nn::Conv2d>]", "empty"});
    require_error([&] { (void)fc->weight; },
                  {"[nn::Holder<lumen::nn::Linear>]", "register_module"});
    require_error([&] { (void)*fc; }, {"nn::Linear", "empty"});
}
