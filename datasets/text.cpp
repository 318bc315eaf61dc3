// CSV parsing as a small state machine over the bytes, the tokenizer, and the vocabulary.
#include "datasets/text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "core/error.h"
#include "core/file_io.h"

namespace lumen::datasets {

namespace {

constexpr uint64_t kMaxCsvBytes = uint64_t(2) << 30;

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c >= 0x80; }

}  // namespace

size_t CsvTable::column(const std::string& name, const std::string& source) const {
    auto it = std::find(header.begin(), header.end(), name);
    if (it != header.end()) return size_t(it - header.begin());
    std::string names;
    for (size_t i = 0; i < header.size(); ++i) names += (i ? ", " : "") + header[i];
    LUMEN_FAIL("csv", source, ": no column '", name, "' (columns: ", names, ")");
}

CsvTable parse_csv(const std::string& text, char delimiter, const std::string& source) {
    CsvTable table;
    std::vector<std::string> row;
    std::string field;
    bool quoted = false, field_was_quoted = false, row_has_content = false;
    size_t line = 1, row_line = 1;
    auto end_field = [&] {
        row.push_back(std::move(field));
        field.clear();
        field_was_quoted = false;
    };
    auto end_row = [&] {
        end_field();
        if (table.header.empty()) {
            table.header = std::move(row);
        } else {
            LUMEN_CHECK(row.size() == table.header.size(), "csv", source, ": line ", row_line, ": ",
                        row.size(), " fields, but the header has ", table.header.size());
            table.rows.push_back(std::move(row));
        }
        row.clear();
        row_has_content = false;
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\n') ++line;
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                field += c;
            }
            continue;
        }
        const unsigned char u = static_cast<unsigned char>(c);
        LUMEN_CHECK(u >= 0x20 || c == '\t' || c == '\r' || c == '\n', "csv", source, ": line ",
                    line, ": control byte ", int(u), " (not a text file?)");
        if (c == '"') {
            LUMEN_CHECK(field.empty() && !field_was_quoted, "csv", source, ": line ", line,
                        ": a quote inside an unquoted field (quote the whole field, and double "
                        "the quotes inside it)");
            quoted = field_was_quoted = row_has_content = true;
        } else if (c == delimiter) {
            end_field();
            row_has_content = true;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i, ++line;
            if (row_has_content || !field.empty()) end_row();  // blank lines are skipped
            row_line = line;
        } else {
            LUMEN_CHECK(!field_was_quoted, "csv", source, ": line ", line,
                        ": text after the closing quote of a field");
            field += c;
            row_has_content = true;
        }
    }
    LUMEN_CHECK(!quoted, "csv", source, ": line ", row_line,
                ": a quoted field is not closed by the end of the file");
    if (row_has_content || !field.empty()) end_row();
    LUMEN_CHECK(!table.header.empty(), "csv", source, ": the file is empty (no header row)");
    return table;
}

CsvTable read_csv(const std::string& path, char delimiter) {
    if (delimiter == 0)
        delimiter = path.size() >= 4 && path.compare(path.size() - 4, 4, ".tsv") == 0 ? '\t' : ',';
    return parse_csv(read_file(path, "csv", kMaxCsvBytes, "a CSV file"), delimiter, path);
}

std::vector<std::string> tokenize(const std::string& text, bool lowercase) {
    std::vector<std::string> tokens;
    std::string word;
    auto flush = [&] {
        // A trailing apostrophe is punctuation, not part of the word ("dogs'" -> dogs ').
        while (!word.empty() && word.back() == '\'') {
            word.pop_back();
            if (!word.empty()) {
                tokens.push_back(word);
                tokens.push_back("'");
                word.clear();
                return;
            }
            tokens.push_back("'");
        }
        if (!word.empty()) tokens.push_back(word);
        word.clear();
    };
    for (size_t i = 0; i < text.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '<' && text.compare(i, 6, "<br />") == 0) {
            flush();
            i += 5;
            continue;
        }
        if (is_word_byte(c)) {
            word += char(lowercase && c < 0x80 ? std::tolower(c) : c);
        } else if (c == '\'' && !word.empty() && i + 1 < text.size() &&
                   is_word_byte(static_cast<unsigned char>(text[i + 1]))) {
            word += '\'';
        } else {
            flush();
            if (c > 0x20 && c < 0x7f) tokens.push_back(std::string(1, char(c)));
        }
    }
    flush();
    return tokens;
}

Vocabulary Vocabulary::build(const std::vector<std::vector<std::string>>& texts, int64_t max_size,
                             int64_t min_count) {
    LUMEN_CHECK(max_size == 0 || max_size >= 2, "Vocabulary",
                "max_size must be 0 (no cap) or at least 2 (<pad> and <unk>), got ", max_size);
    std::unordered_map<std::string, int64_t> counts;
    for (const auto& tokens : texts)
        for (const std::string& t : tokens) ++counts[t];
    std::vector<std::pair<std::string, int64_t>> order;
    for (auto& [token, count] : counts)
        if (count >= min_count && token != "<pad>" && token != "<unk>")
            order.push_back({token, count});
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    Vocabulary v;
    v.tokens_ = {"<pad>", "<unk>"};
    for (const auto& [token, count] : order) {
        if (max_size > 0 && int64_t(v.tokens_.size()) >= max_size) break;
        v.tokens_.push_back(token);
    }
    for (size_t i = 0; i < v.tokens_.size(); ++i) v.ids_[v.tokens_[i]] = int64_t(i);
    return v;
}

int64_t Vocabulary::id(const std::string& token) const {
    auto it = ids_.find(token);
    return it == ids_.end() ? kUnk : it->second;
}

const std::string& Vocabulary::token(int64_t id) const {
    LUMEN_CHECK(id >= 0 && id < size(), "Vocabulary", "id ", id, " is outside [0, ", size(), ")");
    return tokens_[size_t(id)];
}

Tensor Vocabulary::encode(const std::vector<std::string>& tokens, int64_t max_length) const {
    const size_t n = max_length > 0 ? std::min(tokens.size(), size_t(max_length)) : tokens.size();
    std::vector<int64_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = id(tokens[i]);
    return from_vector<int64_t>(ids, {int64_t(n)});
}

void Vocabulary::save(const std::string& path) const {
    std::string text;
    for (const std::string& t : tokens_) text += t + "\n";
    write_file_atomically(path, "Vocabulary", [&](FileWriter& out) { out.write(text); });
}

Vocabulary Vocabulary::load(const std::string& path) {
    const std::string text = read_file(path, "Vocabulary", uint64_t(1) << 30, "a vocabulary");
    Vocabulary v;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        LUMEN_CHECK(end != std::string::npos, "Vocabulary", path, ": the last line has no newline");
        std::string token = text.substr(start, end - start);
        LUMEN_CHECK(!token.empty() && token.find_first_of(" \t\r") == std::string::npos,
                    "Vocabulary", path, ": line ", v.tokens_.size() + 1,
                    " is empty or holds whitespace");
        LUMEN_CHECK(v.ids_.emplace(token, int64_t(v.tokens_.size())).second, "Vocabulary", path,
                    ": token '", token.substr(0, 80), "' repeats at line ", v.tokens_.size() + 1);
        v.tokens_.push_back(std::move(token));
        start = end + 1;
    }
    LUMEN_CHECK(v.tokens_.size() >= 2 && v.tokens_[0] == "<pad>" && v.tokens_[1] == "<unk>",
                "Vocabulary", path, ": must start with <pad> and <unk>");
    return v;
}

}  // namespace lumen::datasets
