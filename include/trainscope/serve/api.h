// The dashboard's JSON API (docs/api.md): one request in, one response out,
// over a Store. No HTTP here, so the API is tested without sockets and a
// Python module or another server could answer the same requests.
#pragma once

#include <map>
#include <string>
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
};

// What the API allows beyond reading.
struct ApiOptions {
  bool allow_writes = false;  // PUT/DELETE of tags; 403 otherwise
};

// The most points one chart request returns, whatever width it asks for.
inline constexpr size_t kMaxChartPoints = 4000;

// Answers a request under /api/. Every failure is a JSON error with its
// status (400 bad parameter, 403 read-only, 404 unknown, 409 ambiguous,
// 500 other): {"error": "one line", "status": N}.
Response handle_api(store::Store& store, const Request& request, const ApiOptions& options);

// A JSON error response.
Response error_response(int status, const std::string& message);

}  // namespace trainscope::serve
