// The strict parser: nlohmann's own DOM builder, with depth and duplicate-key checks added in
// front of its SAX events (the callback form of nlohmann's parser rescans the parent on every
// closing bracket, which is quadratic, so it is not used).
#include "core/json_strict.h"

#include <unordered_set>
#include <vector>

#include "core/error.h"

namespace lumen {

namespace {

using Json = nlohmann::json;
using DomBuilder = nlohmann::detail::json_sax_dom_parser<Json>;

struct TooDeep {};
struct DuplicateKey {
    std::string path;
};

// Hides DomBuilder's handlers of the events it checks; sax_parse is a template on the handler
// type, so these are the ones called.
class StrictBuilder : public DomBuilder {
  public:
    StrictBuilder(Json& result, int max_depth) : DomBuilder(result, true), max_depth_(max_depth) {}

    bool start_object(std::size_t length) {
        enter();
        objects_.push_back({});
        return DomBuilder::start_object(length);
    }
    bool key(std::string& name) {
        Object& object = objects_.back();
        if (!object.keys.insert(name).second) throw DuplicateKey{path_to(name)};
        object.last_key = name;
        return DomBuilder::key(name);
    }
    bool end_object() {
        objects_.pop_back();
        --depth_;
        return DomBuilder::end_object();
    }
    bool start_array(std::size_t length) {
        enter();
        return DomBuilder::start_array(length);
    }
    bool end_array() {
        --depth_;
        return DomBuilder::end_array();
    }

  private:
    struct Object {
        std::unordered_set<std::string> keys;
        std::string last_key;
    };
    void enter() {
        if (++depth_ > max_depth_) throw TooDeep{};
    }
    std::string path_to(const std::string& name) const {
        std::string path;
        for (size_t i = 0; i + 1 < objects_.size(); ++i) path += objects_[i].last_key + ".";
        return path + name;
    }
    int max_depth_;
    int depth_ = 0;
    std::vector<Object> objects_;
};

std::string excerpt(std::string text, size_t max_chars) {
    if (text.size() > max_chars) text = text.substr(0, max_chars) + "...";
    return text;
}

}  // namespace

Json parse_json_strict(std::string_view text, const std::string& owner, const std::string& source,
                       int max_depth) {
    Json result;
    StrictBuilder builder(result, max_depth);
    try {
        Json::sax_parse(text.begin(), text.end(), &builder);
    } catch (const TooDeep&) {
        LUMEN_FAIL(owner, source, ": JSON nested deeper than ", max_depth, " levels");
    } catch (const DuplicateKey& e) {
        LUMEN_FAIL(owner, source, ": duplicate key '", excerpt(e.path, 200), "'");
    } catch (const Json::exception& e) {
        LUMEN_FAIL(owner, source, ": not valid JSON: ", excerpt(e.what(), 300));
    }
    return result;
}

std::string json_excerpt(const Json& value, size_t max_chars) {
    // dump() of a value from parse_json_strict recurses at most max_depth levels; its length
    // is bounded by the text's, so cutting afterwards is linear.
    return excerpt(value.dump(-1, ' ', false, Json::error_handler_t::replace), max_chars);
}

}  // namespace lumen
