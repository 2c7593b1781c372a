// The dashboard's JSON API (docs/api.md): one request in, one response out,
// over a Store. No HTTP here, so the API is tested without sockets and a
// Python module or another server could answer the same requests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::serve {

// One API request as the HTTP layer hands it over: a plain value.
struct Request {
  std::string method = "GET";
  // As sent, percent-encoding kept: "/api/runs/init%2Fr1/metric". The API
  // splits it at '/' and then decodes each segment, so that a run name
  // holding '/' (a study's child, "init/r1") is one segment.
  std::string path;
  std::map<std::string, std::string> query;
  std::string body;
};

// What handle_api answers: status, content type, body and extra headers.
struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // An artifact's answer: the bytes [file_offset, file_offset +
  // file_length) of `file`, sent a chunk at a time instead of `body`, so
  // that a client holds no copy of a file in memory, whatever its size.
  std::filesystem::path file;
  uint64_t file_offset = 0, file_length = 0;
  // The whole file's size and SHA-256, when known: the bytes are hashed
  // as they are read, the whole file's too for a range, and a file that no
  // longer matches ends the connection before its last chunk.
  uint64_t file_size = 0;
  std::string file_sha256;
};

// What the API allows beyond reading.
struct ApiOptions {
  bool allow_writes = false;  // PUT/DELETE of tags; 403 otherwise
  // The request's body is not read yet (an HTTP server judging it before
  // 100 Continue): a write the API would go on to make (a tag's PUT or
  // DELETE, with allow_writes) is answered status 100 and nothing is
  // written; every other request gets the answer it would get with any
  // body (a refusal: 403, 404, 405, 400 for a key that is not a user's tag).
  bool before_body = false;
};

// The most points one chart request returns, whatever width it asks for.
inline constexpr size_t kMaxChartPoints = 4000;

// Answers a request under /api/. Every failure is a JSON error with its
// status (400 bad parameter, 403 read-only, 404 unknown, 409 ambiguous,
// 500 other): {"error": "one line", "status": N}.
Response handle_api(store::Store& store, const Request& request, const ApiOptions& options);

// A JSON error response: {"error": MESSAGE as one line (controls escaped,
// core::terminal_text), "status": STATUS}.
Response error_response(int status, const std::string& message);

// The Content-Disposition of a download of `file` (RFC 6266): a quoted
// filename of printable ASCII (any other byte, '"' and '\\' an '_'), and,
// when that changed it, filename* (RFC 8187: UTF-8, percent-encoded). A
// name from a store never puts a control byte or a line break in a header.
std::string content_disposition(std::string_view file);

}  // namespace trainscope::serve
