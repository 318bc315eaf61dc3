// The attention registry. Built-in variants are added here by name on first use (a static
// library would drop self-registering objects nobody references); variants defined outside
// the library register themselves with AttentionRegistration.
#include "nn/attention/attention.h"

#include <map>
#include <mutex>

#include "nn/attention/dgsa.h"
#include "nn/attention/diff_attn.h"
#include "nn/attention/gdla.h"
#include "nn/attention/hyena.h"
#include "nn/attention/linear_attention.h"
#include "nn/attention/mamba_vision.h"
#include "nn/attention/mhsa.h"
#include "nn/attention/prenorm_softmax_attention.h"
#include "nn/attention/pvt_baselines.h"
#include "nn/attention/seqnorm_attention.h"
#include "nn/attention/sima_attention.h"
#include "nn/attention/spatial_reduction_attention.h"
#include "nn/attention/utnet_attention.h"
#include "nn/attention/vitpt_sima_attention.h"
#include "nn/attention/window_attention.h"

namespace lumen::nn::attention {

namespace {

std::map<std::string, AttentionFactory>& registry() {
    static std::map<std::string, AttentionFactory> factories;
    return factories;
}

std::mutex& registry_mutex() {
    static std::mutex mutex;
    return mutex;
}

// One line per built-in variant: its name and its factory, declared in its header.
void add_builtins(std::map<std::string, AttentionFactory>& factories) {
    factories["mhsa"] = make_mhsa_attention;
    factories["diff"] = make_diff_attention;
    factories["dgsa"] = make_dgsa_attention;
    factories["utnet"] = make_utnet_attention;
    factories["vitpt_softmax"] = make_vitpt_softmax_attention;
    factories["seqnorm"] = make_seqnorm_attention;
    factories["vitpt_sima"] = make_vitpt_sima_attention;
    factories["sima"] = make_sima_attention;
    factories["linear"] = make_linear_attention;
    factories["gdla"] = make_gdla_attention;
    factories["pvt_sa"] = make_pvt_sa_attention;
    factories["pvt_da"] = make_pvt_da_attention;
    factories["pvt_sra"] = make_pvt_sra_attention;
    factories["hyena"] = make_hyena_attention;
    factories["mamba"] = make_mamba_attention;
    factories["swin_window"] = make_swin_window_attention;
}

void ensure_builtins() {
    static std::once_flag once;
    std::call_once(once, [] {
        std::lock_guard<std::mutex> lock(registry_mutex());
        add_builtins(registry());
    });
}

}  // namespace

double AttentionConfig::option(const std::string& name, double fallback) const {
    for (const auto& [key, value] : options)
        if (key == name) return value;
    return fallback;
}

void register_attention(const std::string& name, AttentionFactory factory) {
    ensure_builtins();
    std::lock_guard<std::mutex> lock(registry_mutex());
    LUMEN_CHECK(!registry().count(name), "attention", "a variant named '", name,
                "' is already registered");
    registry()[name] = std::move(factory);
}

std::vector<std::string> attention_names() {
    ensure_builtins();
    std::lock_guard<std::mutex> lock(registry_mutex());
    std::vector<std::string> names;
    for (const auto& [name, unused] : registry()) names.push_back(name);
    return names;
}

std::shared_ptr<Attention> make_attention(const AttentionConfig& config) {
    ensure_builtins();
    AttentionFactory factory;
    {
        std::lock_guard<std::mutex> lock(registry_mutex());
        auto it = registry().find(config.type);
        if (it != registry().end()) factory = it->second;
    }
    if (!factory) {
        std::string known;
        for (const std::string& name : attention_names())
            known += (known.empty() ? "" : ", ") + name;
        LUMEN_FAIL("attention", "unknown variant '", config.type, "' (registered: ", known, ")");
    }
    return factory(config);
}

}  // namespace lumen::nn::attention
