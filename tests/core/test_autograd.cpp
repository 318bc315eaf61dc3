// The autograd engine: accumulation, reuse of tensors, shared subexpressions, broadcasting,
// retain_graph, no-grad, detach, grad(), and the version counter on saved tensors.
#include <algorithm>

#include "core/profiler.h"
#include "nn/checkpoint.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("a tensor used twice gets the sum of both gradients", "[core][autograd]") {
    Tensor x = tensor({1, 2, 3}).requires_grad_();
    Tensor y = sum(add(mul(x, x), x));  // d/dx = 2x + 1
    y.backward();
    require_close(x.grad(), {3, 5, 7});
}

TEST_CASE("shared subexpressions run their backward once with the summed gradient",
          "[core][autograd]") {
    Tensor x = tensor({0.5, -1.0}, {2}, DType::float64).requires_grad_();
    Tensor shared = exp(x);                       // used by both branches below
    Tensor loss = sum(add(mul(shared, shared), sin(shared)));
    loss.backward();
    // d/dx = (2 e^2x + cos(e^x) e^x)
    std::vector<double> want;
    for (double v : {0.5, -1.0}) want.push_back(2 * std::exp(2 * v) + std::cos(std::exp(v)) * std::exp(v));
    require_close(x.grad(), want, 1e-12);
    gradcheck([](const std::vector<Tensor>& in) {
        Tensor s = tanh(in[0]);
        return mul(add(s, in[1]), sub(s, mul(in[1], in[1])));
    }, {random_input({3, 4}, 5), random_input({4}, 6)});
}

TEST_CASE("gradients accumulate across backward calls until reset", "[core][autograd]") {
    Tensor w = tensor({2.0}).requires_grad_();
    sum(mul(w, 3.0)).backward();
    sum(mul(w, 3.0)).backward();
    require_close(w.grad(), {6});
    w.set_grad(Tensor());
    CHECK_FALSE(w.grad().defined());
}

TEST_CASE("broadcast inputs receive gradients of their own shape", "[core][autograd]") {
    Tensor a = ones({2, 3}).requires_grad_();
    Tensor bias = zeros({3}).requires_grad_();
    Tensor scale = ones({2, 1}).requires_grad_();
    sum(mul(add(a, bias), scale)).backward();
    CHECK(bias.grad().shape() == Shape{3});
    require_close(bias.grad(), {2, 2, 2});
    require_close(scale.grad(), {3, 3});
}

TEST_CASE("views and copies pass gradients through", "[core][autograd][views]") {
    gradcheck([](const std::vector<Tensor>& in) {
        Tensor x = in[0];
        Tensor a = x.permute({2, 0, 1}).reshape({4, 6});
        Tensor b = x.slice(1, 0, 3, 2).flatten().unsqueeze(0).expand({3, 16});
        Tensor c = x.narrow(2, 1, 2).select(0, 1).t().contiguous();
        return add(add(sum(mul(a, a)), sum(b)), sum(mul(c, c)));
    }, {random_input({2, 3, 4}, 7)});
    gradcheck([](const std::vector<Tensor>& in) {
        return cat({in[0], mul(in[1], 2.0), in[0]}, 1);
    }, {random_input({2, 3}, 8), random_input({2, 1}, 9)});
    gradcheck([](const std::vector<Tensor>& in) {
        auto parts = chunk(in[0], 3, -1);
        return add(mul(parts[0], parts[1]), sum(stack({parts[2], parts[2]}, 0), {0}));
    }, {random_input({2, 6}, 10)});
}

namespace {

// Calls of `op` (an op, not a kernel) that `body` makes.
int64_t op_calls(const std::function<void()>& body, const std::string& op) {
    Profiler profile;
    body();
    profile.stop();
    for (const Profiler::Row& row : profile.summary())
        if (row.kind == profiler::Kind::op && row.name == op) return row.calls;
    return 0;
}

}  // namespace

