#include "trainscope/core/flat_yaml.h"

#include <yaml-cpp/yaml.h>

#include <set>
#include <utility>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::core {

namespace {

int node_line(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 1; }

FlatValue list_value(const YAML::Node& node, const std::string& key, ListItems items) {
  FlatValue v{key, FlatValue::Kind::kList, "[", false, node_line(node)};
  bool first = true;
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    if (!item.IsScalar()) {
      v.nested = true;
      if (items == ListItems::kLeaveOut) continue;
    }
    v.text += (first ? "" : ", ") + (item.IsScalar() ? item.Scalar() : YAML::Dump(item));
    first = false;
  }
  v.text += "]";
  return v;
}

// A value that is not a map, as one FlatValue under `key`.
FlatValue leaf(const YAML::Node& node, const std::string& key, ListItems items) {
  if (node.IsSequence()) return list_value(node, key, items);
  if (node.IsScalar())
    return {key, FlatValue::Kind::kScalar, node.Scalar(), false, node_line(node)};
  return {key, FlatValue::Kind::kNull, "", false, node_line(node)};
}

// A map's values below `prefix`, in the map's order. (check_yaml has
// bounded the nesting, so the recursion is shallow.)
void flatten_map(const YAML::Node& map, const std::string& prefix, ListItems items,
                 std::vector<FlatValue>& out) {
  for (const auto& kv : map) {
    // A list or map as a key throws YAML::TypedBadConversion (as the
    // readers before this one did); a null key reads "null".
    const std::string k = kv.first.as<std::string>();
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    if (kv.second.IsMap())
      flatten_map(kv.second, key, items, out);
    else if (kv.second.IsNull())  // `key:` alone: the line of its key
      out.push_back({key, FlatValue::Kind::kNull, "", false, node_line(kv.first)});
    else
      out.push_back(leaf(kv.second, key, items));
  }
}

}  // namespace

std::vector<FlatValue> flatten_yaml(std::string_view text, const std::string& source,
                                    const FlattenOptions& options) {
  std::vector<FlatValue> out;
  try {
    YAML::Node node = YAML::Load(std::string(text));
    for (const auto& part : options.under) {
      if (!node.IsMap()) return out;  // absent
      const YAML::Node child = std::as_const(node)[part];
      if (!child) return out;
      node.reset(child);  // (`node = child` would overwrite what node refers to)
    }
    if (node.IsMap()) {
      flatten_map(node, "", options.list_items, out);
    } else if (options.not_a_map == NotAMap::kOneValue) {
      out.push_back(leaf(node, "", options.list_items));
    } else if (!node.IsNull()) {
      fail(ErrorKind::kUsage, "{}: expected a mapping of keys to values at the top level", source);
    }
  } catch (const YAML::Exception& e) {
    fail(ErrorKind::kUsage, "{}: invalid YAML at line {}: {}", source, e.mark.line + 1,
         escape_for_display(e.msg));
  }
  return out;
}

std::optional<KeyDifference> first_difference(const std::map<std::string, std::string>& was,
                                              const std::map<std::string, std::string>& now) {
  auto value = [](const std::map<std::string, std::string>& m,
                  const std::string& k) -> std::optional<std::string> {
    auto it = m.find(k);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
  std::set<std::string> keys;
  for (const auto& kv : was) keys.insert(kv.first);
  for (const auto& kv : now) keys.insert(kv.first);
  for (const auto& k : keys) {
    auto a = value(was, k), b = value(now, k);
    if (a != b) return KeyDifference{k, std::move(a), std::move(b)};
  }
  return std::nullopt;
}

}  // namespace trainscope::core
