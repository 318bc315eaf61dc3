// check-vectors adapter of PVT-GDLA (Zheng et al. 2026, Sec. 3), module string "gdla.PVTSegNet":
// the whole segmentation network built by the registry's pvt_segnet from the reference
// constructor's arguments (its "encoder" dict of PVTv2-b2 overrides sets encoder_depths,
// encoder_embed_dims, ...), run in eval mode, outputs named x4, x3, x2, x1 (or x1 alone).
#include "conformance/registry_vectors.h"

namespace lumen::conformance {

namespace {

// PVTSegNet(in_chs, n_classes, ..., deepsupervision=False, use_rope=False).
const RegistryModel kRegistry{
    "pvt_segnet", {}, {}, {{"deepsupervision", false}, {"use_rope", false}}};

const VectorAdapterRegistration kPVTSegNet("gdla.PVTSegNet", [](VectorCall& call) {
    std::shared_ptr<nn::Module> model = build_registry_model(call, kRegistry);
    model->train(false);  // the vectors are eval-mode: ResBlk's BatchNorm uses the b.* statistics
    std::vector<Tensor> outputs = model->forward_outputs(call.input("x"));
    if (outputs.size() == 1) return TensorMap{{"x1", outputs[0]}};
    return TensorMap{
        {"x4", outputs[0]}, {"x3", outputs[1]}, {"x2", outputs[2]}, {"x1", outputs[3]}};
});

}  // namespace

}  // namespace lumen::conformance
