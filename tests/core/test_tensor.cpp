// Core tensor behaviour: creation, metadata, views that alias storage, element access,
// conversion, printing and errors.
#include <cmath>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("factories give the requested shape, dtype and values", "[core][tensor]") {
    Tensor z = zeros({2, 3});
    CHECK(z.shape() == Shape{2, 3});
    CHECK(z.strides() == Shape{3, 1});
    CHECK(z.dtype() == DType::float32);
    CHECK(z.numel() == 6);
    CHECK(z.is_contiguous());
    require_close(full({2, 2}, 2.5, DType::float64), {2.5, 2.5, 2.5, 2.5});
    require_close(ones({3}, DType::int32), {1, 1, 1});
    require_close(arange(0, 5), {0, 1, 2, 3, 4});
    require_close(arange(1, 2, 0.25, DType::float64), {1, 1.25, 1.5, 1.75});
    require_close(linspace(0, 1, 5), {0, 0.25, 0.5, 0.75, 1});
    require_close(eye(2, 3), {1, 0, 0, 0, 1, 0});
    Tensor s = scalar_tensor(3.0);
    CHECK(s.ndim() == 0);
    CHECK(s.numel() == 1);
    CHECK(s.item<double>() == 3.0);
    require_error([] { empty({2, -1}); }, {"[empty]", "[2, -1]"});
}

TEST_CASE("from_vector keeps the element type and checks the count", "[core][tensor]") {
    Tensor t = from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3});
    CHECK(t.dtype() == DType::int64);
    CHECK(t.at<int64_t>({1, 2}) == 6);
    CHECK(t.at<int64_t>({-1, 0}) == 4);
    CHECK(from_vector(std::vector<bool>{true, false}).dtype() == DType::bool_);
    require_error(
        [] {
            from_vector(std::vector<float>{1, 2, 3}, {2, 2});
        },
        {"[from_vector]", "3 values", "[2, 2]"});
    require_error([&] { t.at<int64_t>({2, 0}); }, {"[at]", "index 2", "size 2"});
    require_error([&] { t.item<int64_t>(); }, {"[item]", "[2, 3]"});
}

TEST_CASE("views share storage with their base", "[core][tensor][views]") {
    Tensor base = arange(0, 24, 1, DType::float32).reshape({2, 3, 4});
    Tensor t = base.transpose(0, 2);
    CHECK(t.shape() == Shape{4, 3, 2});
    CHECK(t.strides() == Shape{1, 4, 12});
    CHECK_FALSE(t.is_contiguous());
    CHECK(t.storage() == base.storage());
    Tensor sliced = base.slice(2, 1, 4, 2);  // x[:, :, 1::2]
    CHECK(sliced.shape() == Shape{2, 3, 2});
    require_close(sliced.select(0, 1).select(0, 2), {21, 23});
    {
        NoGradGuard no_grad;
        sliced.fill_(-1);
    }
    CHECK(base.at<float>({0, 0, 1}) == -1);
    CHECK(base.at<float>({0, 0, 2}) == 2);
    Tensor narrowed = base.narrow(1, 1, 2);
    CHECK(narrowed.storage_offset() == 4);
    Tensor expanded = tensor({1, 2, 3}).expand({4, 3});
    CHECK(expanded.strides() == Shape{0, 1});
    CHECK(expanded.unsqueeze(0).shape() == Shape{1, 4, 3});
    CHECK(base.flatten(1).shape() == Shape{2, 12});
    CHECK(base.permute({2, 0, 1}).shape() == Shape{4, 2, 3});
    CHECK(zeros({1, 3, 1}).squeeze().shape() == Shape{3});
    CHECK(zeros({1, 3, 1}).squeeze(-1).shape() == Shape{1, 3});
}

TEST_CASE("view needs compatible strides while reshape copies", "[core][tensor][views]") {
    Tensor base = arange(0, 6, 1, DType::float32).reshape({2, 3});
    Tensor t = base.t();
    require_error([&] { t.view({6}); }, {"[view]", "reshape"});
    Tensor flat = t.reshape({6});
    CHECK(flat.storage() != base.storage());
    require_close(flat, {0, 3, 1, 4, 2, 5});
    CHECK(base.view({3, -1}).shape() == Shape{3, 2});
    CHECK(base.view({3, 2}).storage() == base.storage());
    // A split of a dim and a merge of contiguous dims are views even on a strided base.
    Tensor wide = zeros({4, 6}).slice(1, 0, 6, 2);  // (4, 3), strides (6, 2)
    CHECK(wide.view({2, 2, 3}).storage() == wide.storage());
    require_error([&] { base.view({4, -1}); }, {"[view]", "[4, -1]", "6"});
    require_error([&] { base.view({-1, -1}); }, {"[view]", "only one dim"});
}

