// UTNet: the stages chosen per level from the config, and the forward with optional
// deep-supervision outputs.
#include "models/utnet.h"

#include "nn/checkpoint.h"
#include "ops/interpolate.h"

namespace lumen::models {

namespace {

using nn::attention::LinearAttentionOptions;

bool has_level(const UTNetConfig& config, int64_t level) {
    return config.block_list.find(char('0' + level)) != std::string::npos;
}

// values[size + from_end] (Python's values[from_end] for a negative index).
int64_t from_end(const std::vector<int64_t>& values, int64_t from_end, const char* what) {
    int64_t index = int64_t(values.size()) + from_end;
    LUMEN_CHECK(index >= 0, "UTNet", what, " needs an entry at index ", from_end,
                " (from the end), but has only ", values.size(), " entries");
    return values[size_t(index)];
}

LinearAttentionOptions attention_options(const UTNetConfig& config, int64_t heads) {
    LinearAttentionOptions options;
    options.heads = heads;
    options.attn_drop = config.attn_drop;
    options.proj_drop = config.proj_drop;
    options.reduce_size = config.reduce_size;
    options.projection = config.projection;
    options.rel_pos = config.rel_pos;
    options.rel_pos_type = config.rel_pos_type;
    return options;
}

std::shared_ptr<nn::Conv2d> head(int64_t channels, int64_t classes) {
    return nn::make<nn::Conv2d>(channels, classes, std::vector<int64_t>{1});
}

}  // namespace

void UTNetConfig::validate() const {
    LUMEN_CHECK(in_chan > 0 && base_chan > 0 && num_classes > 0 && reduce_size > 0, "UTNet",
                "in_chan, base_chan, num_classes and reduce_size must be positive, got ", in_chan,
                ", ", base_chan, ", ", num_classes, ", ", reduce_size);
    for (char digit : block_list)
        LUMEN_CHECK(digit >= '0' && digit <= '4', "UTNet",
                    "block_list holds levels '0' to '4', got '", block_list, "'");
    for (int64_t level = 0; level <= 4; ++level) {
        if (!has_level(*this, level)) continue;
        if (level > 0)
            LUMEN_CHECK(from_end(num_blocks, level - 5, "num_blocks") > 0, "UTNet",
                        "num_blocks must be positive for level ", level);
        LUMEN_CHECK(from_end(num_heads, level - 5, "num_heads") > 0, "UTNet",
                    "num_heads must be positive for level ", level);
        if (level < 4)
            LUMEN_CHECK(from_end(num_heads, level - 4, "num_heads") > 0, "UTNet",
                        "num_heads must be positive for decoder level ", level);
    }
}

UTNet::UTNet(const UTNetConfig& config) : Module("UTNet"), config_(config) {
    config_.validate();
    const int64_t c = config.base_chan;
    auto options = [&](int64_t from_end_index) {
        return attention_options(config, from_end(config.num_heads, from_end_index, "num_heads"));
    };
    inc = register_module("inc", nn::make<nn::Sequential>());
    inc->push_back(nn::make<nn::utnet::BasicBlock>(config.in_chan, c));
    if (has_level(config, 0)) {
        inc->push_back(nn::make<nn::utnet::BasicTransBlock>(c, options(-5)));
    } else {
        inc->push_back(nn::make<nn::utnet::BasicBlock>(c, c));
    }
    std::shared_ptr<nn::Module>* downs[] = {&down1, &down2, &down3, &down4};
    std::shared_ptr<nn::utnet::UpStage>* ups[] = {&up4, &up3, &up2, &up1};  // producing level l
    for (int64_t level = 1; level <= 4; ++level) {
        int64_t in = c << (level - 1), out = c << level;
        std::shared_ptr<nn::Module> down;
        if (has_level(config, level)) {
            down = nn::make<nn::utnet::DownBlockTrans>(
                in, out, from_end(config.num_blocks, level - 5, "num_blocks"), config.maxpool,
                options(level - 5));
        } else {
            // The official code pools here whatever `maxpool` says.
            down = nn::make<nn::utnet::DownBlock>(in, out, 2, true);
        }
        *downs[level - 1] = register_module("down" + std::to_string(level), down);
    }
    for (int64_t level = 0; level <= 3; ++level) {
        int64_t in = c << (level + 1), out = c << level;
        std::shared_ptr<nn::utnet::UpStage> up;
        if (has_level(config, level)) {
            up = nn::make<nn::utnet::UpBlockTrans>(in, out, 0, options(level - 4));
        } else {
            up = nn::make<nn::utnet::UpBlock>(in, out, 2);
        }
        *ups[level] = register_module("up" + std::to_string(4 - level), up);
    }
    mark_checkpointed();
    outc = register_module("outc", head(c, config.num_classes));
    if (config.aux_loss) {
        out1 = register_module("out1", head(8 * c, config.num_classes));
        out2 = register_module("out2", head(4 * c, config.num_classes));
        out3 = register_module("out3", head(2 * c, config.num_classes));
    }
}

void UTNet::mark_checkpointed() {
    // Every residual block, convolutional or transformer, in the order the forward runs them:
    // the full-resolution convolutions hold most of the activations.
    const std::vector<nn::Module*> stages{inc.get(),   down1.get(), down2.get(),
                                          down3.get(), down4.get(), up1.get(),
                                          up2.get(),   up3.get(),   up4.get()};
    int64_t index = 0;
    for (nn::Module* stage : stages) {
        for (const auto& [name, module] : stage->named_modules()) {
            if (auto* block = dynamic_cast<nn::utnet::BasicBlock*>(module))
                block->checkpointed = nn::is_checkpointed(config_.grad_checkpointing, index++);
            if (auto* block = dynamic_cast<nn::utnet::BasicTransBlock*>(module))
                block->checkpointed = nn::is_checkpointed(config_.grad_checkpointing, index++);
            if (auto* block = dynamic_cast<nn::utnet::BasicTransDecoderBlock*>(module))
                block->checkpointed = nn::is_checkpointed(config_.grad_checkpointing, index++);
        }
    }
}

void UTNet::check_input(const Tensor& x) const {
    LUMEN_CHECK(x.ndim() == 4 && x.size(1) == config_.in_chan && x.size(2) % 16 == 0 &&
                    x.size(3) % 16 == 0 && x.size(2) > 0 && x.size(3) > 0,
                "UTNet", "expects input (B, ", config_.in_chan,
                ", H, W) with H and W multiples of 16, got ", x.shape());
    if (!config_.rel_pos) return;
    const int64_t r = config_.reduce_size;
    for (int64_t level = 0; level <= 4; ++level) {
        int64_t H = x.size(2) >> level, W = x.size(3) >> level;
        LUMEN_CHECK(!has_level(config_, level) || (H % r == 0 && W % r == 0), "UTNet",
                    "the transformer at level ", level, " sees a ", H, " x ", W,
                    " map, which is not a multiple of reduce_size ", r, " (input ", x.shape(), ")");
    }
}

std::vector<Tensor> UTNet::run(const Tensor& x, bool aux) {
    check_input(x);
    const Dims size{x.size(2), x.size(3)};
    auto upsampled = [&](nn::Conv2d& conv, const Tensor& feature) {
        return interpolate(conv.forward(feature), size, {}, "bilinear", true);
    };
    Tensor x1 = inc->forward(x);
    Tensor x2 = down1->forward(x1);
    Tensor x3 = down2->forward(x2);
    Tensor x4 = down3->forward(x3);
    Tensor x5 = down4->forward(x4);
    std::vector<Tensor> outputs(aux ? 4 : 1);
    Tensor o = up1->forward(x5, x4);
    if (aux) outputs[3] = upsampled(*out1, o);
    o = up2->forward(o, x3);
    if (aux) outputs[2] = upsampled(*out2, o);
    o = up3->forward(o, x2);
    if (aux) outputs[1] = upsampled(*out3, o);
    outputs[0] = outc->forward(up4->forward(o, x1));
    return outputs;
}

Tensor UTNet::forward(const Tensor& x) { return run(x, false)[0]; }

std::vector<Tensor> UTNet::forward_outputs(const Tensor& x) { return run(x, config_.aux_loss); }

}  // namespace lumen::models
