// A two-layer perceptron learns y = sin(3x) from 256 noisy samples by plain gradient descent
// through lumen's autograd: the smallest complete training loop, seeded, read top to bottom.
// Run: bash scripts/build.sh lumen_mlp && build/examples/lumen_mlp
#include <cstdio>
#include <vector>

#include <lumen/lumen.h>

using namespace lumen;

int main() {
    Generator generator(0);
    // Data. Shapes: x, y (N, 1) with N = 256; x uniform in [-1, 1), noise of std 0.1.
    Tensor x = rand({256, 1}, DType::float32, &generator) * 2.0 - 1.0;
    Tensor y = sin(x * 3.0) + randn({256, 1}, DType::float32, &generator) * 0.1;

    // Model: y_hat = tanh(x w1 + b1) w2 + b2 with 32 hidden units.
    Tensor w1 = randn({1, 32}, DType::float32, &generator).requires_grad_();
    Tensor b1 = zeros({32}).requires_grad_();
    Tensor w2 = (randn({32, 1}, DType::float32, &generator) * 0.2).requires_grad_();
    Tensor b2 = zeros({1}).requires_grad_();
    std::vector<Tensor> parameters = {w1, b1, w2, b2};
    double first_loss = 0, loss_value = 0;
    for (int step = 0; step <= 2000; ++step) {
        Tensor y_hat = matmul(tanh(matmul(x, w1) + b1), w2) + b2;
        Tensor loss = mean(square(y_hat - y));  // mean squared error
        loss.backward();                        // fills p.grad() for every parameter p
        NoGradGuard no_grad;                    // the update itself is not part of the model
        for (Tensor& p : parameters) {
            p.copy_(p - p.grad() * 0.1);  // learning rate 0.1
            p.set_grad(Tensor());         // gradients accumulate: clear them for the next step
        }
        loss_value = loss.item<double>();
        if (step == 0) first_loss = loss_value;
        if (step % 200 == 0) std::printf("step %4d  loss %.5f\n", step, loss_value);
    }
    std::printf("final loss %.5f (from %.5f; noise floor 0.01)\n", loss_value, first_loss);
    return loss_value < 0.1 * first_loss ? 0 : 1;
}
