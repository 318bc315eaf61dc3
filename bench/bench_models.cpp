// bench_models: one training step of every paper model at its paper input size (issue 21,
// item 5), the workloads of bench/models.json, which bench/torch_models.py reads too. A step is
// zero_grad, forward, loss, backward and an AdamW update (lr 1e-4, weight decay 0.01): the
// cross-entropy of the logits for the classifiers, of every pixel or voxel for the segmentation
// models, summed over the deep-supervision outputs with the paper's weights (PVT-GDLA
// {1, 1, 1, 1}, UTNet {1, 0.4, 0.2, 0.1}). Each workload runs twice: "step_<name>" without
// activation checkpointing and "ckpt_<name>" with model.grad_checkpointing 1 (every block
// recomputed in backward; not "step_<name>_ckpt", which --only step_<name> would select too),
// and "_act": the activation memory the first forward keeps for the backward (tensor bytes). Both
// give the median step time (ms) and, from the first step of a fresh process, the peak memory
// ("_mem": RSS growth, allocator peak beside it). Run one workload per process (--only) for the
// memory figures: run.sh does. The models are built through the registry, as `lumen train` builds
// them, with the options in models.json. Usage: bench_models [--threads N] [--repeats R] [--only
// step_vit,ckpt_vit,...] [--list]
//                     [--device cpu|cuda] [--models FILE]   (FILE: default bench/models.json)
//                     [--profile [--trace DIR]]   (per-op tables of one step instead of the
//                     timing; --trace also writes its Chrome trace to DIR/NAME.json)
//                     [--conv-direct auto|never|winograd-never]   (never: im2col + GEMM
//                     only; winograd-never: no Winograd; for A/B)
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_util.h"
#include "lumen/lumen.h"
#include "ops/conv_kernels.h"

using namespace lumen;
using namespace lumen::bench;
using nlohmann::json;

