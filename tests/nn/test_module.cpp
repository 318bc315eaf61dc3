// The module system: registration and dotted names, state dicts (in memory and as safetensors,
// strict and non-strict, with the error that lists every mismatch), train/eval, device and
// dtype moves that keep tensor identity, zero_grad, parameter counts, str().
#include "nn/activation.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/norm.h"
#include "nn/repr_text.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// A two-level module: "fc" (Linear), "norm" (LayerNorm), buffer "steps", child list "blocks".
struct Tiny : nn::Module {
    Tiny() : nn::Module("Tiny") {
        fc = register_module("fc", nn::make<nn::Linear>(3, 4));
        scale = register_parameter("scale", ones({4}));
        steps = register_buffer("steps", zeros({}, DType::int64));
        cache = register_buffer("cache", zeros({2}), false);
        blocks = register_module("blocks", nn::make<nn::ModuleList<nn::LayerNorm>>());
        blocks->push_back(nn::make<nn::LayerNorm>(Shape{4}));
        blocks->push_back(nn::make<nn::LayerNorm>(Shape{4}));
    }
    Tensor forward(const Tensor& x) override {
        Tensor y = mul(fc->forward(x), scale);
        for (auto& block : *blocks) y = block->forward(y);
        return y;
    }
    std::shared_ptr<nn::Linear> fc;
    std::shared_ptr<nn::ModuleList<nn::LayerNorm>> blocks;
    Tensor scale, steps, cache;
};

std::vector<std::string> names_of(const std::vector<nn::NamedTensor>& named) {
    std::vector<std::string> names;
    for (auto& [name, unused] : named) names.push_back(name);
    return names;
}

}  // namespace

TEST_CASE("modules name parameters, buffers and children with dotted PyTorch keys",
          "[nn][module]") {
    Tiny m;
    CHECK(names_of(m.named_parameters()) ==
          std::vector<std::string>{"scale", "fc.weight", "fc.bias", "blocks.0.weight",
                                   "blocks.0.bias", "blocks.1.weight", "blocks.1.bias"});
    CHECK(names_of(m.named_buffers()) == std::vector<std::string>{"steps", "cache"});
    auto state = m.state_dict();
    CHECK(state.size() == 8);  // 7 parameters + the persistent buffer
    CHECK(state.count("steps") == 1);
    CHECK(state.count("cache") == 0);
    CHECK(m.num_parameters() == 4 + 12 + 4 + 4 * 4);
    CHECK(&m.submodule("blocks.1") == &(*m.blocks)[1]);
    CHECK(m.tensor("fc.weight").impl() == m.fc->weight.impl());
    for (auto& p : m.parameters()) CHECK(p.requires_grad());
    require_error([&] { m.submodule("blocks.7"); }, {"[Tiny]", "blocks.7"});
    require_error([&] { m.tensor("fc.nope"); }, {"[Tiny]", "fc.nope"});
    std::string text = m.str();
    CHECK(text.find("(fc): Linear(in_features=3, out_features=4, bias=True)") != std::string::npos);
    CHECK(text.find("(1): LayerNorm((4,), eps=1e-05, elementwise_affine=True)") !=
          std::string::npos);
}

TEST_CASE("registering a name twice or a dotted name is an error", "[nn][module]") {
    struct Bad : nn::Module {
        explicit Bad(int variant) : nn::Module("Bad") {
            register_parameter("w", ones({2}));
            if (variant == 0) register_buffer("w", ones({2}));
            if (variant == 1) register_parameter("a.b", ones({2}));
        }
    };
    require_error([] { Bad b(0); }, {"[Bad]", "'w'", "twice"});
    require_error([] { Bad b(1); }, {"[Bad]", "'a.b'"});
    require_error(
        [] {
            Bad b(2);
            b.forward(ones({1}));
        },
        {"[Bad]", "forward"});
}

TEST_CASE("load_state_dict copies values in place and lists every mismatch", "[nn][module]") {
    manual_seed(1);
    Tiny a;
    manual_seed(2);
    Tiny b;
    Tensor weight_handle = b.fc->weight;
    b.load_state_dict(a.state_dict());
    require_close(b.fc->weight, a.fc->weight, 0, 0);
    CHECK(weight_handle.impl() == b.fc->weight.impl());  // same tensor, new values

    auto state = a.state_dict();
    state.erase("scale");
    state["extra.weight"] = ones({1});
    state["fc.weight"] = ones({5, 3});
    require_error([&] { b.load_state_dict(state); },
                  {"[load_state_dict]", "missing keys: scale", "unexpected keys: extra.weight",
                   "fc.weight: got [5, 3], expected [4, 3]"});
    // Non-strict: missing and unexpected keys are reported, shape mismatches still throw.
    state["fc.weight"] = a.fc->weight;
    nn::LoadReport report = b.load_state_dict(state, false);
    CHECK(report.missing == std::vector<std::string>{"scale"});
    CHECK(report.unexpected == std::vector<std::string>{"extra.weight"});
    state["fc.weight"] = ones({5, 3});
    require_error([&] { b.load_state_dict(state, false); },
                  {"shape or dtype mismatches", "[5, 3]"});
}

