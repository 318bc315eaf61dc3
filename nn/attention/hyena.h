// The Hyena operator (Poli et al., "Hyena Hierarchy", ICML 2023) as Hooper & Xue run it (Sec. 3.1;
// zoology's hyena.py with its multi-head fix): an implicit long filter (an MLP of sines over a
// positional table, exponentially decayed), a causal FFT convolution (ops/fft.h fftconv) and two
// multiplicative gates. Registered as "hyena": tokens (B, N, C) in and out, linear in N (no N x N
// tensor).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/conv.h"
#include "nn/linear.h"

namespace lumen::nn::attention {

// Hyena's positional tables for l_max positions, float32 (computed in float64):
//   t (1, l_max, 1): t_i = i / (l_max - 1);
//   z (1, l_max, emb_dim) = [t, cos(f_b w), -sin(f_b w)] with w_i = 2 pi i / l_max and the
//   bands f = linspace(1e-4, bands - 1, bands), bands = (emb_dim - 1) / 2 (one band 1e-4 for the
//   paper's emb_dim 3). Throws [HyenaFilter] for l_max < 2 or an even emb_dim < 3.
std::pair<Tensor, Tensor> hyena_positional_table(int64_t l_max, int64_t emb_dim = 3);

// Decay rates (1, 1, d) = linspace(ln(0.01) / 1.5, ln(0.01) / 0.3, d), float32.
Tensor hyena_decay_rates(int64_t d);

// y = sin(freq * x), freq (1, dim) trainable (init w). One Sin is applied after every hidden
// linear of the implicit filter (a single shared `freq`, as zoology's code has it).
class Sin : public Module {
  public:
    explicit Sin(int64_t dim, double w = 1.0);
    Tensor forward(const Tensor& x) override;
    Tensor freq;
};

// `pos_emb`: z (1, l_max, emb_dim) a trainable parameter (as in zoology's code), t (1, l_max, 1)
// a buffer.
class HyenaPositionalEmbedding : public Module {
  public:
    HyenaPositionalEmbedding(int64_t emb_dim, int64_t l_max);
    Tensor z, t;
};

// `modulation`: buffer deltas (1, 1, d); h * exp(-t |deltas|) (shift 0).
class ExponentialModulation : public Module {
  public:
    explicit ExponentialModulation(int64_t d);
    // Shapes: t (1, L, 1), h (1, L, d) -> (1, L, d).
    Tensor forward(const Tensor& t, const Tensor& h);
    Tensor deltas;
};

// The implicit filter MLP: Linear(emb_dim, order) "0", Sin "1", then num_inner_mlps x
// [Linear(order, order) at 2, 4, ..., the same Sin], Linear(order, d, no bias) last (index
// 2 num_inner_mlps + 2). The shared Sin is registered once, at "1": PyTorch's state_dict repeats
// it as "3.freq", "5.freq" (load such a checkpoint with strict = false, or drop those keys).
class HyenaImplicitFilter : public Module {
  public:
    HyenaImplicitFilter(int64_t emb_dim, int64_t order, int64_t d, int64_t num_inner_mlps,
                        double w);
    // Shapes: z (1, L, emb_dim) -> (1, L, d).
    Tensor forward(const Tensor& z) override;
    std::vector<std::shared_ptr<Linear>> linears;  // indices 0, 2, 4, ..., last
    std::shared_ptr<Sin> act;
};

// k(t) = implicit_filter(z[:L]) * exp(-t |deltas|): forward(L) -> k (d, L), and `bias` (d)
// (init N(0, 1)) the skip term the operator hands to the long convolution. Gradients reach
// the MLP, freq and z (not the buffers t, deltas). Throws [HyenaFilter] for L outside
// [1, l_max].
class HyenaFilter : public Module {
  public:
    HyenaFilter(int64_t d, int64_t order = 64, int64_t l_max = 1024, int64_t emb_dim = 3,
                int64_t num_inner_mlps = 2, double w = 1.0);
    Tensor forward(int64_t length);
    std::string extra_repr() const override;

    Tensor bias;
    std::shared_ptr<HyenaPositionalEmbedding> pos_emb;
    std::shared_ptr<HyenaImplicitFilter> implicit_filter;
    std::shared_ptr<ExponentialModulation> modulation;
    int64_t d, order, l_max;
};

// Order-2 multi-head Hyena on tokens u (B, L, D), L <= l_max, H heads of width hd = D / H:
//   p = in_proj(u) (B, 3D, L); s = causal depthwise conv (kernel K, bias) of p;
//   per head h, channels [h 3hd, (h+1) 3hd) of s are [x1 | x2 | v];
//   y = x2 * (k (*) (v * x1) + bias * (v * x1)), k = filter_fn(L) (hd, L) shared by the heads,
//   (*) the causal convolution over t; channel h hd + c of y -> out_proj -> (B, L, D).
// Parameters: in_proj (3D, D) + bias, out_proj (D, D) + bias, short_filter.weight (3D, 1, K)
// + bias, filter_fn.* (HyenaFilter of width hd); buffers filter_fn.pos_emb.t,
// filter_fn.modulation.deltas. Time O(B D L log L + L order^2), memory O(B D L).
// The context's grid and prefix tokens are ignored (the sequence is causal anyway); a key
// padding mask is rejected. `proj_drop` > 0 adds dropout on the output (child proj_drop, as
// the attention variants' output dropout; the reference has none, so it is absent at 0).
// Throws [HyenaOperator] for D not divisible by H, a wrong input shape or L > l_max.
class HyenaOperator : public Attention {
  public:
    HyenaOperator(int64_t d_model, int64_t l_max = 66000, int64_t filter_order = 64,
                  int64_t num_heads = 1, int64_t short_filter_order = 5, double proj_drop = 0.0);
    using Attention::forward;
    Tensor forward(const Tensor& u, const AttentionContext& context) override;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> in_proj, out_proj;
    std::shared_ptr<Conv1d> short_filter;
    std::shared_ptr<Dropout> proj_drop;  // null for proj_drop 0
    std::shared_ptr<HyenaFilter> filter_fn;
    int64_t d_model, num_heads, head_dim, l_max, short_filter_order;
};

// Registry factory for "hyena": dim, num_heads (head_dim must be -1 or dim / num_heads);
// options l_max (66000), filter_order (64), short_filter_order (5). qkv_bias is ignored (the
// projections always have biases); proj_drop is the output dropout. Throws [hyena] for an
// unknown option, a head_dim other than dim / num_heads or a non-zero attn_drop (there is no
// attention map to drop).
std::shared_ptr<Attention> make_hyena_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
