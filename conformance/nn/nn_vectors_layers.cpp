// check-vectors adapters for the basic layers: Mlp, SwiGLU and RMSNorm (the
// DGSA paper's vectors) and BatchNorm2d (UTNet's vectors, including the running-statistics update).
#include "conformance/module_vectors.h"
#include "lumen/lumen.h"

namespace lumen::conformance {

namespace {

TensorMap output(const Tensor& y) { return {{"y", y}}; }

const VectorAdapterRegistration kMlp("Mlp", [](VectorCall& call) {
    std::string act = call.config.get_string("act", "gelu_exact");
    LUMEN_CHECK(act == "gelu_exact" || act == "gelu", "Mlp",
                "config 'act' must be gelu_exact, got '", act, "'");
    nn::Mlp mlp(call.config.get_int("dim"), call.config.get_int("hidden"), -1, "gelu", 0.0,
                call.config.get_bool("bias", true));
    bind_module(call, mlp);
    return output(mlp.forward(call.input("x")));
});

// `expansion` (k) is informative: `hidden` = floor(k dim / 2) is stored with it.
const VectorAdapterRegistration kSwiGLU("SwiGLU", [](VectorCall& call) {
    int64_t dim = call.config.get_int("dim"), hidden = call.config.get_int("hidden");
    double k = call.config.get_double("expansion", 2.0 * double(hidden) / double(dim));
    LUMEN_CHECK(int64_t(k * double(dim) / 2.0 + 1e-9) == hidden, "SwiGLU", "hidden ", hidden,
                " is not floor(", k, " * ", dim, " / 2)");
    nn::SwiGLU swiglu(dim, hidden, -1, 0.0, 0.0, call.config.get_bool("bias", true));
    bind_module(call, swiglu);
    return output(swiglu.forward(call.input("x")));
});

const VectorAdapterRegistration kRMSNorm("RMSNorm", [](VectorCall& call) {
    nn::RMSNorm norm({call.config.get_int("dim")}, call.config.get_double("eps", 1e-6));
    bind_module(call, norm);
    return output(norm.forward(call.input("x")));
});

const VectorAdapterRegistration kBatchNorm2d("sfree_utnet.BatchNorm2d", [](VectorCall& call) {
    nn::BatchNorm2d bn(call.config.get_int("num_features"), call.config.get_double("eps", 1e-5),
                       call.config.get_double("momentum", 0.1));
    bind_module(call, bn);
    Tensor y = bn.forward(call.input("x"));
    return TensorMap{{"y", y}, {"running_mean", bn.running_mean}, {"running_var", bn.running_var}};
});

}  // namespace

}  // namespace lumen::conformance
