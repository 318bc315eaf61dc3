// Text data: CSV/TSV parsing (quotes, doubled quotes, embedded newlines, CRLF, blank lines),
// its errors with line numbers, the tokenizer, and the vocabulary (counts, cap, order, <pad> and
// <unk>, truncation, save and load).
#include <fstream>

#include "datasets/text.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::datasets;

TEST_CASE("csv: quoted fields, embedded newlines, CRLF and TSV", "[datasets][text]") {
    CsvTable t = parse_csv(
        "label,text\r\n1,\"a \"\"great\"\" film,\nreally\"\r\n\n0,plain text\n2,\n", ',', "t.csv");
    REQUIRE(t.header == std::vector<std::string>{"label", "text"});
    REQUIRE(t.rows.size() == 3);
    CHECK(t.rows[0][1] == "a \"great\" film,\nreally");
    CHECK(t.rows[1] == std::vector<std::string>{"0", "plain text"});
    CHECK(t.rows[2] == std::vector<std::string>{"2", ""});
    CHECK(t.column("text", "t.csv") == 1);
    require_error([&] { t.column("body", "t.csv"); },
                  {"[csv] t.csv: no column 'body' (columns: label, text)"});
    CsvTable tsv = parse_csv("a\tb\nx,y\tz\n", '\t', "t.tsv");
    CHECK(tsv.rows[0] == std::vector<std::string>{"x,y", "z"});
    TempDir dir("csv");
    std::ofstream(dir.file("d.tsv")) << "a\tb\n1\t2\n";
    CHECK(read_csv(dir.file("d.tsv")).rows[0][1] == "2");
}

TEST_CASE("csv: malformed files name the line", "[datasets][text][hostile]") {
    require_error([&] { parse_csv("a,b\n1,2\n3\n", ',', "x.csv"); },
                  {"[csv] x.csv: line 3: 1 fields, but the header has 2"});
    require_error([&] { parse_csv("a,b\n1,\"open\n\n", ',', "x.csv"); },
                  {"line 2: a quoted field is not closed by the end of the file"});
    require_error([&] { parse_csv("a,b\n1,ab\"c\n", ',', "x.csv"); },
                  {"line 2: a quote inside an unquoted field"});
    require_error([&] { parse_csv("a,b\n1,\"ab\"c\n", ',', "x.csv"); },
                  {"line 2: text after the closing quote"});
    require_error([&] { parse_csv(std::string("a,b\n1,\x01\n"), ',', "x.csv"); },
                  {"line 2: control byte 1"});
    require_error([&] { parse_csv("", ',', "x.csv"); }, {"the file is empty"});
}

TEST_CASE("tokenize: lower-case words, punctuation tokens, HTML breaks", "[datasets][text]") {
    CHECK(tokenize("Don't stop... (2 <br />times)!") ==
          std::vector<std::string>{"don't", "stop", ".", ".", ".", "(", "2", "times", ")", "!"});
    CHECK(tokenize("The dogs' bowl", false) ==
          std::vector<std::string>{"The", "dogs", "'", "bowl"});
    CHECK(tokenize("caf\xc3\xa9 na\xc3\xafve\tA-B") ==
          std::vector<std::string>{"caf\xc3\xa9", "na\xc3\xafve", "a", "-", "b"});
    CHECK(tokenize("  \n ").empty());
}

TEST_CASE("vocabulary: counts, cap, order, encode, save and load", "[datasets][text]") {
    std::vector<std::vector<std::string>> texts = {tokenize("b a c a b a"), tokenize("d c b"),
                                                   tokenize("e")};
    Vocabulary v = Vocabulary::build(texts, 5, 2);  // a 3, b 3, c 2 (d, e once)
    REQUIRE(v.size() == 5);
    CHECK(v.token(0) == "<pad>");
    CHECK(v.token(1) == "<unk>");
    CHECK(v.token(2) == "a");  // a and b tie at 3: byte order
    CHECK(v.token(3) == "b");
    CHECK(v.token(4) == "c");
    CHECK(v.id("d") == Vocabulary::kUnk);
    CHECK(v.encode(tokenize("a d c b"), 3).to_vector<int64_t>() == std::vector<int64_t>{2, 1, 4});
    CHECK(Vocabulary::build(texts, 3, 1).size() == 3);
    CHECK(Vocabulary::build(texts, 0, 1).size() == 7);
    TempDir dir("vocab");
    v.save(dir.file("vocab.txt"));
    Vocabulary back = Vocabulary::load(dir.file("vocab.txt"));
    CHECK(back.size() == 5);
    CHECK(back.id("c") == 4);
    std::ofstream(dir.file("bad.txt")) << "<pad>\n<unk>\na\na\n";
    require_error([&] { Vocabulary::load(dir.file("bad.txt")); },
                  {"[Vocabulary]", "token 'a' repeats at line 4"});
    std::ofstream(dir.file("bad2.txt")) << "x\ny\n";
    require_error([&] { Vocabulary::load(dir.file("bad2.txt")); },
                  {"must start with <pad> and <unk>"});
    require_error([&] { Vocabulary::build(texts, 1, 1); }, {"[Vocabulary]", "max_size"});
}
