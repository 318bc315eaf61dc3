// Swin's window geometry and window attention (MONAI's copy in the context-length study):
// get_window_size, the shift mask against a literal transcription of the Python slice loop, the
// relative position index, window_mix round trips, window attention against naive loops (mask,
// clipped window quirk), the "swin_window" registry variant, float64 gradchecks, errors, and the
// oracle vectors.
#include "nn/attention/window.h"
#include "nn/attention/window_attention.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::nn::attention;

namespace {

// Python's slice(start, stop) on a dim of size n, as [begin, end).
std::pair<int64_t, int64_t> py_slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                                     int64_t n) {
    auto fix = [n](int64_t v) { return std::clamp(v < 0 ? v + n : v, int64_t(0), n); };
    return {start ? fix(*start) : 0, stop ? fix(*stop) : n};
}

// compute_mask exactly as the reference writes it: nested loops over the three slices per
// dim, each combination labelled with the next integer, later writes winning.
Tensor naive_mask(const std::vector<int64_t>& dims, const std::vector<int64_t>& w,
                  const std::vector<int64_t>& s) {
    size_t k = dims.size();
    Shape grid_shape = {1};
    grid_shape.insert(grid_shape.end(), dims.begin(), dims.end());
    grid_shape.push_back(1);
    int64_t total = 1;
    for (int64_t d : dims) total *= d;
    std::vector<double> labels(size_t(total), 0.0);
    int64_t combos = 1, cnt = 0;
    for (size_t d = 0; d < k; ++d) combos *= 3;
    for (int64_t c = 0; c < combos; ++c, ++cnt) {
        std::vector<std::pair<int64_t, int64_t>> ranges(k);
        for (size_t d = 0, rest = size_t(c); d < k; ++d) {
            int64_t which = int64_t(rest / size_t(std::pow(3, k - 1 - d))) % 3;
            if (which == 0) ranges[d] = py_slice(std::nullopt, -w[d], dims[d]);
            if (which == 1) ranges[d] = py_slice(-w[d], -s[d], dims[d]);
            if (which == 2) ranges[d] = py_slice(-s[d], std::nullopt, dims[d]);
        }
        for (int64_t p = 0; p < total; ++p) {
            Shape at = unravel(p, Shape(dims.begin(), dims.end()));
            bool inside = true;
            for (size_t d = 0; d < k; ++d)
                inside = inside && at[d] >= ranges[d].first && at[d] < ranges[d].second;
            if (inside) labels[size_t(p)] = double(cnt);
        }
    }
    Tensor m = window_partition(from_vector(labels, grid_shape), w).flatten(1, -1);  // (nW, n)
    Tensor diff = sub(m.unsqueeze(1), m.unsqueeze(2));
    return where(ne(diff, 0.0), full_like(diff, -100.0), zeros_like(diff));
}

// Per window, head and query: softmax over keys of q.k * scale + bias (+ mask), then A v and
// the projection, all with scalar loops in float64.
Tensor naive_window_attention(WindowAttention& a, const Tensor& x, const Tensor& mask) {
    int64_t count = x.size(0), n = x.size(1), c = a.dim, hd = a.head_dim;
    Tensor qkv = linear(x, a.qkv->weight, a.qkv->bias);
    std::vector<double> merged(size_t(count * n * c));
    for (int64_t b = 0; b < count; ++b)
        for (int64_t h = 0; h < a.num_heads; ++h)
            for (int64_t i = 0; i < n; ++i) {
                std::vector<double> logits(static_cast<size_t>(n));
                double top = -1e300, total = 0;
                for (int64_t j = 0; j < n; ++j) {
                    double dot = 0;
                    for (int64_t e = 0; e < hd; ++e)
                        dot += qkv.at<double>({b, i, h * hd + e}) * a.scale *
                               qkv.at<double>({b, j, c + h * hd + e});
                    int64_t idx = a.relative_position_index.at<int64_t>({i, j});
                    dot += a.relative_position_bias_table.at<double>({idx, h});
                    if (mask.defined()) dot += mask.at<double>({b % mask.size(0), i, j});
                    logits[size_t(j)] = dot;
                    top = std::max(top, dot);
                }
                for (double& l : logits) total += (l = std::exp(l - top));
                for (int64_t e = 0; e < hd; ++e) {
                    double sum = 0;
                    for (int64_t j = 0; j < n; ++j)
                        sum +=
                            logits[size_t(j)] / total * qkv.at<double>({b, j, 2 * c + h * hd + e});
                    merged[size_t((b * n + i) * c + h * hd + e)] = sum;
                }
            }
    return linear(from_vector(merged, {count, n, c}), a.proj->weight, a.proj->bias);
}

}  // namespace

