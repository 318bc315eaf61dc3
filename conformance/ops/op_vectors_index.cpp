// Vector adapters for the index and layout ops ("op.<torch function>"): kwargs by PyTorch
// name with PyTorch's defaults; options lumen does not implement must keep their defaults.
#include <optional>

#include "conformance/op_vectors.h"
#include "core/error.h"
#include "ops/index.h"
#include "ops/layout.h"

namespace lumen::conformance {

namespace {

TensorMap output(const Tensor& y) { return {{"y", y}}; }

// An optional int kwarg whose PyTorch default is None.
std::optional<int64_t> optional_int(VectorCall& call, const std::string& key) {
    if (call.config.get(key).is_null()) return std::nullopt;
    return call.config.get_int(key);
}

// F.embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
// scale_grad_by_freq=False, sparse=False)
TensorMap embedding_adapter(VectorCall& call) {
    LUMEN_CHECK(call.config.get("max_norm").is_null(), call.module,
                "max_norm (renormalizing rows in place) is not supported");
    call.config.get_double("norm_type", 2.0);
    LUMEN_CHECK(!call.config.get_bool("scale_grad_by_freq", false), call.module,
                "scale_grad_by_freq is not supported");
    call.config.get_bool("sparse", false);  // only the gradient's storage format
    std::optional<int64_t> padding_idx = optional_int(call, "padding_idx");
    return output(embedding(call.input("weight"), call.input("input"), padding_idx));
}

// torch.repeat_interleave(input, repeats, dim=None, *, output_size=None): repeats an int or a
// tensor input; output_size, when given, must match.
TensorMap repeat_interleave_adapter(VectorCall& call) {
    std::optional<int64_t> dim = optional_int(call, "dim");
    std::optional<int64_t> output_size = optional_int(call, "output_size");
    Tensor repeats = call.optional_input("repeats");
    Tensor y = repeats.defined()
                   ? repeat_interleave(call.input("input"), repeats, dim)
                   : repeat_interleave(call.input("input"), call.config.get_int("repeats"), dim);
    LUMEN_CHECK(!output_size || y.size(dim ? *dim : 0) == *output_size, call.module, "output_size ",
                *output_size, " does not match the result shape ", y.shape());
    return output(y);
}

const VectorAdapterRegistration kEmbedding("op.embedding", embedding_adapter);
// torch.gather(input, dim, index, sparse_grad=False)
const VectorAdapterRegistration kGather("op.gather", [](VectorCall& call) {
    call.config.get_bool("sparse_grad", false);
    return output(gather(call.input("input"), call.config.get_int("dim"), call.input("index")));
});
const VectorAdapterRegistration kIndexSelect("op.index_select", [](VectorCall& call) {
    return output(
        index_select(call.input("input"), call.config.get_int("dim"), call.input("index")));
});
// torch.scatter_add(input, dim, index, src)
const VectorAdapterRegistration kScatterAdd("op.scatter_add", [](VectorCall& call) {
    return output(scatter_add(call.input("input"), call.config.get_int("dim"), call.input("index"),
                              call.input("src")));
});
// torch.index_add(input, dim, index, source, *, alpha=1)
const VectorAdapterRegistration kIndexAdd("op.index_add", [](VectorCall& call) {
    return output(index_add(call.input("input"), call.config.get_int("dim"), call.input("index"),
                            call.input("source"), call.config.get_double("alpha", 1.0)));
});
const VectorAdapterRegistration kTril("op.tril", [](VectorCall& call) {
    return output(tril(call.input("input"), call.config.get_int("diagonal", 0)));
});
const VectorAdapterRegistration kTriu("op.triu", [](VectorCall& call) {
    return output(triu(call.input("input"), call.config.get_int("diagonal", 0)));
});
// torch.roll(input, shifts, dims=None)
const VectorAdapterRegistration kRoll("op.roll", [](VectorCall& call) {
    std::vector<int64_t> shifts = call.config.get_ints("shifts", {});
    return output(roll(call.input("input"), shifts, call.config.get_ints("dims", {})));
});
const VectorAdapterRegistration kFlip("op.flip", [](VectorCall& call) {
    return output(flip(call.input("input"), call.config.get_ints("dims", {})));
});
// torch.cumsum(input, dim, dtype=None)
const VectorAdapterRegistration kCumsum("op.cumsum", [](VectorCall& call) {
    LUMEN_CHECK(call.config.get("dtype").is_null(), call.module, "dtype is not supported");
    return output(cumsum(call.input("input"), call.config.get_int("dim")));
});
const VectorAdapterRegistration kRepeatInterleave("op.repeat_interleave",
                                                  repeat_interleave_adapter);
// F.one_hot(tensor, num_classes=-1)
const VectorAdapterRegistration kOneHot("op.one_hot", [](VectorCall& call) {
    Tensor indices = call.optional_input("tensor");
    if (!indices.defined()) indices = call.input("input");
    return output(one_hot(indices, call.config.get_int("num_classes", -1)));
});

}  // namespace

}  // namespace lumen::conformance