TEST_CASE("shape errors name the op and the values", "[core][tensor][errors]") {
    Tensor x = zeros({2, 3});
    require_error([&] { x.permute({0}); }, {"[permute]", "[2, 3]"});
    require_error([&] { x.permute({0, 0}); }, {"[permute]", "appears twice"});
    require_error([&] { x.transpose(0, 2); }, {"[transpose]", "dim 2"});
    require_error([&] { x.narrow(1, 2, 2); }, {"[narrow]", "size 3"});
    require_error([&] { x.expand({4, 2}); }, {"[expand]", "[2, 3]", "[4, 2]"});
    require_error([&] { x.select(0, 5); }, {"[select]", "index 5"});
    require_error([&] { Tensor().numel(); }, {"[tensor]", "undefined"});
    require_error([&] { x.data_ptr<double>(); }, {"[data_ptr]", "float64", "float32"});
}

TEST_CASE("conversion between dtypes rounds like PyTorch", "[core][tensor]") {
    Tensor x = tensor({-1.7, 0.2, 2.9});
    CHECK(x.to(DType::int64).to_vector<int64_t>() == std::vector<int64_t>{-1, 0, 2});
    CHECK(x.to(DType::bool_).to_vector<bool>() == std::vector<bool>{true, true, true});
    CHECK(x.to(DType::float64).dtype() == DType::float64);
    Tensor halves = tensor({1.0, -2.5, 65504.0, 1e-5}).to(DType::float16);
    require_close(halves.to(DType::float32), {1.0, -2.5, 65504.0, 1.0013580322265625e-05}, 1e-7);
    Tensor bf = tensor({1.0, 3.14159}).to(DType::bfloat16);
    require_close(bf.to(DType::float32), {1.0, 3.140625});
    // Non-contiguous source is copied in logical order.
    Tensor base = arange(0, 6, 1, DType::float32).reshape({2, 3});
    require_close(base.t().contiguous(), {0, 3, 1, 4, 2, 5});
    require_close(base.t().to(DType::float64), {0, 3, 1, 4, 2, 5});
}

TEST_CASE("copy_ broadcasts and converts", "[core][tensor]") {
    Tensor dst = zeros({2, 3}, DType::float64);
    dst.copy_(tensor({1, 2, 3}));
    require_close(dst, {1, 2, 3, 1, 2, 3});
    dst.t().copy_(arange(0, 6, 1, DType::int64).reshape({3, 2}));
    require_close(dst, {0, 2, 4, 1, 3, 5});
    require_error([&] { dst.copy_(zeros({4})); }, {"[copy_]", "[4]", "[2, 3]"});
}

