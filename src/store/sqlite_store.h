// SQLite implementation of Store. Private to the store component: users get
// it through Store::open("sqlite:PATH") or Store::open("sqlite::memory:").
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

#include "sqlite.h"
#include "trainscope/store/store.h"

namespace trainscope::store {

class SqliteStore final : public Store {
 public:
  // Opens or creates the database at `path` (":memory:" for a private
  // in-memory database whose artifacts live in a temporary folder removed on
  // close); see Store::open for errors.
  SqliteStore(std::filesystem::path path, const StoreOptions& options);
  ~SqliteStore() override;

  std::string describe() const override;
  bool release_reserve() override;
  bool shrink_log() override;
  std::filesystem::path reserve_path() const;
  int schema_version() override;
  int latest_schema_version() const override;

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
  SqliteStore(std::filesystem::path path, std::filesystem::path artifact_root,
              const StoreOptions& options);
  // `immutable`: read-only media: the file cannot change, so SQLite needs no
  // -shm/-wal files beside it (it could not create them).
  void open_connection(bool immutable = false);
  void use_wal_locked();
  int read_version_locked();
  void migrate_locked();
  int64_t run_id_locked(std::string_view uuid);  // throws kNotFound
  // Inside a write transaction: throws LeaseLost if this store held the
  // run's lease and lost it (Store::check_lease).
  void check_lease_locked(std::string_view uuid);
  int64_t key_id_locked(int64_t run_id, const std::string& key);
  void set_param_locked(int64_t run_id, std::string_view uuid, std::string_view key,
                        std::string_view value);

  std::filesystem::path path_;
  bool memory_;
  std::filesystem::path artifact_root_;
  std::mutex mu_;  // serialises use of db_ and the caches below
  sqlite::Db db_;
  std::map<std::pair<int64_t, std::string>, int64_t> key_ids_;
};

}  // namespace trainscope::store
