// The table layouts, whose labels sit in a CSV: bags (multiple-instance learning on
// whole-slide images, as CLAM and TransMIL ship features: labels.csv with slide, label, split,
// and one feature file per slide in bags/) and text_csv (labelled text, as the AG News and IMDB
// CSVs: train.csv and test.csv with label and text columns).
#include <algorithm>

#include "core/error.h"
#include "core/file_io.h"
#include "datasets/layouts_common.h"
#include "datasets/npy.h"
#include "datasets/text.h"

namespace lumen::datasets::layout_detail {

namespace {

// A CSV row on its way to a case: the case (class_id unset) and its label as written.
struct Row {
    CaseInfo info;
    std::string label, text;
    std::string at;  // "<file>: row <n>" for messages
};

// The split of a row: its `split` column when the table has one, else train.
std::string row_split(const CsvTable& table, size_t r, const std::string& at) {
    auto column = std::find(table.header.begin(), table.header.end(), "split");
    if (column == table.header.end()) return "train";
    const std::string& split = table.rows[r][size_t(column - table.header.begin())];
    LUMEN_CHECK(split == "train" || split == "val" || split == "test", "layout", at, ": split '",
                split, "' (expected train, val or test)");
    return split;
}

// Numbers the labels (names sorted over the train split), moves val_fraction of the train
// rows to val (in `rows` too) and returns the cases of each split, with their class ids.
std::map<std::string, std::vector<CaseInfo>> label_rows(
    std::map<std::string, std::vector<Row>>& rows, const LayoutOptions& options,
    const std::string& source, LayoutData& data) {
    std::vector<std::string> train_labels;
    for (const Row& row : rows["train"]) train_labels.push_back(row.label);
    LUMEN_CHECK(!train_labels.empty(), "layout", where(options),
                ": the train split is empty (looked for ", data.looked_for["train"], ")");
    const LabelMap labels(train_labels, source);
    for (auto& [name, split] : rows)
        for (Row& row : split) row.info.class_id = labels.id(row.label, row.at);
    split_off_val(rows, options);
    data.class_names = labels.names();
    data.num_classes = int64_t(labels.names().size());
    std::map<std::string, std::vector<CaseInfo>> cases;
    for (const auto& [name, split] : rows)
        for (const Row& row : split) cases[name].push_back(row.info);
    return cases;
}

}  // namespace

std::map<std::string, std::vector<CaseInfo>> labelled_csv_cases(
    const std::string& csv, const std::string& key, const LayoutOptions& options, LayoutData& data,
    const std::function<CaseInfo(const std::string&, const std::string&)>& make) {
    const CsvTable table = read_csv(csv);
    const size_t column = table.column(key, csv), label = table.column("label", csv);
    for (const char* split : {"train", "val", "test"})
        data.looked_for[split] = "rows of split '" + std::string(split) + "' in " + csv;
    std::map<std::string, std::vector<Row>> rows;
    for (size_t r = 0; r < table.rows.size(); ++r) {
        const std::string at = csv + ": row " + std::to_string(r + 2);
        rows[row_split(table, r, at)].push_back(
            {make(table.rows[r][column], at), table.rows[r][label], "", at});
    }
    return label_rows(rows, options, csv, data);
}

LayoutData load_bags(const LayoutOptions& options) {
    LayoutData data{options.layout, options.root};
    const fs::path bags = fs::path(options.root) / "bags";
    require_dir(bags, options, "one .npy or .safetensors feature file per slide");
    const std::string csv = options.manifest.empty()
                                ? (fs::path(options.root) / "labels.csv").string()
                                : options.manifest;
    std::map<std::string, std::vector<CaseInfo>> splits = labelled_csv_cases(
        csv, "slide", options, data, [&](const std::string& name, const std::string& at) {
            fs::path file = bags / (name + ".npy");
            if (!fs::is_regular_file(file)) file = bags / (name + ".safetensors");
            LUMEN_CHECK(!name.empty() && fs::is_regular_file(file), "layout", at, ": no bag ",
                        (bags / name).string(), ".npy or .safetensors for slide '", name, "'");
            return CaseInfo{name, file.string(), "", -1};
        });
    // Every bag must have the first train bag's feature size D; N varies.
    const int64_t features = read_feature_bag(splits["train"].front().image).size(1);
    const std::string reference = splits["train"].front().image;
    data.feature_dim = features;
    for (auto& [name, cases] : splits)
        add_split(data, name, std::move(cases), [features, reference](const CaseInfo& c) {
            Tensor bag = read_feature_bag(c.image);
            LUMEN_CHECK(bag.size(1) == features, "layout", c.image, ": ", bag.size(1),
                        " features per instance but ", reference, " has ", features);
            return Example{bag, class_label(c.class_id)};
        });
    return data;
}

LayoutData load_text_csv(const LayoutOptions& options) {
    LayoutData data{options.layout, options.root};
    require_dir(options.root, options, "train.csv and test.csv");
    std::map<std::string, std::vector<Row>> rows;
    for (const char* split : {"train", "val", "test"}) {
        const fs::path csv = fs::path(options.root) / (std::string(split) + ".csv");
        const fs::path tsv = fs::path(options.root) / (std::string(split) + ".tsv");
        data.looked_for[split] = csv.string() + " or " + tsv.string();
        const fs::path file = fs::is_regular_file(csv) ? csv : tsv;
        if (!fs::is_regular_file(file)) continue;
        const CsvTable table = read_csv(file.string());
        const size_t label = table.column(options.label_column, file.string());
        const size_t text = table.column(options.text_column, file.string());
        std::vector<Row>& split_rows = rows[split];
        for (size_t r = 0; r < table.rows.size(); ++r) {
            const std::string name = file.filename().string() + ":" + std::to_string(r + 1);
            split_rows.push_back({{name, "", "", -1},
                                  table.rows[r][label],
                                  table.rows[r][text],
                                  file.string() + ": row " + std::to_string(r + 2)});
        }
    }
    // label_rows splits `rows` too, so rows[name][i] is the text of splits[name][i].
    std::map<std::string, std::vector<CaseInfo>> splits =
        label_rows(rows, options, data.looked_for["train"], data);

    // The vocabulary sees the train split only, after val was taken out of it.
    if (options.vocabulary) {
        data.vocabulary = options.vocabulary;
    } else {
        std::vector<std::vector<std::string>> texts;
        for (const Row& row : rows["train"]) texts.push_back(tokenize(row.text, options.lowercase));
        data.vocabulary = std::make_shared<const Vocabulary>(
            Vocabulary::build(texts, options.max_vocab, options.min_count));
    }
    for (auto& [name, cases] : splits) {
        LUMEN_CHECK(!cases.empty(), "layout", where(options), ": the ", name, " split is empty (",
                    data.looked_for[name], ")");
        auto examples = std::make_shared<std::vector<Example>>();
        for (size_t i = 0; i < cases.size(); ++i) {
            const std::vector<std::string> tokens = tokenize(rows[name][i].text, options.lowercase);
            examples->push_back({data.vocabulary->encode(tokens, options.max_length),
                                 class_label(cases[i].class_id)});
        }
        auto get = [examples](int64_t i) { return (*examples)[size_t(i)]; };
        data.splits[name] = {std::make_shared<FunctionDataset>(int64_t(cases.size()), get),
                             std::move(cases)};
    }
    return data;
}

}  // namespace lumen::datasets::layout_detail