TEST_CASE("printing looks like PyTorch", "[core][tensor]") {
    CHECK(tensor({1, 2.5}).str() == "tensor([1.0000, 2.5000])");
    CHECK(arange(0, 4).reshape({2, 2}).str() == "tensor([[0, 1],\n        [2, 3]])");
    CHECK(tensor({1}, {1}, DType::float64).str() == "tensor([1.], dtype=float64)");
    CHECK(scalar_tensor(2).str() == "tensor(2.)");
    // torch's _Formatter (each string below is what PyTorch 1.13 prints): integer-valued floats
    // as "3.", scientific notation when the magnitudes span more than 1000x or leave
    // [1e-4, 1e8], nan and inf as words padded like the numbers.
    CHECK(tensor({1e-5, 1.0}).str() == "tensor([1.0000e-05, 1.0000e+00])");
    CHECK(tensor({1e9, 2.0}).str() == "tensor([1.0000e+09, 2.0000e+00])");
    CHECK(tensor({123456.5, 0.25}).str() == "tensor([1.2346e+05, 2.5000e-01])");
    CHECK(tensor({0.5, NAN, INFINITY, -2.0}).str() ==
          "tensor([ 0.5000,     nan,     inf, -2.0000])");
    CHECK(tensor({3.0, NAN}).str() == "tensor([3., nan])");
    CHECK(tensor({0.0, 0.0}).str() == "tensor([0., 0.])");
    // Summarized dims: " ..." between the edge items, "...," on a line of its own between rows,
    // a blank line between matrices, and every value padded to the widest shown one.
    CHECK(arange(0, 2000).str() == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
    CHECK(arange(0, 1100).reshape({100, 11}).str() ==
          "tensor([[   0,    1,    2,  ...,    8,    9,   10],\n"
          "        [  11,   12,   13,  ...,   19,   20,   21],\n"
          "        [  22,   23,   24,  ...,   30,   31,   32],\n"
          "        ...,\n"
          "        [1067, 1068, 1069,  ..., 1075, 1076, 1077],\n"
          "        [1078, 1079, 1080,  ..., 1086, 1087, 1088],\n"
          "        [1089, 1090, 1091,  ..., 1097, 1098, 1099]])");
    CHECK(arange(0, 8).reshape({2, 2, 2}).str() ==
          "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])");
    CHECK(tensor({-1.5, 10}).str() == "tensor([-1.5000, 10.0000])");
    CHECK(tensor({-1, 10}, {2}, DType::float64).str() == "tensor([-1., 10.], dtype=float64)");
    Tensor leaf = tensor({1}).requires_grad_();
    CHECK(leaf.str().find("requires_grad=True") != std::string::npos);
    CHECK(mul(leaf, 2.0).str().find("grad_fn=<mul>") != std::string::npos);
}

TEST_CASE("devices parse and CUDA tensors fail clearly without a GPU", "[core][device]") {
    CHECK(Device::parse("cpu") == Device::cpu());
    CHECK(Device::parse("cuda:1") == Device::cuda(1));
    require_error([] { Device::parse("gpu"); }, {"[device]", "'gpu'"});
    if (!cuda_available()) {
        require_error([] { zeros({2}, DType::float32, Device::cuda()); }, {"[cuda]"});
    }
}

TEST_CASE("large CPU blocks are reused from the allocator cache", "[core][storage]") {
    cpu_empty_cache();
    void* first = nullptr;
    {
        Tensor big = zeros({1 << 20}, DType::float32);  // 4 MiB
        first = big.data_ptr();
    }
    CHECK(cpu_cached_bytes() >= size_t(4) << 20);
    Tensor again = empty({(1 << 20) - 1000}, DType::float32);  // same size class
    CHECK(again.data_ptr() == first);
    Tensor small = zeros({10}, DType::float32);  // small blocks bypass the cache
    small = Tensor();
    cpu_empty_cache();
    CHECK(cpu_cached_bytes() == 0);
}

TEST_CASE("the CPU allocator cache stays within the live high-water mark", "[core][storage]") {
    // Four 4 MiB blocks freed into the cache, then three 6 MiB ones (another size class): each
    // miss gives back cached 4 MiB blocks so that live + cached bytes never exceed the most
    // live so far (16 MiB, then 18 MiB above what was live before).
    cpu_empty_cache();
    const size_t base = cpu_memory_stats().allocated, mib = size_t(1) << 20;
    {
        std::vector<Tensor> small;
        for (int i = 0; i < 4; ++i) small.push_back(empty({int64_t(1) << 20}));
    }
    CHECK(cpu_cached_bytes() == 16 * mib);
    std::vector<Tensor> large;
    for (size_t i = 1; i <= 3; ++i) {
        large.push_back(empty({int64_t(3) << 19}));  // 6 MiB
        const size_t live = cpu_memory_stats().allocated - base;
        CHECK(live == 6 * i * mib);
        CHECK(live + cpu_cached_bytes() <= std::max<size_t>(16 * mib, live));
    }
    CHECK(cpu_cached_bytes() == 0);
    large.clear();  // now cached: 18 MiB, all within the new mark
    CHECK(cpu_cached_bytes() == 18 * mib);
    cpu_empty_cache();
}

TEST_CASE("a cached CPU block of a slightly larger class serves a request", "[core][storage]") {
    // Up to 1.5x: a cached 5 MiB block serves a 4 MiB request, counts as 5 MiB while live and
    // goes back to the 5 MiB class; a 3 MiB request does not take it.
    cpu_empty_cache();
    const size_t base = cpu_memory_stats().allocated, mib = size_t(1) << 20;
    void* block = nullptr;
    {
        Tensor five = empty({int64_t(5) << 18});  // 5 MiB
        block = five.data_ptr();
    }
    CHECK(cpu_cached_bytes() == 5 * mib);
    {
        Tensor four = empty({int64_t(1) << 20});  // 4 MiB
        CHECK(four.data_ptr() == block);
        CHECK(cpu_memory_stats().allocated - base == 5 * mib);
        CHECK(cpu_cached_bytes() == 0);
    }
    CHECK(cpu_memory_stats().allocated == base);
    CHECK(cpu_cached_bytes() == 5 * mib);
    {
        Tensor again = empty({int64_t(5) << 18});  // its own class again
        CHECK(again.data_ptr() == block);
    }
    {
        Tensor three = empty({int64_t(3) << 18});  // 3 MiB: 5 MiB is more than 1.5x
        CHECK(cpu_memory_stats().allocated - base == 3 * mib);
    }
    cpu_empty_cache();
}

TEST_CASE("the CPU allocator counts live and peak bytes", "[core][allocator]") {
    cpu_reset_peak_memory_stats();
    CpuMemoryStats before = cpu_memory_stats();
    {
        Tensor big = empty({1 << 20});  // 4 MiB
        CpuMemoryStats during = cpu_memory_stats();
        CHECK(during.allocated >= before.allocated + (size_t(4) << 20));
        CHECK(during.peak_allocated >= during.allocated);
    }
    CpuMemoryStats after = cpu_memory_stats();
    CHECK(after.allocated == before.allocated);
    CHECK(after.peak_allocated >= before.allocated + (size_t(4) << 20));
    cpu_reset_peak_memory_stats();
    CHECK(cpu_memory_stats().peak_allocated == cpu_memory_stats().allocated);
}
