// JSON of environment differences and of `env recreate`'s recipe
// (env/json.h).
#include "trainscope/env/json.h"

namespace trainscope::env {

using format::Json;

Json differences_json(const std::vector<Difference>& diffs) {
  Json arr = Json::array();
  for (const auto& d : diffs)
    arr.push_back({{"group", d.group},
                   {"key", d.key},
                   {"a", d.a ? Json(*d.a) : Json()},  // null: that side lacks the key
                   {"b", d.b ? Json(*d.b) : Json()}});
  return arr;
}

Json recipe_json(const Recipe& r, const std::vector<PinCheck>& checks) {
  Json packages = Json::array();
  for (size_t i = 0; i < r.packages.size(); ++i) {
    const auto& p = r.packages[i];
    Json j = {{"name", p.name},
              {"arch", p.arch},
              {"version", p.version},
              {"pin", p.pin},
              {"objects", p.objects},
              {"pool_url", p.pool_url},
              {"repacked_file", p.repacked_file}};
    if (checks.size() == r.packages.size())
      j["check"] = {{"ok", checks[i].ok},
                    {"message", checks[i].message},
                    {"source", checks[i].source},
                    {"note", checks[i].note}};
    packages.push_back(std::move(j));
  }
  return {
      {"image", r.image},
      {"os", r.os},
      {"debian_version", r.debian_version},
      {"arch", r.arch},
      {"libtorch", r.libtorch},
      {"blas", r.blas},
      {"torch",
       {{"requirement", r.torch_requirement}, {"index", r.torch_index}, {"note", r.torch_note}}},
      {"packages", packages},
      {"pip", r.pip},
      {"python_from_debian", r.python_from_debian},
      {"unowned", r.unowned},
      {"snapshots", r.snapshots},
      {"trainscope_commit", r.trainscope_commit}};
}

}  // namespace trainscope::env
