// The CUDA side of core (device memory, host<->device copies, fill, device checks). Every
// case skips with a message when lumen was built without CUDA or no GPU is visible; the op
// kernels and their CPU/CUDA parity suite are in tests/cuda/.
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("tensors of every dtype round-trip through GPU memory", "[cuda][core]") {
    if (!have_gpu()) return;
    Tensor values = arange(0, 37, 1, DType::float64).reshape({37});
    for (DType dtype : {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8,
                        DType::bool_}) {
        Tensor host = values.to(dtype);
        Tensor device = host.cuda();
        CHECK(device.is_cuda());
        CHECK(device.device() == Device::cuda(0));
        CHECK(device.dtype() == dtype);
        Tensor back = device.cpu();
        CHECK(back.is_cpu());
        require_close(back.to(DType::float64), host.to(DType::float64), 0, 0);
    }
}

TEST_CASE("host-to-device copies handle strides, broadcasts, conversions and size",
          "[cuda][core]") {
    if (!have_gpu()) return;
    Tensor host = arange(0, 12, 1, DType::float32).reshape({3, 4});
    // A transposed (non-contiguous) source is staged in logical order.
    require_close(host.t().cuda().cpu(), host.t().contiguous(), 0, 0);
    // Broadcast and dtype conversion on the way in.
    Tensor device = zeros({2, 4}, DType::float64, Device::cuda());
    device.copy_(arange(0, 4, 1, DType::int64));
    require_close(device.cpu(), {0, 1, 2, 3, 0, 1, 2, 3}, 0, 0);
    // Device to device.
    Tensor other = empty({2, 4}, DType::float64, Device::cuda());
    other.copy_(device);
    require_close(other.cpu(), {0, 1, 2, 3, 0, 1, 2, 3}, 0, 0);
    // 16M floats: every element arrives.
    int64_t n = int64_t(1) << 24;
    Tensor big = arange(0, double(n), 1, DType::float32);
    Tensor round_trip = big.cuda().cpu();
    CHECK(sum(abs(sub(round_trip, big))).item<double>() == 0.0);
}

TEST_CASE("fill_ and the factories work on the GPU", "[cuda][core]") {
    if (!have_gpu()) return;
    require_close(zeros({1000}, DType::float32, Device::cuda()).cpu(),
                  zeros({1000}, DType::float32), 0, 0);
    require_close(full({3, 5}, 2.5, DType::float64, Device::cuda()).cpu(),
                  full({3, 5}, 2.5, DType::float64), 0, 0);
    Tensor ints = ones({70000}, DType::int64, Device::cuda());  // more than one block row
    CHECK(sum(ints.cpu()).item<int64_t>() == 70000);
    Tensor half = full({9}, 1.5, DType::float16, Device::cuda());
    require_close(half.cpu().to(DType::float32), full({9}, 1.5, DType::float32), 0, 0);
    Tensor bf16 = full({9}, -3.0, DType::bfloat16, Device::cuda());
    require_close(bf16.cpu().to(DType::float32), full({9}, -3.0, DType::float32), 0, 0);
}

TEST_CASE("gradients flow back across device transfers", "[cuda][core][autograd]") {
    if (!have_gpu()) return;
    Tensor x = random_input({4, 3}).requires_grad_();
    Tensor y = x.cuda().cpu();
    sum(mul(y, y)).backward();
    require_close(x.grad(), mul(x.detach(), scalar_tensor(2.0, DType::float64)));
}

