#include "hardware_models/yaml_text.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

namespace cuboid::hw {
namespace {

// The offset of the first byte that breaks UTF-8 (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or nothing when the text is valid.
std::optional<std::size_t> first_invalid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<unsigned char>(s[i]);
        std::size_t length = 0;
        unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
        if (b < 0x80) length = 1;
        else if (b >= 0xC2 && b <= 0xDF) length = 2;
        else if (b == 0xE0) length = 3, lo = 0xA0;
        else if (b >= 0xE1 && b <= 0xEC) length = 3;
        else if (b == 0xED) length = 3, hi = 0x9F;
        else if (b >= 0xEE && b <= 0xEF) length = 3;
        else if (b == 0xF0) length = 4, lo = 0x90;
        else if (b >= 0xF1 && b <= 0xF3) length = 4;
        else if (b == 0xF4) length = 4, hi = 0x8F;
        else return i;
        if (i + length > s.size()) return i;
        for (std::size_t k = 1; k < length; ++k) {
            const auto c = static_cast<unsigned char>(s[i + k]);
            if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return i;
        }
        i += length;
    }
    return std::nullopt;
}

// The offset of the first control character that YAML does not allow in a stream (YAML 1.2
// section 5.1, c-printable: tab, line feed and carriage return are the only C0 controls; DEL is
// out too). yaml-cpp reads some of them as other characters (a NUL became U+0085 halfway through
// a UTF-8 sequence), so a name could reach the JSON output as invalid UTF-8.
std::optional<std::size_t> first_unprintable(std::string_view s) {
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto b = static_cast<unsigned char>(s[i]);
        if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F) return i;
    }
    return std::nullopt;
}

int line_of(const YAML::Node& n) { return n.Mark().is_null() ? 0 : n.Mark().line + 1; }

std::string child_key(const std::string& parent, const std::string& name) {
    return parent.empty() ? name : parent + "." + name;
}

// How deep the walks below go into nested maps and lists. No input of cuboid nests more than a
// few levels; an alias can make yaml-cpp's node graph a cycle (`&a` ... `*a`), which a walk
// without a bound would follow until the stack overflows.
constexpr int kMaxNesting = 64;
// How many nodes a walk visits at most: aliases of aliases can make a graph of a few lines
// exponentially large within that depth. cuboid's inputs hold a few thousand nodes; at 1,000,000
// a walk of such a graph took over 10 s in the checked build (a fuzz finding).
constexpr std::size_t kMaxNodes = 100'000;

// Whether a value is written on `line` (1-based) in `node`; if so, `path` gets the keys and list
// indices leading to the first one, innermost first. The path is built only for the match: a
// walk of many nodes then costs no string per node.
bool find_line(const YAML::Node& node, int line, std::vector<std::string>& path, std::size_t& visited, int depth) {
    if (depth > kMaxNesting || ++visited > kMaxNodes) return false;
    if (node.IsScalar()) return line_of(node) == line;
    if (node.IsSequence())
        for (std::size_t i = 0; i < node.size(); ++i)
            if (find_line(node[i], line, path, visited, depth + 1)) {
                path.push_back(fmt::format("[{}]", i));
                return true;
            }
    if (node.IsMap())
        for (const auto& entry : node)
            if (line_of(entry.first) == line || find_line(entry.second, line, path, visited, depth + 1)) {
                path.push_back(entry.first.IsScalar() ? entry.first.Scalar() : "");
                return true;
            }
    return false;
}

// The dotted key of the first value written on `line` (1-based), or "" when none is.
std::string key_on_line(const YAML::Node& node, int line, std::size_t& visited) {
    std::vector<std::string> path;
    if (!find_line(node, line, path, visited, 0)) return "";
    std::string key;
    for (auto it = path.rbegin(); it != path.rend(); ++it)
        key += (*it)[0] == '[' || key.empty() ? *it : "." + *it;
    return key;
}

// yaml-cpp 0.7's LoadAll never returns on some malformed text (a stray ',' or ',{' at the top
// level: the parser keeps starting a document at a token it cannot consume, allocating a node
// each time; fixed upstream after 0.8). Reads the documents' start events first, without
// building nodes, and refuses the text where a document starts where the previous one did.
class DocumentStarts : public YAML::EventHandler {
public:
    void OnDocumentStart(const YAML::Mark& mark) override { last = mark; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
    YAML::Mark last = YAML::Mark::null_mark();
};

void check_documents_end(const std::string& text, const std::string& file) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts starts;
    int previous = -1;
    while (parser.HandleNextDocument(starts)) {
        if (starts.last.pos == previous)
            throw InputError({file, starts.last.line + 1, ""},
                             fmt::format("YAML syntax error (column {}): unexpected text where a value or key "
                                         "should start",
                                         starts.last.column + 1));
        previous = starts.last.pos;
    }
}

// The key written on `line`: the text is read again with every byte that is not ASCII made a
// '?', only to name the key in the message.
std::string key_at(std::string text, int line) {
    for (char& c : text)
        if (const auto b = static_cast<unsigned char>(c); b >= 0x7F || (b < 0x20 && c != '\t' && c != '\n' && c != '\r'))
            c = '?';
    try {
        check_documents_end(text, "");
        std::size_t visited = 0;  // over all documents
        for (const auto& d : YAML::LoadAll(text))
            if (auto k = key_on_line(d, line, visited); !k.empty()) return k;
    } catch (const YAML::Exception&) {
    } catch (const InputError&) {
    }
    return "";
}

