#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/dist/config.h"
#include "trainscope/replay/replay.h"
#include "trainscope/store/accept.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

namespace trainscope::replay {
using core::ErrorKind;
using core::fail;

namespace {

// A changed dataset file makes a rerun a different experiment.
void check_data_files(const env::Manifest& recorded, const store::RunInfo& orig, bool force) {
  for (const auto& [k, v] : recorded) {
    if (k.rfind("data.sha256.", 0) != 0) continue;
    const std::string file = k.substr(12);
    std::string now;
    try {
      now = core::sha256_file(file);
    } catch (const core::Error&) {
      now = "(missing)";
    }
    if (now == v) continue;
    if (!force)
      fail(ErrorKind::kConflict,
           "dataset file '{}' changed since run {} (sha256 {} then, {} now); refusing to rerun",
           file, core::short_uuid(orig.uuid), v.substr(0, 12), now.substr(0, 12));
    core::log_warn("dataset file '{}' changed since the original run (forced)", file);
  }
}

}  // namespace

Rerun rerun(std::shared_ptr<store::Store> store, const store::RunInfo& orig,
            const RerunOptions& options) {
  // The config trained again is the one the run recorded, or none.
  store::verify_config(orig);
  if (auto what = train::not_a_training(*store, orig); !what.empty())
    fail(ErrorKind::kUsage, "run {} is {}, not a training: only trained runs can be rerun",
         core::short_uuid(orig.uuid), what);
  if (auto tags = store->tags(orig.uuid);
      tags.count("model.custom") && tags["model.custom"] == "true")
    fail(ErrorKind::kUsage,
         "run {} trained a model of its own, which trainscope cannot build again; rerun it with "
         "the program that trained it",
         core::short_uuid(orig.uuid));
  config::Config cfg =
      config::parse_config(orig.config_text, {}, "run " + core::short_uuid(orig.uuid));
  if (const int64_t n = cfg.section<dist::DistConfig>().nproc; n > 1)
    fail(ErrorKind::kUsage,
         "run {} trained on {} ranks (dist.nproc), which a rerun in one process cannot repeat; "
         "train its config again with `trainscope train CONFIG --nproc {}`",
         core::short_uuid(orig.uuid), n, n);
  const env::Manifest recorded = store->environment(orig.uuid);
  check_data_files(recorded, orig, options.force);
  env::Manifest here = env::capture_machine();
  here.merge(env::capture_torch());
  Rerun out;
  out.machine = repro::machine_differences(recorded, here);
  if (options.before_training) options.before_training(out.machine);
  train::TrainOptions o;
  // A name of up to 256 bytes stays one with "-rerun" (derived_name cuts at
  // 240), and one stored before the name rule becomes one it accepts.
  o.name = store::derived_name(orig.name, core::short_uuid(orig.uuid)) + "-rerun";
  o.command_line = options.command_line;
  train::Trainer trainer(cfg, store, o);
  for (const auto& obs : options.observers) trainer.add_observer(obs);
  out.result = trainer.run();
  store->set_tag(out.result.run_uuid, "rerun_of", orig.uuid);
  return out;
}

}  // namespace trainscope::replay