TEST_CASE("pinned host memory and non-blocking copies", "[cuda][core]") {
    if (!have_gpu()) {
        // Without a device there is no page-locked memory to be had: a clear error.
        require_error([] { ones({4}).pin_memory(); }, {"[cuda]", "16 bytes", "pinned host memory"});
        return;
    }
    Tensor host = arange(0, 1 << 20, 1, DType::float32);
    Tensor pinned = host.pin_memory();
    CHECK(pinned.is_pinned());
    CHECK_FALSE(host.is_pinned());
    CHECK(pinned.pin_memory().data_ptr() == pinned.data_ptr());  // already pinned: no copy
    require_close(pinned, host, 0, 0);
    // A strided source is packed into the pinned copy.
    Tensor grid = host.reshape({1024, 1024}).t();
    require_close(grid.pin_memory(), grid.contiguous(), 0, 0);
    // Upload without waiting, compute on the default stream, download without waiting.
    Tensor device = pinned.to(Device::cuda(), /*non_blocking=*/true);
    CHECK(device.is_cuda());
    Tensor doubled = add(device, device);
    Tensor back = doubled.to(Device::cpu(), /*non_blocking=*/true);
    CHECK(back.is_pinned());
    cuda_synchronize();
    require_close(back, mul(host, scalar_tensor(2.0)), 0, 0);
    // A non-contiguous device tensor downloads in logical order; gradients flow through.
    Tensor leaf = random_input({8, 5}).to(DType::float32).requires_grad_();
    Tensor down = leaf.cuda().t().to(Device::cpu(), true);
    cuda_synchronize();
    require_close(down, leaf.detach().t().contiguous(), 0, 0);
    sum(down).backward();
    require_close(leaf.grad(), ones({8, 5}), 0, 0);
    // Empty tensors and unpinned sources with non_blocking take the ordinary path.
    CHECK(empty({0, 3}).pin_memory().to(Device::cuda(), true).numel() == 0);
    require_close(host.to(Device::cuda(), true).cpu(), host, 0, 0);
}

TEST_CASE("CUDA misuse raises clear errors", "[cuda][core]") {
    if (!have_gpu()) return;
    Tensor device = ones({4}, DType::float32, Device::cuda());
    Tensor host = ones({4}, DType::float32);
    require_error([&] { add(device, host); }, {"[add]", "different devices", "cuda:0", "cpu"});
    require_error([&] { matmul(device.reshape({2, 2}), host.reshape({2, 2})); },
                  {"[matmul]", "different devices", "cuda:0 [2, 2]", "cpu [2, 2]"});
    require_error([&] { device.pin_memory(); }, {"[pin_memory]", "only CPU tensors", "cuda:0"});
    require_error([&] { zeros({4}, DType::float32, Device::cuda(999)); }, {"[cuda]", "cuda:999"});
}

TEST_CASE("the caching allocator reuses blocks and keeps statistics", "[cuda][core][allocator]") {
    if (!have_gpu()) return;
    cuda::empty_cache(0);
    cuda::reset_peak_memory_stats(0);
    cuda::MemoryStats before = cuda::memory_stats(0);
    {
        Tensor a = empty({1 << 18}, DType::float32, Device::cuda());  // 1 MiB: small pool
        cuda::MemoryStats during = cuda::memory_stats(0);
        CHECK(during.allocated == before.allocated + (size_t(1) << 20));
        CHECK(during.reserved >= during.allocated);
        CHECK(during.peak_allocated >= during.allocated);
    }
    cuda::MemoryStats after = cuda::memory_stats(0);
    CHECK(after.allocated == before.allocated);
    CHECK(after.reserved > before.reserved);  // cached, not returned to the driver
    CHECK(after.peak_allocated >= before.allocated + (size_t(1) << 20));
    cuda::reset_peak_memory_stats(0);
    CHECK(cuda::memory_stats(0).peak_allocated == after.allocated);

    // Many small tensors share one 2 MiB segment (blocks are split).
    int64_t segments = cuda::memory_stats(0).segments;
    std::vector<Tensor> smalls;
    for (int i = 0; i < 100; ++i) smalls.push_back(full({100}, double(i), DType::float32, Device::cuda()));
    CHECK(cuda::memory_stats(0).segments <= segments + 1);
    for (int i = 0; i < 100; ++i) CHECK(smalls[size_t(i)].cpu().to_vector<float>()[99] == float(i));
    smalls.clear();

    // Steady state: a loop of mixed sizes calls cudaMalloc only in its first iteration.
    auto step = [] {
        Tensor a = empty({3 << 20}, DType::float32, Device::cuda());   // 12 MiB: own segment
        Tensor b = empty({5000}, DType::float64, Device::cuda());
        Tensor c = empty({1 << 21}, DType::float32, Device::cuda());   // 8 MiB: mid segment
        c.fill_(1.0);
    };
    step();
    int64_t steady = cuda::memory_stats(0).segments;
    for (int i = 0; i < 50; ++i) step();
    CHECK(cuda::memory_stats(0).segments == steady);

    // empty_cache gives every unused segment back.
    cuda::empty_cache(0);
    CHECK(cuda::memory_stats(0).reserved == cuda::memory_stats(0).allocated);
}