void check_file_utf8(const std::string& text, const std::string& file) {
    const auto not_utf8 = first_invalid_utf8(text);
    const auto unprintable = not_utf8 ? std::nullopt : first_unprintable(text);
    const auto bad = not_utf8 ? not_utf8 : unprintable;
    if (!bad) return;
    int line = 1;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < *bad; ++i)
        if (text[i] == '\n') ++line, line_start = i + 1;
    throw InputError({file, line, key_at(text, line)},
                     fmt::format(fmt::runtime(not_utf8 ? "not valid UTF-8 (byte 0x{:02X} at column {}); save the file "
                                                         "as UTF-8"
                                                       : "a control character (byte 0x{:02X} at column {}) that YAML "
                                                         "does not allow; only tab, line feed and carriage return are"),
                                 static_cast<unsigned char>(text[*bad]), *bad - line_start + 1));
}

// Whether the quoted scalar that opens at text[pos] has its closing quote.
bool quote_closed(const std::string& text, std::size_t pos) {
    const char quote = text[pos];
    for (std::size_t i = pos + 1; i < text.size(); ++i) {
        if (quote == '"' && text[i] == '\\') ++i;  // an escape: the next character is not the end
        else if (text[i] == quote) {
            if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') ++i;  // '' is a quote inside
            else return true;
        }
    }
    return false;
}

class TreeCheck {
public:
    TreeCheck(const std::string& text, const std::string& file) : text_(text), file_(file) {}

    void check(const YAML::Node& node, const std::string& key, int depth = 0) const {
        if (depth > kMaxNesting || ++visited_ > kMaxNodes)
            throw InputError({file_, line_of(node), key},
                             fmt::format("nested more than {} levels deep or more than {} values (an alias "
                                         "that holds itself?)",
                                         kMaxNesting, kMaxNodes));
        if (node.IsScalar()) return check_scalar(node, key);
        if (node.IsSequence()) {
            for (std::size_t i = 0; i < node.size(); ++i) check(node[i], fmt::format("{}[{}]", key, i), depth + 1);
            return;
        }
        if (!node.IsMap()) return;
        std::map<std::string, int> first_line;
        for (const auto& entry : node) {
            const YAML::Node& k = entry.first;
            check(k, key, depth + 1);
            const std::string name = k.IsScalar() ? k.Scalar() : "";
            const std::string path = child_key(key, name);
            if (k.IsScalar()) {
                const auto [seen, inserted] = first_line.emplace(name, line_of(k));
                if (!inserted)
                    throw InputError({file_, line_of(k), path},
                                     fmt::format("duplicate key (first written at line {})", seen->second));
            }
            check(entry.second, path, depth + 1);
        }
    }

private:
    void check_scalar(const YAML::Node& node, const std::string& key) const {
        if (node.Mark().is_null() || node.Tag() != "!") return;  // "!" marks a quoted or block scalar
        const auto pos = static_cast<std::size_t>(node.Mark().pos);
        if (pos >= text_.size() || (text_[pos] != '"' && text_[pos] != '\'')) return;
        if (!quote_closed(text_, pos))
            throw InputError({file_, line_of(node), key},
                             fmt::format("the string opened with {} at column {} is never closed", text_[pos],
                                         node.Mark().column + 1));
    }

    const std::string& text_;
    const std::string& file_;
    mutable std::size_t visited_ = 0;  // nodes checked so far, bounded by kMaxNodes
};

}  // namespace

void check_utf8(std::string_view text, const InputLocation& where) {
    if (const auto bad = first_invalid_utf8(text))
        throw InputError(where, fmt::format("not valid UTF-8 (byte 0x{:02X} at offset {})",
                                            static_cast<unsigned char>(text[*bad]), *bad));
    if (const auto bad = first_unprintable(text))
        throw InputError(where, fmt::format("a control character (byte 0x{:02X} at offset {}) that YAML does not allow",
                                            static_cast<unsigned char>(text[*bad]), *bad));
}

std::vector<YAML::Node> load_yaml_documents(const std::string& text, const std::string& file) {
    check_file_utf8(text, file);
    std::vector<YAML::Node> documents;
    try {
        check_documents_end(text, file);
        documents = YAML::LoadAll(text);
    } catch (const YAML::Exception& e) {
        throw InputError({file, e.mark.line >= 0 ? e.mark.line + 1 : 0, ""},
                         fmt::format("YAML syntax error (column {}): {}", e.mark.column + 1, e.msg));
    }
    const TreeCheck tree(text, file);
    for (const auto& d : documents) tree.check(d, "");
    return documents;
}

YAML::Node load_yaml_document(const std::string& text, const std::string& file, const std::string& what) {
    const std::vector<YAML::Node> documents = load_yaml_documents(text, file);
    if (documents.size() > 1)
        throw InputError({file, line_of(documents[1]), ""},
                         fmt::format("holds {} YAML documents ('---'); {} is one", documents.size(), what));
    return documents.empty() ? YAML::Node() : documents.front();
}

}  // namespace cuboid::hw
