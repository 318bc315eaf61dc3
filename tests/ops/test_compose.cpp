// Ops of different families composed under autograd: a small segmentation-style network with
// a residual (a tensor used twice), broadcasting, non-contiguous views and a loss, checked end to
// end against central differences in float64.
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("a conv/norm/pool/resample/attention-style graph passes gradcheck end to end",
          "[ops][compose][gradcheck]") {
    // Inputs: image x (2, 3, 6, 6) given as a non-contiguous view; conv weights; norm affine.
    Tensor x = noncontiguous(random_input({2, 3, 6, 6}, 1));
    Tensor w1 = random_input({4, 3, 3, 3}, 2, -0.5, 0.5);
    Tensor b1 = random_input({4}, 3);
    Tensor wd = random_input({4, 1, 3, 3}, 4, -0.5, 0.5);
    Tensor gamma = random_input({4}, 5, 0.5, 1.5);
    Tensor beta = random_input({4}, 6);
    Tensor head = random_input({3, 4, 1, 1}, 7, -0.5, 0.5);
    Tensor target = from_vector(std::vector<int64_t>(2 * 6 * 6, 0), {2, 6, 6});
    for (int64_t i = 0; i < target.numel(); ++i) target.data_ptr<int64_t>()[i] = (i * 7) % 3;
    gradcheck(
        [&](const std::vector<Tensor>& in) {
            Tensor h = conv2d(in[0], in[1], in[2], {1}, {1});                  // (2, 4, 6, 6)
            Tensor d = conv2d(h, in[3], Tensor(), {1}, {1}, {1}, 4);           // depthwise
            Tensor r = gelu(add(h, d));                                        // h used twice
            Tensor p = max_pool2d(r, {2});                                     // (2, 4, 3, 3)
            Tensor u = interpolate(p, {6, 6}, {}, "bilinear", false);         // back to 6x6
            // channel layer norm: NCHW -> NHWC (a permuted view), normalize C, back
            Tensor t = layer_norm(u.permute({0, 2, 3, 1}), {4}, in[4], in[5]).permute({0, 3, 1, 2});
            Tensor tokens = t.flatten(2).transpose(1, 2);                      // (2, 36, 4)
            Tensor attn = softmax(matmul(tokens, tokens.transpose(1, 2)), -1); // (2, 36, 36)
            Tensor mixed = matmul(attn, tokens).transpose(1, 2).reshape({2, 4, 6, 6});
            Tensor logits = conv2d(add(mixed, t), in[6]);                      // 1x1 head
            return cross_entropy(logits, target, Tensor(), -100, "mean", 0.1);
        },
        {x, w1, b1, wd, gamma, beta, head});
}

TEST_CASE("3-D and sequence ops compose under autograd", "[ops][compose][gradcheck]") {
    Tensor vol = random_input({1, 2, 4, 4, 4}, 11);
    Tensor w = random_input({2, 2, 2, 2, 2}, 12, -0.5, 0.5);
    Tensor up = random_input({2, 2, 2, 2, 2}, 13, -0.5, 0.5);
    gradcheck(
        [&](const std::vector<Tensor>& in) {
            Tensor down = conv3d(in[0], in[1], Tensor(), {2});                 // (1, 2, 2, 2, 2)
            Tensor normed = instance_norm(down);
            Tensor back = conv_transpose3d(silu(normed), in[2], Tensor(), {2}); // (1, 2, 4, 4, 4)
            Tensor shifted = roll(back, {1, -1}, {2, 4});
            Tensor padded = pad(add(shifted, in[0]), {1, 1, 1, 1, 1, 1}, "replicate");
            return adaptive_avg_pool3d(padded, {3, 3, 3});
        },
        {vol, w, up});
    // A Mamba-like path: depthwise causal conv1d, SiLU, selective scan, gated output.
    Tensor u = random_input({2, 3, 7}, 21);
    Tensor k = random_input({3, 1, 4}, 22, -0.5, 0.5);
    Tensor A = random_input({3, 2}, 23, -1.0, -0.1);
    Tensor Bm = random_input({2, 2, 7}, 24);
    Tensor Cm = random_input({2, 2, 7}, 25);
    gradcheck(
        [&](const std::vector<Tensor>& in) {
            Tensor c = conv1d(in[0], in[1], Tensor(), {1}, {3}, {1}, 3).narrow(2, 0, 7);
            Tensor a = silu(c);
            Tensor y = selective_scan(a, a, in[2], in[3], in[4], Tensor(), in[0], Tensor(), true);
            return seq_norm(y.transpose(1, 2));
        },
        {u, k, A, Bm, Cm});
}