TEST_CASE("running out of GPU memory raises an error with the allocator's state",
          "[cuda][core][allocator]") {
    if (!have_gpu()) return;
    int64_t ooms = cuda::memory_stats(0).ooms;
    // 2^40 float32 values = 4 TiB: more than any GPU has.
    require_error([] { empty({int64_t(1) << 40}, DType::float32, Device::cuda()); },
                  {"[cuda]", "out of memory", "4398046511104 bytes", "cuda:0", "reserved",
                   "free of"});
    CHECK(cuda::memory_stats(0).ooms == ooms + 1);
    // The allocator still works afterwards.
    require_close(full({4}, 3.0, DType::float32, Device::cuda()).cpu(), {3, 3, 3, 3});
}

TEST_CASE("copies on the GPU convert dtypes and follow strides like the CPU", "[cuda][core]") {
    if (!have_gpu()) return;
    // All within int32 after any rounding: float -> int of an out-of-range value is undefined.
    Tensor values = tensor({0, 1, 2.5, -3.75, 1000.5, 0.1, -0.5, 7, 65519, 1.0 / 3}, {10},
                           DType::float64);
    const DType dtypes[] = {DType::float32, DType::float64, DType::float16, DType::bfloat16,
                            DType::int64,   DType::int32,   DType::bool_};
    for (DType from : dtypes) {
        for (DType to : dtypes) {
            Tensor host = values.to(from);
            Tensor want = host.to(to);
            Tensor got = host.cuda().to(to);
            CHECK(got.is_cuda());
            INFO("from " << dtype_name(from) << " to " << dtype_name(to));
            require_close(got.cpu().to(DType::float64), want.to(DType::float64), 0, 0);
        }
    }
    // uint8 from non-negative values only (negative -> uint8 is not portable).
    Tensor bytes = tensor({0, 1, 7, 255, 3.9}, {5}, DType::float32);
    require_close(bytes.cuda().to(DType::uint8).cpu().to(DType::float64),
                  bytes.to(DType::uint8).to(DType::float64), 0, 0);

    Tensor base = arange(0, 24, 1, DType::float32).reshape({2, 3, 4});
    Tensor device = base.cuda();
    // Views of CUDA tensors made contiguous on the device.
    require_close(device.transpose(0, 2).contiguous().cpu(), base.transpose(0, 2).contiguous(), 0, 0);
    require_close(device.slice(2, 1, 4, 2).contiguous().cpu(), base.slice(2, 1, 4, 2).contiguous(),
                  0, 0);
    require_close(device.narrow(1, 1, 2).expand({3, 2, 2, 4}).contiguous().cpu(),
                  base.narrow(1, 1, 2).expand({3, 2, 2, 4}).contiguous(), 0, 0);
    // Strided destinations: device -> device, host -> device, device -> host.
    Tensor dst = zeros({4, 3}, DType::float64, Device::cuda());
    dst.t().copy_(arange(0, 12, 1, DType::int64).reshape({3, 4}).cuda());
    require_close(dst.cpu(), arange(0, 12, 1, DType::float64).reshape({3, 4}).t().contiguous(), 0, 0);
    Tensor dst2 = zeros({4, 3}, DType::float32, Device::cuda());
    dst2.t().copy_(arange(0, 12, 1, DType::int32).reshape({3, 4}));
    require_close(dst2.cpu(), arange(0, 12, 1, DType::float64).reshape({3, 4}).t().contiguous(), 0, 0);
    Tensor host_dst = zeros({4, 2}, DType::float64);
    host_dst.t().copy_(device.narrow(0, 0, 1).reshape({3, 4}).narrow(0, 0, 2));
    require_close(host_dst, base.reshape({6, 4}).narrow(0, 0, 2).t().contiguous(), 0, 0);
    // fill_ on a strided CUDA view touches exactly its elements.
    Tensor grid = zeros({3, 4}, DType::float32, Device::cuda());
    grid.slice(1, 0, 4, 2).fill_(5.0);
    require_close(grid.cpu(), {5, 0, 5, 0, 5, 0, 5, 0, 5, 0, 5, 0}, 0, 0);
}