namespace lumen::datasets {

std::vector<std::pair<std::string, Tensor>> read_text_inputs(const LayoutOptions& options,
                                                             const std::string& path) {
    LUMEN_CHECK(options.vocabulary != nullptr, "layout", path,
                ": text inputs need the run's vocabulary");
    auto encode = [&](const std::string& text) {
        std::vector<std::string> tokens = tokenize(text, options.lowercase);
        if (tokens.empty()) return from_vector(std::vector<int64_t>{Vocabulary::kUnk}, {1});
        return options.vocabulary->encode(tokens, options.max_length);
    };
    std::vector<std::pair<std::string, Tensor>> inputs;
    const std::string ext = layout_detail::extension_of(path);
    if (ext != ".csv" && ext != ".tsv") {
        // A plain text file: one text (CSV's bound, 2 GiB).
        inputs.emplace_back(path, encode(read_file(path, "layout", uint64_t(2) << 30, "a text")));
        return inputs;
    }
    const CsvTable table = read_csv(path);
    const size_t text = table.column(options.text_column, path);
    for (size_t r = 0; r < table.rows.size(); ++r)
        inputs.emplace_back(path + ":" + std::to_string(r + 1), encode(table.rows[r][text]));
    return inputs;
}

}  // namespace lumen::datasets