TEST_CASE("get_window_size clips windows to small maps and drops their shift", "[nn][swin]") {
    WindowShift ws = get_window_size({3, 9, 4}, {4, 4, 4}, {2, 2, 2});
    CHECK(ws.window == std::vector<int64_t>{3, 4, 4});
    CHECK(ws.shift == std::vector<int64_t>{0, 2, 0});  // 4 <= 4 clips too (note <=)
    CHECK(padded_sizes({3, 9, 4}, ws.window) == std::vector<int64_t>{3, 12, 4});
    require_error([] { get_window_size({3, 4}, {4}, {0, 0}); }, {"[get_window_size]"});
}

TEST_CASE("compute_mask equals the reference's slice loop", "[nn][swin]") {
    struct Case {
        std::vector<int64_t> dims, w, s;
    };
    for (const Case& c : std::vector<Case>{{{12, 16}, {4, 4}, {2, 2}},
                                           {{6, 10}, {3, 5}, {1, 2}},
                                           {{8, 8}, {8, 4}, {0, 2}},
                                           {{4, 8, 6}, {2, 4, 3}, {1, 2, 1}},
                                           {{3, 6, 8}, {3, 3, 4}, {0, 1, 2}}}) {
        INFO("dims " << text(c.dims) << " window " << text(c.w) << " shift " << text(c.s));
        Tensor got = compute_mask(c.dims, c.w, c.s, DType::float64);
        require_close(got, naive_mask(c.dims, c.w, c.s), 0, 0);
    }
    require_error([] { compute_mask({10, 8}, {4, 4}, {2, 2}); }, {"[compute_mask]", "multiples"});
    require_error([] { compute_mask({8, 8}, {4, 4}, {4, 0}); }, {"[compute_mask]", "shift"});
}

TEST_CASE("relative_position_index enumerates offsets row-major", "[nn][swin]") {
    Tensor idx = relative_position_index({2, 3});
    CHECK(idx.shape() == Shape{6, 6});
    CHECK(idx.dtype() == DType::int64);
    // Offsets (dy, dx) -> (dy + 1) * 5 + dx + 2: the diagonal is (1 * 5 + 2) = 7.
    CHECK(idx.at<int64_t>({0, 0}) == 7);
    CHECK(idx.at<int64_t>({0, 5}) == (0 - 1 + 1) * 5 + (0 - 2 + 2));  // i=(0,0), j=(1,2)
    CHECK(idx.at<int64_t>({5, 0}) == (1 + 1) * 5 + (2 + 2));
    Tensor three = relative_position_index({2, 2, 2});
    CHECK(three.at<int64_t>({7, 0}) == 26);  // the largest offset of a 3 x 3 x 3 table
    require_error([] { relative_position_index({}); }, {"[relative_position_index]"});
}

TEST_CASE("window_mix with the identity mixer gives back its input", "[nn][swin]") {
    Tensor x = random_input({2, 5, 7, 3}, 1);
    Tensor same = window_mix(x, {4, 4}, {2, 2}, [](const Tensor& w) {
        CHECK(w.shape() == Shape{2 * 2 * 2, 16, 3});
        return w;
    });
    require_close(same, x, 0, 0);
    Tensor x3 = random_input({1, 3, 5, 6, 2}, 2);
    require_close(window_mix(x3, {3, 4, 4}, {0, 2, 2}, [](const Tensor& w) { return w; }), x3, 0,
                  0);
    require_error([&] { window_mix(x, {4}, {0}, [](const Tensor& w) { return w; }); },
                  {"[swin]", "window"});
}

