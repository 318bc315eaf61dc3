// Adam and AdamW (the context-length study's and PVT-GDLA's recipes): the first step by hand, ten
// steps against the update rule evaluated here in plain double arithmetic (coupled and decoupled
// weight decay, amsgrad, maximize, a beta1 that changes between steps), state, set_momentum,
// errors.
#include <cmath>

#include "support/gradcheck.h"
#include "train/optim.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

struct Rule {
    double lr = 0.01, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
    bool decoupled = false, amsgrad = false, maximize = false, fused = true;
};

// The gradient of element i at step k (1-based): varied signs and sizes.
double gradient(int k, size_t i) { return std::sin(1.3 * k + 0.7 * double(i)) * (1.0 + i); }

// PyTorch's Adam/AdamW rule for one scalar per element, beta1 per step from `beta1s`.
std::vector<std::vector<double>> reference(const Rule& r, const std::vector<double>& beta1s) {
    std::vector<double> p{0.5, -1.0, 2.0}, m(3, 0.0), v(3, 0.0), v_max(3, 0.0);
    std::vector<std::vector<double>> after;
    for (int k = 1; k <= int(beta1s.size()); ++k) {
        const double b1 = beta1s[size_t(k - 1)];
        for (size_t i = 0; i < 3; ++i) {
            double g = r.maximize ? -gradient(k, i) : gradient(k, i);
            if (r.decoupled)
                p[i] *= 1 - r.lr * r.weight_decay;
            else
                g += r.weight_decay * p[i];
            m[i] = b1 * m[i] + (1 - b1) * g;
            v[i] = r.beta2 * v[i] + (1 - r.beta2) * g * g;
            v_max[i] = std::max(v_max[i], v[i]);
            double second = r.amsgrad ? v_max[i] : v[i];
            double m_hat = m[i] / (1 - std::pow(b1, k));
            double denom = std::sqrt(second) / std::sqrt(1 - std::pow(r.beta2, k)) + r.eps;
            p[i] -= r.lr * m_hat / denom;
        }
        after.push_back(p);
    }
    return after;
}

std::vector<std::vector<double>> run(const Rule& r, const std::vector<double>& beta1s) {
    Tensor p = tensor({0.5, -1.0, 2.0}, {3}, DType::float64).requires_grad_(true);
    train::AdamOptions o{.beta1 = beta1s[0],
                         .beta2 = r.beta2,
                         .eps = r.eps,
                         .amsgrad = r.amsgrad,
                         .maximize = r.maximize,
                         .fused = r.fused};
    std::unique_ptr<train::Adam> adam;
    if (r.decoupled)
        adam = std::make_unique<train::AdamW>(std::vector<Tensor>{p}, r.lr, o, r.weight_decay);
    else
        adam = std::make_unique<train::Adam>(std::vector<Tensor>{p}, r.lr, o, r.weight_decay);
    std::vector<std::vector<double>> after;
    for (int k = 1; k <= int(beta1s.size()); ++k) {
        adam->set_momentum(beta1s[size_t(k - 1)]);
        std::vector<double> g;
        for (size_t i = 0; i < 3; ++i) g.push_back(gradient(k, i));
        p.set_grad(from_vector(g, {3}));
        adam->step();
        after.push_back(p.to_vector<double>());
    }
    return after;
}

void require_same(const std::vector<std::vector<double>>& got,
                  const std::vector<std::vector<double>>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < want.size(); ++k)
        for (size_t i = 0; i < 3; ++i) {
            INFO("step " << k + 1 << ", element " << i);
            CHECK(got[k][i] == Approx(want[k][i]).epsilon(1e-12));
        }
}

}  // namespace

TEST_CASE("Adam: the first step moves every element by about lr against its gradient",
          "[train][optim]") {
    // Step 1: m_hat = g, v_hat = g^2, so p <- p - lr g / (|g| + eps).
    Tensor p = tensor({1.0, -2.0, 0.5}, {3}, DType::float64).requires_grad_(true);
    train::Adam adam({p}, 0.1);
    p.set_grad(tensor({0.5, -3.0, 1e-3}, {3}, DType::float64));
    adam.step();
    require_close(p,
                  {1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 + 0.1 * 3.0 / (3.0 + 1e-8),
                   0.5 - 0.1 * 1e-3 / (1e-3 + 1e-8)},
                  1e-14, 1e-15);
    const train::ParamState* s = adam.find_state(p);
    REQUIRE(s != nullptr);
    CHECK(s->at("step").item<double>() == 1.0);
    CHECK((s->count("exp_avg") == 1 && s->count("exp_avg_sq") == 1));
    CHECK(s->count("max_exp_avg_sq") == 0);
}

