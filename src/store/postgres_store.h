// PostgreSQL implementation of Store. Private to the store component: users
// get it through Store::open("postgresql://USER@HOST:PORT/DB").
//
// Every host of a cluster can write into one database: the server orders
// concurrent writers (row locks, an advisory lock for run names and
// migrations), stamps start, heartbeat and end times with its own clock,
// and the reaper judges heartbeats by that clock. Artifact files live in a
// folder every host reaches, recorded in the store (settings table) when it
// is created: ?artifacts=FOLDER in the URI, else $TRAINSCOPE_ARTIFACTS, else
// the recorded folder, else a folder under ~/.local/share.
#pragma once

#include <map>
#include <mutex>
#include <utility>

#include "postgres.h"
#include "trainscope/store/store.h"

namespace trainscope::store {

class PostgresStore final : public Store {
 public:
  // Connected, migrated (unless read-only) and with its artifact folder
  // known: see open_postgres in backends.h.
  PostgresStore(pg::Session session, const std::filesystem::path& artifact_root,
                const StoreOptions& options);

  std::string describe() const override;
  int schema_version() override;
  int latest_schema_version() const override;
  double now() override;

  RunInfo create_run(const NewRun& run) override;
  void import_run(const RunInfo& run) override;
  std::optional<RunInfo> find_run(std::string_view uuid) override;
  std::vector<RunInfo> list_runs(const RunFilter& filter) override;
  void heartbeat(std::string_view uuid) override;
  void set_config(std::string_view uuid, std::string_view config_text) override;
  std::vector<std::string> list_experiments() override;

  void set_param(std::string_view uuid, std::string_view key, std::string_view value) override;
  void set_params(std::string_view uuid, const std::map<std::string, std::string>& params) override;
  std::map<std::string, std::string> params(std::string_view uuid) override;
  std::map<std::string, RunFields> run_fields(const std::vector<std::string>& uuids, bool params,
                                              bool tags, bool metrics) override;
  void set_tag(std::string_view uuid, std::string_view key, std::string_view value) override;
  void delete_tag(std::string_view uuid, std::string_view key) override;
  std::map<std::string, std::string> tags(std::string_view uuid) override;

  void append_metrics(std::string_view uuid, const std::vector<MetricSeries>& batch) override;
  std::vector<MetricPoint> metric(std::string_view uuid, std::string_view key) override;
  std::vector<MetricPoint> metric_from(std::string_view uuid, std::string_view key,
                                       int64_t first) override;
  void scan_metric(std::string_view uuid, std::string_view key, int64_t first,
                   const std::function<bool(const std::vector<MetricPoint>&)>& each) override;
  std::vector<MetricSummary> metric_summaries(std::string_view uuid) override;

  void set_environment(std::string_view uuid,
                       const std::map<std::string, std::string>& entries) override;
  std::map<std::string, std::string> environment(std::string_view uuid) override;
  std::map<std::string, int64_t> record_kinds(std::string_view uuid) override;

 protected:
  void write_status(std::string_view uuid, RunStatus status) override;
  void claim_run(std::string_view uuid) override;
  bool mark_killed(const RunInfo& judged) override;
  void erase_run(std::string_view uuid) override;
  std::optional<ArtifactInfo> find_artifact(std::string_view uuid, std::string_view name) override;
  ArtifactInfo insert_artifact(std::string_view uuid, const ArtifactInfo& info) override;
  std::vector<ArtifactInfo> artifact_rows(std::string_view uuid) override;
  int64_t insert_records(std::string_view uuid, std::string_view kind,
                         const std::vector<Record>& records) override;
  std::vector<Record> read_records(std::string_view uuid, std::string_view kind,
                                   std::optional<std::string_view> key) override;
  std::vector<Record> read_record_sample(std::string_view uuid, std::string_view kind, size_t most,
                                         int64_t& count) override;

 private:
  // Runs `body` in one transaction under mu_.
  void transact(const std::function<void(pqxx::work&)>& body);
  int64_t run_id(pqxx::work& w, std::string_view uuid);  // throws kNotFound
  // Inside a write transaction: throws LeaseLost if this store held the
  // run's lease and lost it (Store::check_lease). The run's row stays
  // share-locked until the write commits, so no claim or reaper can come
  // between the check and the write.
  void check_lease_in(pqxx::work& w, std::string_view uuid);
  // Ids of the run's metric keys, creating those not yet recorded.
  std::map<std::string, int64_t> key_ids(pqxx::work& w, int64_t run_id,
                                         const std::vector<MetricSeries>& batch);
  void check_params(pqxx::work& w, int64_t run_id, std::string_view uuid,
                    const std::map<std::string, std::string>& params);

  std::mutex mu_;  // serialises use of the session and the cache below
  pg::Session session_;
  std::map<std::pair<int64_t, std::string>, int64_t> key_cache_;
};

}  // namespace trainscope::store
