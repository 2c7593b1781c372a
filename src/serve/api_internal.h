// Shared by the API's translation units: parameters, responses, and the
// handlers of each family of endpoints.
#pragma once

#include <string>
#include <string_view>

#include "trainscope/format/format.h"
#include "trainscope/serve/api.h"

namespace trainscope::serve::detail {

using format::Json;

// A query parameter, or `fallback` when absent.
std::string param(const Request& r, const std::string& name, const std::string& fallback = {});
// A required query parameter; 400 naming it when absent or empty.
std::string required(const Request& r, const std::string& name);
// A whole-number parameter within [lo, hi]; 400 naming it otherwise.
int64_t int_param(const Request& r, const std::string& name, int64_t fallback, int64_t lo,
                  int64_t hi);

Response json(const Json& j, int status = 200);
Response text(std::string body, std::string content_type);

// The URL of a run's artifact in this API.
std::string artifact_url(const std::string& uuid, const std::string& name);

// --- endpoints (api_runs.cc) -------------------------------------------------
Json runs_page(store::Store& s, const Request& r);
Json run_page(store::Store& s, const store::RunInfo& run);
Json live(store::Store& s, const store::RunInfo& run);
Json metric_chart(store::Store& s, const store::RunInfo& run, const Request& r);
Json resources(store::Store& s, const store::RunInfo& run);
Json ranks(store::Store& s, const store::RunInfo& run);
// A capability's view of the run (store/views.h), as `runs view --json`.
// At most ?max_rows= rows (default 5000, at most 100000): every k-th when
// it has more, with "total_rows" and "sampled".
Json view(store::Store& s, const store::RunInfo& run, const Request& r, const std::string& name);
Response artifact_file(store::Store& s, const store::RunInfo& run, const std::string& name);
// A tag's PUT (the body its value) or DELETE. `before_body`: the body not
// read yet (ApiOptions::before_body): a PUT or DELETE it would make is
// answered status 100, nothing written.
Response tags(store::Store& s, const store::RunInfo& run, const Request& r, const std::string& key,
              bool before_body = false);

// --- endpoints (api_analysis.cc) ---------------------------------------------
Json profile(store::Store& s, const store::RunInfo& run);
std::string profile_svg(store::Store& s, const store::RunInfo& run);
Json probes(store::Store& s, const store::RunInfo& run);
Json histograms(store::Store& s, const store::RunInfo& run, const Request& r);
std::string histogram_svg(store::Store& s, const store::RunInfo& run, const Request& r);
Json diff(store::Store& s, const Request& r);
Json studies(store::Store& s);
Json study(store::Store& s, const std::string& ref);
std::string study_html(store::Store& s, const std::string& ref);

}  // namespace trainscope::serve::detail