TEST_CASE("state dicts round-trip through safetensors files", "[nn][module]") {
    TempDir dir("nn_state");
    manual_seed(3);
    Tiny a;
    a.steps.fill_(7);
    nn::save_state_dict(a, dir.file("tiny.safetensors"), {{"note", "test"}});
    manual_seed(4);
    Tiny b;
    nn::load_state_dict(b, dir.file("tiny.safetensors"));
    for (auto& [name, tensor] : a.state_dict())
        require_close(b.state_dict().at(name).to(DType::float64), tensor.to(DType::float64), 0, 0);
    // A renamed checkpoint loads through a key map; a wrong file names itself.
    SafetensorsFile file = load_safetensors(dir.file("tiny.safetensors"));
    std::map<std::string, Tensor> renamed;
    for (auto& [name, tensor] : file.tensors) renamed["model." + name] = tensor;
    save_safetensors(dir.file("renamed.safetensors"), renamed);
    nn::load_state_dict(b, dir.file("renamed.safetensors"), true,
                        [](const std::string& key) { return key.substr(6); });
    require_error([&] { nn::load_state_dict(b, dir.file("renamed.safetensors")); },
                  {"[load_state_dict]", "renamed.safetensors", "missing keys"});
    require_error([&] { nn::load_state_dict(b, dir.file("absent.safetensors")); },
                  {"absent.safetensors"});
}

TEST_CASE("train/eval reach every descendant; to(dtype) keeps identity; zero_grad clears",
          "[nn][module]") {
    Tiny m;
    m.eval();
    std::vector<std::string> names;
    for (auto& [name, module] : m.named_modules()) {
        CHECK_FALSE(module->is_training());
        names.push_back(name);
    }
    // PyTorch's named_modules names: "" for the root, dotted paths without a trailing dot.
    CHECK(names == std::vector<std::string>{"", "fc", "blocks", "blocks.0", "blocks.1"});
    m.train();
    CHECK((*m.blocks)[0].is_training());

    Tensor handle = m.fc->weight;
    sum(m.forward(ones({2, 3}))).backward();
    CHECK(handle.grad().defined());
    m.to(DType::float64);
    CHECK(handle.dtype() == DType::float64);
    CHECK(handle.impl() == m.fc->weight.impl());
    CHECK(handle.grad().dtype() == DType::float64);  // gradients follow
    CHECK(m.steps.dtype() == DType::int64);          // integer buffers keep their type
    CHECK(handle.requires_grad());
    m.zero_grad();
    CHECK_FALSE(handle.grad().defined());
    require_close(m.forward(ones({2, 3}, DType::float64)).to(DType::float32),
                  m.forward(ones({2, 3}, DType::float64)).to(DType::float32));
    require_error([&] { m.to(DType::int32); }, {"[Tiny]", "floating"});
}

TEST_CASE("set_data swaps a leaf's data under every handle", "[nn][module]") {
    Tensor a = ones({2, 2}).requires_grad_();
    Tensor alias = a;
    a.set_data(zeros({3}));
    CHECK(alias.shape() == Shape{3});
    CHECK(alias.requires_grad());
    require_error([&] { a.set_data(zeros({3}, DType::int64)); }, {"[set_data]", "floating"});
    Tensor produced = mul(a, 2.0);
    require_error([&] { produced.set_data(zeros({3})); }, {"[set_data]", "leaf"});
}

TEST_CASE("modules move to the GPU in place", "[cuda][nn][module]") {
    if (!have_gpu()) return;
    Tiny m;
    Tensor handle = m.fc->weight;
    Tensor x = random_input({5, 3}, 2).to(DType::float32);
    Tensor want = m.forward(x);
    m.to(Device::cuda());
    CHECK(handle.is_cuda());
    CHECK(m.steps.is_cuda());
    require_close(m.forward(x.cuda()).cpu(), want, 1e-5, 1e-6);
}

TEST_CASE("module printouts use PyTorch's forms", "[nn][module]") {
    CHECK(nn::Conv2d(1, 16, {3}).str() == "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1))");
    CHECK(nn::Conv2d(3, 8, {3, 1}, {.stride = {2}, .padding = {1, 0}, .groups = 1, .bias = false})
              .str() ==
          "Conv2d(3, 8, kernel_size=(3, 1), stride=(2, 2), padding=(1, 0), "
          "bias=False)");
    CHECK(nn::Conv1d(2, 4, {5}, {.padding_mode = "same", .dilation = {2}}).str() ==
          "Conv1d(2, 4, kernel_size=(5,), stride=(1,), padding=same, dilation=(2,))");
    CHECK(nn::ConvTranspose3d(4, 2, {2}, {.stride = {2}, .output_padding = {1}}).str() ==
          "ConvTranspose3d(4, 2, kernel_size=(2, 2, 2), stride=(2, 2, 2), "
          "output_padding=(1, 1, 1))");
    CHECK(nn::Linear(4, 2, false).str() == "Linear(in_features=4, out_features=2, bias=False)");
    CHECK(nn::GroupNorm(2, 8).str() == "GroupNorm(2, 8, eps=1e-05, affine=True)");
    CHECK(nn::BatchNorm2d(8).str() ==
          "BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
    CHECK(nn::RMSNorm({64}).str() == "RMSNorm((64,), eps=1e-06, elementwise_affine=True)");
    CHECK(nn::Dropout(0.1).str() == "Dropout(p=0.1, inplace=False)");
    CHECK(nn::DropPath(0.1).str() == "DropPath(drop_prob=0.100)");
    CHECK(nn::Embedding(10, 4, 0).str() == "Embedding(10, 4, padding_idx=0)");
    CHECK(nn::py_float(1.0) == "1.0");
    CHECK(nn::py_float(0.5) == "0.5");
}
