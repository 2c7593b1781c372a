// The dashboard's front end (web/), bundled by esbuild at build time and
// compiled into the binary by cmake/embed_assets.cmake: nothing is fetched
// or read from disk at run time.
#pragma once

#include <cstddef>
#include <string_view>

namespace trainscope::serve {

struct Asset {
  std::string_view path;  // "/app.js"
  std::string_view content_type;
  std::string_view body;
};

// The embedded file served at `path` ("/" is "/index.html"); nullptr if none.
// A build without the front end (TRAINSCOPE_WEB=OFF) embeds none.
const Asset* find_asset(std::string_view path);

}  // namespace trainscope::serve
