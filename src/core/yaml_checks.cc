#include "trainscope/core/yaml_checks.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include "trainscope/core/error.h"
#include "trainscope/core/nesting.h"
#include "trainscope/core/util.h"

namespace trainscope::core {

namespace {

int line_of(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 1; }

// Counts a document's events and nothing more.
class Events final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// The most documents a file may hold before it is refused. yaml-cpp 0.7's
// LoadAll never ends on some malformed text (a lone ",": yaml-cpp issue
// 1040), handing out empty documents while its memory grows; the documents
// are counted first with a parser of our own, which stops there.
constexpr int kMaxDocuments = 16;

void count_documents(std::string_view text, const std::string& source) {
  std::stringstream in{std::string(text)};
  YAML::Parser parser(in);
  Events events;
  int docs = 0;
  while (parser.HandleNextDocument(events))
    if (++docs > kMaxDocuments)
      fail(ErrorKind::kUsage,
           "{}: invalid YAML: more than {} documents, or text the YAML reader cannot end (a "
           "stray ',' at the top?); keep one document per file",
           source, kMaxDocuments);
}

// Every document after the first must be empty (a trailing `---`).
std::vector<YAML::Node> load_documents(std::string_view text, const std::string& source) {
  std::vector<YAML::Node> docs;
  try {
    count_documents(text, source);
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::DeepRecursion& e) {
    fail(ErrorKind::kUsage, "{}: line {}: nested deeper than {} levels", source, e.mark.line + 1,
         kMaxNesting);
  } catch (const YAML::Exception& e) {
    fail(ErrorKind::kUsage, "{}: invalid YAML at line {}: {}", source, e.mark.line + 1,
         escape_for_display(e.msg));
  }
  for (size_t i = 1; i < docs.size(); ++i)
    if (!docs[i].IsNull())
      fail(ErrorKind::kUsage,
           "{}: line {}: a second YAML document (after '---') would be ignored; keep one "
           "document per file",
           source, line_of(docs[i]));
  return docs;
}

// Refuses a key that a mapping already holds, naming both lines.
void check_keys(const YAML::Node& map, const std::string& source) {
  std::map<std::string, int> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) continue;
    auto [it, fresh] = seen.emplace(kv.first.Scalar(), line_of(kv.first));
    if (!fresh)
      fail(ErrorKind::kUsage,
           "{}: line {}: key '{}' is given twice in one mapping (first at line {}); YAML would "
           "keep only one value, remove the other",
           source, line_of(kv.first), escape_for_display(kv.first.Scalar()), it->second);
  }
}

// A tag of YAML's core schema ("!!str", "!!int", ...), or none: anything
// else would be ignored by the reader: "!python/object", and YAML 1.1's
// "!!binary" (the text taken as base64 text), "!!python/object:..." or
// "!!timestamp" under yaml.org's prefix (twenty-ninth hunt, A-D3).
void check_tag(const YAML::Node& node, const std::string& source) {
  static constexpr std::string_view kCore = "tag:yaml.org,2002:";
  const std::string& tag = node.Tag();
  if (tag.empty() || tag == "?" || tag == "!") return;
  if (tag.starts_with(kCore)) {
    const std::string_view type = std::string_view(tag).substr(kCore.size());
    for (std::string_view ok : {"str", "int", "float", "bool", "null", "map", "seq"})
      if (type == ok) return;
    fail(ErrorKind::kUsage,
         "{}: line {}: tag '!!{}' is not one of YAML's core schema (!!str, !!int, !!float, "
         "!!bool, !!null, !!map, !!seq) and would be ignored; remove it",
         source, line_of(node), escape_for_display(type));
  }
  fail(ErrorKind::kUsage, "{}: line {}: tag '{}' is not supported and would be ignored; remove it",
       source, line_of(node), escape_for_display(tag));
}

}  // namespace

void check_yaml(std::string_view text, const std::string& source) {
  // UTF-16 and UTF-32 hold NUL bytes; yaml-cpp reads them after their
  // byte order mark.
  const bool bom = text.starts_with("\xff\xfe") || text.starts_with("\xfe\xff") ||
                   text.starts_with(std::string_view("\0\0\xfe\xff", 4));
  if (const auto nul = text.find('\0'); !bom && nul != std::string_view::npos)
    fail(ErrorKind::kUsage,
         "{}: line {}: a NUL byte (a binary file, or UTF-16 without its byte order mark?); save "
         "it as UTF-8 text",
         source,
         1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
  const std::vector<YAML::Node> docs = load_documents(text, source);
  if (docs.empty()) return;
  // A walk with a stack of its own: the text may nest deeper than a
  // recursion should go.
  struct Item {
    YAML::Node node;
    int depth;
  };
  std::vector<Item> todo = {{docs.front(), 0}};
  size_t values = 0;
  while (!todo.empty()) {
    const Item item = todo.back();
    todo.pop_back();
    if (item.depth > kMaxNesting)
      fail(ErrorKind::kUsage, "{}: line {}: nested deeper than {} levels", source,
           line_of(item.node), kMaxNesting);
    check_tag(item.node, source);
    if (item.node.IsMap()) check_keys(item.node, source);
    if (!item.node.IsMap() && !item.node.IsSequence()) continue;
    for (const auto& child : item.node) {
      if (++values > kMaxYamlValues)
        fail(ErrorKind::kUsage,
             "{}: line {}: more than {} values (an alias counts each time it is used)", source,
             line_of(item.node), kMaxYamlValues);
      if (item.node.IsMap()) {
        check_tag(child.first, source);
        if (!child.first.IsScalar()) todo.push_back({child.first, item.depth + 1});
        todo.push_back({child.second, item.depth + 1});
      } else {
        todo.push_back({child, item.depth + 1});
      }
    }
  }
}

}  // namespace trainscope::core