TEST_CASE("the chunks of one tensor add their gradients into one buffer",
          "[core][autograd][views]") {
    // Three chunks of a fused projection, each weighted: d loss / d x = 2 [a | b | c].
    Tensor x = random_input({4, 6}, 21).requires_grad_();
    Tensor weights = random_input({4, 6}, 22);
    auto loss_of = [&](const Tensor& hidden) {
        std::vector<Tensor> parts = chunk(hidden, 3, -1);
        std::vector<Tensor> w = chunk(weights, 3, -1);
        return add(add(sum(mul(parts[0], w[0])), sum(mul(parts[1], w[1]))),
                   sum(mul(parts[2], w[2])));
    };
    std::vector<double> want;
    for (double v : weights.to_vector<double>()) want.push_back(2 * v);
    // The first chunk's backward makes the buffer; the other two add into it in place.
    int64_t in_place = op_calls([&] { loss_of(mul(x, 2.0)).backward(); }, "add_into");
    CHECK(in_place == 2);
    require_close(x.grad(), want, 1e-12);
    // A second backward adds into the .grad() it made (held by x alone) in place too.
    CHECK(op_calls([&] { loss_of(mul(x, 2.0)).backward(); }, "add_into") == 3);
    for (double& v : want) v *= 2;
    require_close(x.grad(), want, 1e-12);

    // When grad() captures the chunked tensor's gradient, that buffer is not written in place:
    // the captured gradient is the whole one, not the first chunk's.
    x.set_grad(Tensor());
    Tensor hidden = mul(x, 2.0);
    std::vector<Tensor> g = lumen::grad({loss_of(hidden)}, {hidden, x});
    require_close(g[0], weights.to_vector<double>(), 1e-12);
    for (double& v : want) v /= 2;
    require_close(g[1], want, 1e-12);
    // A user's handle on .grad() keeps its values: the next backward makes a new buffer.
    loss_of(mul(x, 2.0)).backward();
    Tensor held = x.grad();
    loss_of(mul(x, 2.0)).backward();
    require_close(held, want, 1e-12);
    for (double& v : want) v *= 2;
    require_close(x.grad(), want, 1e-12);

    // add's backward hands one gradient tensor to both inputs; the slice must not add into it
    // in place, or k's gradient would take the slice's part too. Both orders of the two terms.
    for (bool slice_first : {false, true}) {
        Tensor y = random_input({2, 4}, 24).requires_grad_();
        Tensor w = random_input({2, 4}, 25), v = random_input({2, 2}, 26);
        Tensor h = mul(y, 2.0), k = mul(y, 3.0);
        Tensor whole = sum(mul(add(h, k), w)), part = sum(mul(h.narrow(1, 1, 2), v));
        (slice_first ? add(part, whole) : add(whole, part)).backward();
        std::vector<double> wv = w.to_vector<double>(), vv = v.to_vector<double>(), expect;
        for (int64_t i = 0; i < 8; ++i) {
            int64_t row = i / 4, col = i % 4;
            double from_slice = col >= 1 && col < 3 ? vv[row * 2 + col - 1] : 0.0;
            expect.push_back(5 * wv[i] + 2 * from_slice);
        }
        require_close(y.grad(), expect, 1e-12);
    }

    // Chunks of a tensor also used whole, and slices that overlap, against finite differences.
    gradcheck(
        [](const std::vector<Tensor>& in) {
            Tensor h = tanh(in[0]);
            std::vector<Tensor> parts = chunk(h, 3, -1);
            Tensor overlap = h.narrow(1, 1, 3);
            return add(add(sum(mul(parts[2], parts[0])), sum(mul(h, h))),
                       add(sum(mul(overlap, parts[1].narrow(1, 0, 1))), sum(parts[1])));
        },
        {random_input({3, 6}, 23)});
}

TEST_CASE("the graph is freed after backward unless retained", "[core][autograd]") {
    Tensor x = tensor({1, 2}).requires_grad_();
    Tensor y = sum(exp(x));
    y.backward(Tensor(), /*retain_graph=*/true);
    y.backward();
    require_close(x.grad(), {2 * std::exp(1.0), 2 * std::exp(2.0)}, 1e-6);
    require_error([&] { y.backward(); }, {"[backward]", "retain_graph"});
}

TEST_CASE("no-grad mode and detach record nothing", "[core][autograd]") {
    Tensor x = tensor({1, 2}).requires_grad_();
    {
        NoGradGuard guard;
        Tensor y = mul(x, 2.0);
        CHECK_FALSE(y.requires_grad());
        CHECK(y.grad_fn() == nullptr);
    }
    CHECK(grad_enabled());
    Tensor d = x.detach();
    CHECK_FALSE(d.requires_grad());
    CHECK(d.storage() == x.storage());
    Tensor z = add(mul(x, d), 0.0);
    sum(z).backward();
    require_close(x.grad(), {1, 2});  // d is a constant
}

