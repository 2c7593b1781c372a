#include "checkpoint_code.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string_view>

#include "trainscope/core/util.h"

namespace trainscope::checkpoint {
namespace {

constexpr std::string_view kMangle = "__torch__.___torch_mangle_";
constexpr size_t kMaxLine = 4096;

// C++17's string_view (tests/fuzz_torch compiles this file as C++17).
bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// The class a code entry defines: "" for code/__torch__.py (the archive's
// root module), the mangle number's digits for
// code/__torch__/___torch_mangle_N.py, nullopt for any other name.
std::optional<std::string> class_of(const std::string& zip_name) {
  const size_t code = zip_name.find("/code/");
  const std::string_view rest = std::string_view(zip_name).substr(code + 6);
  if (rest == "__torch__.py") return std::string();
  constexpr std::string_view kFile = "__torch__/___torch_mangle_";
  if (!starts(rest, kFile) || !ends(rest, ".py")) return std::nullopt;
  const std::string_view n = rest.substr(kFile.size(), rest.size() - kFile.size() - 3);
  if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != n.npos) return std::nullopt;
  return std::string(n);
}

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > 256 || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return false;
  return true;
}

bool is_scalar_type(std::string_view t) {
  return t == "int" || t == "float" || t == "bool" || t == "str";
}

// `"name"`: printable ASCII without quotes or backslashes.
bool is_quoted_name(std::string_view s) {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') return false;
  for (char c : s.substr(1, s.size() - 2))
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  return true;
}

// An attribute's type; a module reference adds its mangle number to `refs`.
bool is_type(std::string_view t, std::set<std::string>& refs) {
  if (t == "Tensor" || is_scalar_type(t)) return true;
  if (starts(t, "Tuple[") && ends(t, "]")) {
    std::string_view items = t.substr(6, t.size() - 7);
    for (size_t comma; (comma = items.find(", ")) != items.npos; items.remove_prefix(comma + 2))
      if (!is_scalar_type(items.substr(0, comma))) return false;
    return is_scalar_type(items);
  }
  if (!starts(t, kMangle) || !ends(t, ".Module")) return false;
  const std::string_view n = t.substr(kMangle.size(), t.size() - kMangle.size() - 7);
  if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != n.npos) return false;
  refs.insert(std::string(n));
  return true;
}

// `[` ("name", )* `]`, as __parameters__ and __buffers__ are written.
bool is_name_list(std::string_view s) {
  if (!starts(s, "[") || !ends(s, "]")) return false;
  s = s.substr(1, s.size() - 2);
  while (!s.empty()) {
    const size_t end = s.find("\", ");
    if (end == s.npos || !is_quoted_name(s.substr(0, end + 1))) return false;
    s.remove_prefix(end + 3);
  }
  return true;
}

// One line of a class body, without its two-space indent.
bool is_declaration(std::string_view l, std::set<std::string>& refs) {
  for (std::string_view list : {"__parameters__ = ", "__buffers__ = "})
    if (starts(l, list)) return is_name_list(l.substr(list.size()));
  if (l == "__annotations__ = []") return true;
  if (starts(l, "__annotations__[")) {
    const size_t eq = l.find("] = ");
    return eq != l.npos && is_quoted_name(l.substr(16, eq - 16)) && is_type(l.substr(eq + 4), refs);
  }
  const size_t colon = l.find(" : ");
  return colon != l.npos && is_identifier(l.substr(0, colon)) &&
         !starts(l.substr(0, colon), "__") && is_type(l.substr(colon + 3), refs);
}

// The references of one file's class, or what is wrong with its text.
std::optional<std::string> read_class(std::string_view text, std::set<std::string>& refs) {
  constexpr std::string_view kHead = "class Module(Module):\n";
  if (!starts(text, kHead)) return "does not start with 'class Module(Module):'";
  text.remove_prefix(kHead.size());
  for (int line = 2; !text.empty(); ++line) {
    const size_t nl = text.find('\n');
    if (nl == text.npos) return fmt::format("line {} has no end", line);
    const std::string_view l = text.substr(0, nl);
    if (nl > kMaxLine || !starts(l, "  ") || !is_declaration(l.substr(2), refs))
      return fmt::format("line {} is not an attribute declaration", line);
    text.remove_prefix(nl + 1);
  }
  return std::nullopt;
}

// Depth-first: true when a reference from `cls` leads back to a class on
// the path. With a stack of its own: a crafted checkpoint may chain as
// many classes as it has entries.
bool has_cycle(const std::string& cls, const std::map<std::string, std::set<std::string>>& graph,
               std::map<std::string, int>& state) {
  using Refs = std::set<std::string>;
  std::vector<std::pair<const std::string*, Refs::const_iterator>> path;
  auto enter = [&](const std::string& c) {
    int& s = state[c];
    if (s != 0) return s == 1;  // on the path: a cycle; done: nothing new
    s = 1;
    path.emplace_back(&c, graph.at(c).begin());
    return false;
  };
  if (enter(cls)) return true;
  while (!path.empty()) {
    auto& [c, next] = path.back();
    if (next == graph.at(*c).end()) {
      state[*c] = 2;
      path.pop_back();
      continue;
    }
    if (enter(*next++)) return true;
  }
  return false;
}

}  // namespace

bool is_code_entry(const std::string& zip_name) {
  return zip_name.find("/code/") != std::string::npos && ends(zip_name, ".py");
}

std::optional<std::string> unexpected_code(const std::vector<CodeFile>& files) {
  std::map<std::string, std::set<std::string>> graph;  // class -> the classes it names
  for (const auto& f : files) {
    const std::string shown = core::escape_cut(f.name, 80);
    const auto cls = class_of(f.name);
    if (!cls) return fmt::format("code entry '{}' is not one a checkpoint holds", shown);
    if (graph.count(*cls)) return fmt::format("code entry '{}' appears twice", shown);
    std::set<std::string> refs;
    if (const auto why = read_class(f.text, refs))
      return fmt::format("code entry '{}': {}", shown, *why);
    graph[*cls] = std::move(refs);
  }
  for (const auto& [cls, refs] : graph)
    for (const auto& r : refs)
      if (!graph.count(r))
        return fmt::format("class ___torch_mangle_{} is named but not defined", r);
  std::map<std::string, int> state;
  for (const auto& [cls, refs] : graph)
    if (has_cycle(cls, graph, state)) return "its classes contain one another";
  return std::nullopt;
}

}  // namespace trainscope::checkpoint
