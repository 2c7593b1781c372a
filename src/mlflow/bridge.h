// The bridge's process and the JSON it trades (private to src/mlflow).
#pragma once

#include <optional>
#include <string>

#include "trainscope/format/format.h"
#include "trainscope/mlflow/mlflow.h"

namespace trainscope::mlflow {

// A folder of its own under $TMPDIR, removed with it.
struct TempDir {
  std::filesystem::path path;
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Runs the bridge in `mode` ("export" or "read") on `request` and returns
// its result; its error (a line and a kind) is thrown as Error, and so is a
// bridge that ends without a result.
format::Json run_bridge(const Bridge& b, const std::string& mode, const format::Json& request);

// Refuses (Error(kUsage)) an MLflow URI that names `store`'s own SQLite
// file: MLflow's client would add its tables to it.
void refuse_own_store(store::Store& store, const std::string& uri);

// A value as the bridge trades it: a JSON number, or "nan", "inf", "-inf".
format::Json value_json(double v);
std::optional<double> value_of(const format::Json& j);

}  // namespace trainscope::mlflow
