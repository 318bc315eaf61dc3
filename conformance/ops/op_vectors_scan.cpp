// Vector adapters for the scan and FFT ops: the PyTorch reference functions
// (ref_context.py), `context.selective_scan` (mamba selective_scan_ref) and
// `context.causal_fft_conv` (Hyena's long convolution), with their Python defaults.
#include "conformance/op_vectors.h"
#include "ops/fft.h"
#include "ops/scan.h"

namespace lumen::conformance {

namespace {

// selective_scan(u, delta, A, Bm, Cm, D=None, delta_bias=None, delta_softplus=True)
const VectorAdapterRegistration kSelectiveScan("context.selective_scan", [](VectorCall& call) {
    bool softplus = call.config.get_bool("delta_softplus", true);
    Tensor y = selective_scan(call.input("u"), call.input("delta"), call.input("A"),
                              call.input("Bm"), call.input("Cm"), call.optional_input("D"),
                              Tensor(), call.optional_input("delta_bias"), softplus);
    return TensorMap{{"y", y}};
});

// causal_fft_conv(u (..., C, L), k (C, L), bias (C))
const VectorAdapterRegistration kCausalFftConv("context.causal_fft_conv", [](VectorCall& call) {
    return TensorMap{{"y", fftconv(call.input("u"), call.input("k"), call.input("bias"))}};
});

}  // namespace

}  // namespace lumen::conformance
