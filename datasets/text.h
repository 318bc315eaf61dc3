// Text classification data: CSV/TSV files (RFC 4180: quoted fields, "" inside quotes, embedded
// newlines, LF or CRLF), a word tokenizer, and a vocabulary built on the training split and
// saved beside the run so that evaluation and prediction tokenize the same way.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace lumen::datasets {

struct CsvTable {
    std::vector<std::string> header;             // the first row
    std::vector<std::vector<std::string>> rows;  // every other row, as many fields as header
    // The index of a column by name; throws [csv] naming the file's columns.
    size_t column(const std::string& name, const std::string& source) const;
};

// Reads a CSV (',') or TSV ('\t': a ".tsv" file, or `delimiter`) file whose first row names the
// columns. Throws lumen::Error "[csv] <path>: line <n>: <problem>" for a row with another number
// of fields than the header, an unterminated quote, a quote inside an unquoted field, or a file
// over 2 GiB or not UTF-8 clean in its bytes < 0x20 (other than tab, CR and LF).
CsvTable read_csv(const std::string& path, char delimiter = 0);
// The same from text in memory; `source` names it in messages.
CsvTable parse_csv(const std::string& text, char delimiter, const std::string& source);

// Words for the vocabulary: lower-cased (ASCII letters) when `lowercase`; HTML line breaks
// ("<br />", IMDB's) read as spaces; tokens are the maximal runs of letters, digits and
// non-ASCII bytes (UTF-8 letters stay whole), with an apostrophe inside a word kept ("don't"),
// and every other printable ASCII character (punctuation) a token of its own; whitespace and
// control characters separate tokens and are dropped.
// "Don't stop... (2 <br />times)!" -> don't stop . . . ( 2 times ) !
std::vector<std::string> tokenize(const std::string& text, bool lowercase = true);

// Token ids: 0 "<pad>", 1 "<unk>", then the tokens of the training texts seen at least
// `min_count` times, the most frequent first (ties in byte order of the token), at most
// `max_size` ids in all (0: no cap).
class Vocabulary {
  public:
    static constexpr int64_t kPad = 0, kUnk = 1;
    static Vocabulary build(const std::vector<std::vector<std::string>>& texts, int64_t max_size,
                            int64_t min_count);
    int64_t id(const std::string& token) const;  // kUnk when absent
    const std::string& token(int64_t id) const;
    int64_t size() const { return int64_t(tokens_.size()); }
    // The ids of `tokens`, truncated to `max_length` (0: no limit), as int64.
    Tensor encode(const std::vector<std::string>& tokens, int64_t max_length = 0) const;
    // One token per line in id order (UTF-8 text; tokens never contain whitespace), written
    // atomically; load() checks the first two lines are <pad> and <unk> and no token repeats.
    void save(const std::string& path) const;
    static Vocabulary load(const std::string& path);

  private:
    std::vector<std::string> tokens_;
    std::map<std::string, int64_t> ids_;
};

}  // namespace lumen::datasets