TEST_CASE("Adam and AdamW: ten steps against the update rule", "[train][optim]") {
    for (bool fused : {true, false}) {
        INFO((fused ? "fused" : "composition of ops"));
        const std::vector<double> fixed(10, 0.9);
        Rule plain{.fused = fused};
        require_same(run(plain, fixed), reference(plain, fixed));
        Rule coupled{.weight_decay = 0.1, .fused = fused};
        require_same(run(coupled, fixed), reference(coupled, fixed));
        Rule decoupled{.weight_decay = 0.1, .decoupled = true, .fused = fused};
        require_same(run(decoupled, fixed), reference(decoupled, fixed));
        Rule ams{.lr = 0.05, .beta2 = 0.9, .amsgrad = true, .fused = fused};
        require_same(run(ams, fixed), reference(ams, fixed));
        Rule maximize{.weight_decay = 0.01, .decoupled = true, .maximize = true, .fused = fused};
        require_same(run(maximize, fixed), reference(maximize, fixed));
        // OneCycleLR cycles beta1: the moment and its bias correction use the current value.
        const std::vector<double> cycled{0.95, 0.93, 0.9, 0.87, 0.85, 0.86, 0.88, 0.9, 0.93, 0.95};
        Rule context{.lr = 1e-3, .beta2 = 0.99, .fused = fused};
        require_same(run(context, cycled), reference(context, cycled));
    }
}

TEST_CASE("Adam and AdamW: the fused pass is the composition bit for bit in float32",
          "[train][optim]") {
    // 100,003 elements (several threads' chunks and a ragged end), five steps of every variant:
    // parameters and both moments bit for bit.
    for (int variant = 0; variant < 4; ++variant) {
        INFO("variant " << variant);
        std::vector<Tensor> after[2];
        for (bool fused : {false, true}) {
            manual_seed(7);
            Tensor p = randn({100003}).requires_grad_(true);
            train::AdamOptions o{.amsgrad = variant == 2, .maximize = variant == 3, .fused = fused};
            std::unique_ptr<train::Adam> adam;
            if (variant == 1)
                adam = std::make_unique<train::Adam>(std::vector<Tensor>{p}, 0.01, o, 0.1);
            else
                adam = std::make_unique<train::AdamW>(std::vector<Tensor>{p}, 0.01, o, 0.05);
            for (int k = 0; k < 5; ++k) {
                p.set_grad(randn({100003}));
                adam->step();
            }
            const train::ParamState* s = adam->find_state(p);
            after[fused] = {p.detach().clone(), s->at("exp_avg"), s->at("exp_avg_sq")};
        }
        for (size_t i = 0; i < 3; ++i)
            CHECK(after[1][i].to_vector<float>() == after[0][i].to_vector<float>());
    }
}

TEST_CASE("Adam and AdamW: groups, defaults, skipped parameters and errors", "[train][optim]") {
    Tensor a = ones({2}).requires_grad_(true), b = ones({2}).requires_grad_(true);
    train::AdamW adamw(std::vector<train::ParamGroup>{{{a}, 0.1, 0.5}, {{b}, 0.1, 0.0}});
    CHECK(adamw.name() == "AdamW");
    a.set_grad(zeros({2}));
    adamw.step();  // zero gradient: only the decoupled decay moves a; b has no gradient
    require_close(a, {0.95, 0.95}, 1e-6, 0);
    require_close(b, {1.0, 1.0}, 0, 0);
    CHECK(adamw.find_state(b) == nullptr);
    train::AdamW defaults({a});
    CHECK(defaults.param_groups()[0].weight_decay == 0.01);
    CHECK(defaults.param_groups()[0].lr == 1e-3);
    require_error([&] { train::Adam bad({a}, 0.1, {.beta1 = 1.0}); }, {"[Adam]", "beta1", "1"});
    require_error([&] { train::AdamW bad({a}, 0.1, {.beta2 = -0.1}); }, {"[AdamW]", "beta2"});
    require_error([&] { train::Adam bad({a}, 0.1, {.eps = -1.0}); }, {"[Adam]", "eps"});
    require_error([&] { adamw.set_momentum(1.5); }, {"[AdamW]", "beta1", "1.5"});
    train::SGD sgd({a}, 0.1);
    sgd.set_momentum(0.9);
    CHECK(sgd.options.momentum == 0.9);
    require_error([&] { sgd.set_momentum(-0.1); }, {"[SGD]", "momentum"});
}