TEST_CASE("WindowAttention matches per-window loops, with and without the mask", "[nn][swin]") {
    WindowAttention a(6, 2, {4, 4});
    a.to(DType::float64);
    CHECK(a.relative_position_bias_table.shape() == Shape{49, 2});
    CHECK(a.state_dict().size() == 6);  // table, index, qkv.{weight,bias}, proj.{weight,bias}
    Tensor x = random_input({8, 16, 6}, 3);
    require_close(a.forward_windows(x), naive_window_attention(a, x, Tensor()), 1e-10, 1e-12);
    Tensor mask = compute_mask({8, 8}, {4, 4}, {2, 2}, DType::float64);
    require_close(a.forward_windows(x, mask), naive_window_attention(a, x, mask), 1e-10, 1e-12);
    // A clipped window of 12 tokens reads the top-left 12 x 12 block of the index [quirk].
    Tensor clipped = random_input({3, 12, 6}, 4);
    require_close(a.forward_windows(clipped), naive_window_attention(a, clipped, Tensor()), 1e-10,
                  1e-12);
    require_error(
        [&] {
            a.forward_windows(random_input({2, 17, 6}, 5));
        },
        {"[WindowAttention]", "17 tokens"});
    require_error(
        [&] {
            a.forward_windows(x, compute_mask({12, 8}, {4, 4}, {2, 2}));
        },
        {"[WindowAttention]", "nW"});
    require_error([] { WindowAttention bad(6, 4, {4, 4}); }, {"[WindowAttention]", "num_heads"});
}

TEST_CASE("WindowAttention gradients match finite differences", "[nn][swin]") {
    WindowAttention a(4, 2, {2, 3});
    Tensor mask = compute_mask({4, 6}, {2, 3}, {1, 1}, DType::float64);
    module_gradcheck(a,
                     [&](const std::vector<Tensor>& in) { return a.forward_windows(in[0], mask); },
                     {random_input({8, 6, 4}, 6)});
}

TEST_CASE("swin_window: the registry variant windows a token grid", "[nn][swin]") {
    nn::attention::AttentionConfig config;
    config.type = "swin_window";
    config.dim = 8;
    config.num_heads = 2;
    config.options = {{"window", 4}, {"shift", 2}};
    auto attention = nn::attention::make_attention(config);
    auto& window = dynamic_cast<WindowAttention&>(*attention);
    attention->to(DType::float64);
    Tensor x = random_input({2, 6 * 7, 8}, 7);
    nn::attention::AttentionContext context{.grid = {6, 7}};
    Tensor y = attention->forward(x, context);
    // The same step by hand: pad to 8 x 8, shift by 2, mask of the padded grid.
    Tensor mask = compute_mask({8, 8}, {4, 4}, {2, 2}, DType::float64);
    Tensor want = window_mix(x.view({2, 6, 7, 8}), {4, 4}, {2, 2},
                             [&](const Tensor& w) { return window.forward_windows(w, mask); });
    require_close(y, want.reshape({2, 42, 8}), 1e-12, 1e-12);
    module_gradcheck(
        *attention,
        [&](const std::vector<Tensor>& in) { return attention->forward(in[0], context); },
        {random_input({1, 42, 8}, 8)}, 1e-5, 1e-6, 3);
    require_error([&] { attention->forward(x); }, {"[WindowAttention]", "grid"});
    config.options = {{"window", 4}, {"shift", 4}};
    require_error([&] { nn::attention::make_attention(config); }, {"[swin_window]", "shift"});
}

TEST_CASE("Swin window vectors pass", "[nn][swin][vectors]") {
    require_oracle_vectors(
        {"swin_compute_mask_2d", "swin_compute_mask_3d", "swin_compute_mask_3d_noshiftD",
         "swin_rel_pos_index_2d", "swin_rel_pos_index_3d", "swin_window_attn_2d_nomask",
         "swin_window_attn_2d_mask", "swin_window_attn_3d_mask"},
        "context");
}