namespace {

// A models.json option as a registry option value (the registry coerces integers to numbers).
nn::OptionValue option_value(const std::string& key, const json& value) {
    if (value.is_boolean()) return value.get<bool>();
    if (value.is_number_integer()) return value.get<int64_t>();
    if (value.is_number()) return value.get<double>();
    if (value.is_string()) return value.get<std::string>();
    if (value.is_array() && !value.empty() && value.front().is_number_integer())
        return value.get<std::vector<int64_t>>();
    if (value.is_array() && !value.empty() && value.front().is_number())
        return value.get<std::vector<double>>();
    LUMEN_FAIL("bench_models", "option '", key, "': unsupported value ", value.dump());
}

struct Workload {
    std::string name, model, kind, target;
    nn::Options options;
    std::vector<int64_t> input;
    std::vector<double> loss_weights;
};

std::vector<Workload> load_workloads(const std::string& path) {
    std::ifstream file(path);
    LUMEN_CHECK(file.good(), "bench_models", "cannot open ", path);
    json doc = json::parse(file);
    std::vector<Workload> workloads;
    for (const json& w : doc.at("workloads")) {
        Workload workload{.name = w.at("name"),
                          .model = w.at("model"),
                          .kind = w.at("kind"),
                          .target = w.at("target"),
                          .options = nn::Options(w.at("model").get<std::string>()),
                          .input = w.at("input").get<std::vector<int64_t>>(),
                          .loss_weights = w.value("loss_weights", std::vector<double>{1.0})};
        for (const auto& [key, value] : w.at("options").items())
            workload.options.set(key, option_value(key, value));
        workloads.push_back(std::move(workload));
    }
    return workloads;
}

// Tensor bytes live on the benchmark's device: the activations a forward keeps for its backward
// are what this grows by from the start of the forward to the loss.
size_t live_bytes() {
    if (run_device().is_cuda()) return cuda::memory_stats(run_device().index).allocated;
    return cpu_memory_stats().allocated;
}

// The step of `w` (checkpointing every block when `checkpointed`), set up on `device`. Its first
// run also reports "<name>_act": the activation memory (MB live at the loss over those live at
// the start of the forward), which checkpointing is meant to shrink.
std::function<void()> setup_step(const Workload& w, bool checkpointed, Device device) {
    nn::Options overrides = w.options;
    if (checkpointed) overrides.set("grad_checkpointing", int64_t(1));
    nn::Options options = models::model_options(w.model, overrides);
    models::ModelInput in = models::find_model(w.model).input(options);
    std::vector<double> weights = in.deep_supervision.empty() ? std::vector<double>{1.0}
                                                              : in.deep_supervision;
    LUMEN_CHECK(weights == w.loss_weights, "bench_models", w.name,
                ": models.json's loss_weights differ from the registry's deep-supervision "
                "weights (",
                weights.size(), " outputs)");
    manual_seed(0);
    std::shared_ptr<nn::Module> model = models::build_model(w.model, options);
    model->train();
    model->to(device);
    auto optimizer =
        std::make_shared<train::AdamW>(model->parameters(), 1e-4, train::AdamOptions{}, 0.01);
    const int64_t batch = w.input[0];
    Tensor x = w.kind == "tokens" ? randint(1, options.get_int("vocab_size"), w.input)
                                  : randn(Shape(w.input));
    Shape target_shape{batch};
    if (w.target == "dense") target_shape.insert(target_shape.end(), w.input.begin() + 2,
                                                 w.input.end());
    Tensor target = randint(0, in.num_classes, target_shape);
    x = x.to(device);
    target = target.to(device);
    // The parameter count, for the table (both sides must build the same model) and for the
    // memory that is not activations (gradients and AdamW moments, 12 bytes per parameter).
    std::printf("{\"name\": \"%s_%s_params\", \"unit\": \"parameters\", \"value\": %lld, "
                "\"ms\": 0}\n",
                checkpointed ? "ckpt" : "step", w.name.c_str(), (long long)model->num_parameters());
    return [model, optimizer, x, target, weights, name = w.name, checkpointed,
            reported = std::make_shared<bool>(false)] {
        optimizer->zero_grad();
        const size_t before = live_bytes();
        std::vector<Tensor> outputs = model->forward_outputs(x);
        Tensor loss = cross_entropy(outputs[0], target) * weights[0];
        for (size_t i = 1; i < outputs.size(); ++i)
            loss = loss + cross_entropy(outputs[i], target) * weights[i];
        if (!*reported) {  // the first step: what the forward keeps for the backward
            *reported = true;
            std::printf(
                "{\"name\": \"%s_%s_act\", \"unit\": \"MB activations\", \"value\": %.1f, "
                "\"ms\": 0}\n",
                checkpointed ? "ckpt" : "step", name.c_str(),
                double(live_bytes() - before) / (1 << 20));
        }
        loss.backward();
        optimizer->step();
    };
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    std::string path = LUMEN_BENCH_MODELS;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--models") == 0) path = argv[i + 1];
    std::vector<Workload> workloads = load_workloads(path);
    if (options.list) {
        for (const Workload& w : workloads) {
            if (selected(options, "step_" + w.name)) std::printf("step_%s\n", w.name.c_str());
            if (selected(options, "ckpt_" + w.name)) std::printf("ckpt_%s\n", w.name.c_str());
        }
        return 0;
    }
    if (options.threads > 0) set_num_threads(options.threads);
    // --conv-direct never: every dense convolution through im2col + GEMM (A/B runs of the
    // direct, few-channel and Winograd kernels: ops/cpu/conv_direct.cpp, conv_rows.cpp,
    // conv_winograd.cpp); winograd-never: all but Winograd; auto (the default) as lumen picks.
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--conv-direct") == 0) {
            const bool never = std::strcmp(argv[i + 1], "never") == 0;
            cpu::set_conv_direct(never ? cpu::ConvDirect::never : cpu::ConvDirect::automatic);
            cpu::set_conv_winograd(never || std::strcmp(argv[i + 1], "winograd-never") == 0
                                       ? cpu::ConvDirect::never
                                       : cpu::ConvDirect::automatic);
        }
    // --profile: where each selected step's time and memory go (lumen::Profiler's tables of one
    // step after two warm-up steps: the allocator cache reaches its steady state only in the third,
    // and the second still page-faults part of its activations in), instead of the timing.
    // --trace DIR also writes each profiled step's Chrome trace to DIR/NAME.json (every call
    // with its input shapes, for a per-shape breakdown).
    bool profile = false;
    std::string trace_dir;
    for (int i = 1; i < argc; ++i) profile = profile || std::strcmp(argv[i], "--profile") == 0;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--trace") == 0) {
            trace_dir = argv[i + 1];
            std::filesystem::create_directories(trace_dir);  // as --out of bench/run.sh
        }
    if (!profile)
        std::printf("# lumen model training steps, %d threads, median of up to %d repeats\n",
                    get_num_threads(), options.repeats);
    for (const Workload& w : workloads)
        for (bool checkpointed : {false, true}) {
            const std::string name = (checkpointed ? "ckpt_" : "step_") + w.name;
            if (!selected(options, name)) continue;
            auto setup = [&] { return setup_step(w, checkpointed, options.device); };
            if (!profile) {
                measure_workload(name, 0, "", setup, options.repeats);
                continue;
            }
            std::function<void()> step = setup();
            step();
            step();
            Profiler profiler;
            step();
            profiler.stop();
            std::printf("# %s\n", name.c_str());
            profiler.print_table(std::cout, 25);
            if (!trace_dir.empty()) profiler.write_chrome_trace(trace_dir + "/" + name + ".json");
        }
    return 0;
}