TEST_CASE("an in-place change to a saved tensor is an error, not a wrong gradient",
          "[core][autograd]") {
    Tensor x = tensor({1, 2}).requires_grad_();
    Tensor y = exp(x);   // exp saves its output
    Tensor z = sum(y);
    {
        NoGradGuard guard;
        y.detach().fill_(0);  // bumps the shared storage's version
    }
    require_error([&] { z.backward(); }, {"[exp backward]", "modified by an in-place operation"});
    // add saves nothing, so changing its input afterwards is fine.
    Tensor a = tensor({1, 2}).requires_grad_();
    Tensor b = zeros({2});
    Tensor c = sum(add(a, b));
    b.fill_(3);
    c.backward();
    require_close(a.grad(), {1, 1});
}

TEST_CASE("in-place ops on tensors that require grad are refused", "[core][autograd]") {
    Tensor x = tensor({1, 2}).requires_grad_();
    require_error([&] { x.fill_(0); }, {"[fill_]", "requires grad"});
    require_error([&] { x.copy_(zeros({2})); }, {"[copy_]", "requires grad"});
    NoGradGuard guard;
    x.fill_(0);  // allowed under no-grad (optimizer updates)
    require_close(x, {0, 0});
}

TEST_CASE("backward needs a scalar or an explicit gradient", "[core][autograd]") {
    Tensor x = tensor({1, 2}).requires_grad_();
    Tensor y = mul(x, 3.0);
    require_error([&] { y.backward(); }, {"[backward]", "[2]"});
    y.backward(tensor({1, 10}));
    require_close(x.grad(), {3, 30});
    require_error([] { tensor({1}).backward(); }, {"[backward]", "does not require grad"});
    require_error([] { from_vector(std::vector<int64_t>{1}).requires_grad_(); },
                  {"[requires_grad_]", "int64"});
}

TEST_CASE("grad() returns gradients without touching .grad()", "[core][autograd]") {
    Tensor x = tensor({1, 2, 3}, {3}, DType::float64).requires_grad_();
    Tensor hidden = mul(x, x);
    Tensor loss = sum(mul(hidden, 2.0));
    std::vector<Tensor> g = lumen::grad({loss}, {x, hidden});
    require_close(g[0], {4, 8, 12});
    require_close(g[1], {2, 2, 2});
    CHECK_FALSE(x.grad().defined());
}

TEST_CASE("a branch that gives no gradient does not block the rest of the graph",
          "[core][autograd]") {
    Tensor x = tensor({1, 2}).requires_grad_();
    Tensor h = mul(x, 2.0);
    Tensor dead = gt(h, 0.0);                  // no gradient flows through a comparison
    Tensor out = sum(add(h, where(dead, h, 0.0)));
    out.backward();
    require_close(x.grad(), {4, 4});
}

TEST_CASE("long chains back-propagate without recursion", "[core][autograd]") {
    Tensor x = tensor({1}).requires_grad_();
    Tensor y = x;
    for (int i = 0; i < 5000; ++i) y = add(y, 1.0);
    y.backward();
    require_close(x.grad(), {1});
}

TEST_CASE("the leaf-ready hook fires once per leaf, when its gradient is final",
          "[core][autograd]") {
    Tensor a = tensor({1, 2}).requires_grad_(), b = tensor({3, 4}).requires_grad_();
    Tensor c = tensor({5, 6}).requires_grad_();
    // a twice in the graph, b in it and in a checkpointed function (whose node returns b's
    // and c's gradients), c only there.
    Tensor loss =
        add(sum(add(mul(a, b), a)),
            sum(nn::checkpoint([](const std::vector<Tensor>& in) { return mul(in[0], in[1]); },
                               {c, b})));
    std::vector<std::pair<const TensorImpl*, std::vector<float>>> fired;
    {
        LeafReadyHookGuard hook([&](const TensorImpl* leaf) {
            fired.push_back({leaf, Tensor(leaf->grad).to_vector<float>()});
        });
        loss.backward();
        // grad() fills no .grad(), so it fires nothing.
        grad({sum(mul(a, a))}, {a});
    }
    REQUIRE(fired.size() == 3);
    for (const Tensor& leaf : {a, b, c}) {
        auto it = std::find_if(fired.begin(), fired.end(),
                               [&](const auto& f) { return f.first == leaf.impl().get(); });
        REQUIRE(it != fired.end());
        CHECK(it->second == leaf.grad().to_vector<float>());  // nothing arrived after it fired
    }
    require_close(a.grad(), {4, 5});  // b + 1
    require_close(b.grad(), {6, 8});  // a + c
    require_close(c.grad(), {3, 4});  // b
    // Out of the guard's scope there is no hook.
    fired.clear();
    sum(mul(a, a)).backward();
    CHECK(fired.empty());
}
