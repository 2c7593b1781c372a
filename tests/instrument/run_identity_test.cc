// The one owner of a run's identity (instrument/run_identity.h): what a
// caller gives wins over the environment, which wins over the caller's
// default; a study's planned child is the study's; a parent study refuses
// a run it does not plan, whoever starts it.
#include "trainscope/instrument/run_identity.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/store.h"
#include "trainscope/study/spec.h"
#include "trainscope/study/study.h"

namespace trainscope::instrument {
namespace {

using trainscope::testing::TempDir;

RunEnvironment some_environment() {
  return {.experiment = "env-exp",
          .name = "env-name",
          .tags = {{"team", "env"}, {"from", "env"}},
          .parent = "",
          .planned = ""};
}

// A study of two planned runs (init/r1, init/r2) made by hand: no training.
store::RunInfo hand_made_study(store::Store& s, const TempDir& dir) {
  const std::string text = "study: hand\ncommand: \"true\"\nreplicates: 2\nsources: [init]\n";
  const auto spec = study::parse_study(text, dir / "hand.yaml");
  const auto r = s.create_run(
      {.experiment = "hand", .name = "hand", .config_text = study::recorded_text(spec)});
  s.set_tag(r.uuid, "kind", "study");
  s.set_params(r.uuid, {{"study.file", (dir / "hand.yaml").string()}, {"study.quick", "false"}});
  s.set_status(r.uuid, store::RunStatus::kFinished);
  return r;
}

TEST(RunIdentityTest, GivenWinsOverTheEnvironmentWhichWinsOverTheDefault) {
  RunIdentity given;
  given.name = "mine";
  given.tags = {{"team", "mine"}};
  RunIdentity id = resolve_identity(given, some_environment());
  EXPECT_EQ(id.name, "mine");
  EXPECT_EQ(id.experiment, "env-exp");  // not given: the environment's
  EXPECT_EQ(id.tags, (std::map<std::string, std::string>{{"team", "mine"}, {"from", "env"}}));
  EXPECT_FALSE(id.planned);

  // Nothing given, nothing in the environment: the caller's defaults, a
  // default name made unique.
  std::shared_ptr<store::Store> s = store::Store::open({.uri = "sqlite::memory:"});
  RunIdentity bare;
  bare.default_name = "demo";
  bare.default_experiment = "demos";
  bare = resolve_identity(bare, {});
  auto first = start_run(s, bare);
  auto second = start_run(s, bare);
  EXPECT_EQ(first->info().name, "demo");
  EXPECT_EQ(second->info().name, "demo-2");
  EXPECT_EQ(second->info().experiment, "demos");
  // A name from the environment is the run's as it is.
  RunIdentity from_env;
  from_env.default_name = "demo";
  from_env = resolve_identity(from_env, {.name = "demo"});
  EXPECT_EQ(start_run(s, from_env)->info().name, "demo");
  // No default either: the experiment "default".
  EXPECT_EQ(start_run(s, RunIdentity{})->info().experiment, "default");
}

TEST(RunIdentityTest, AStudysPlannedChildIsTheStudys) {
  RunEnvironment env = some_environment();
  env.parent = "study-uuid";
  env.name = "init/r1";
  env.planned = "seeds: {init: 1}\n";
  RunIdentity given;
  given.name = "script-default";
  given.experiment = "script-experiment";
  given.store = "sqlite:elsewhere.db";
  const RunIdentity id = resolve_identity(given, env);
  EXPECT_EQ(id.name, "init/r1");
  EXPECT_EQ(id.parent, "study-uuid");
  EXPECT_EQ(id.experiment, "env-exp");
  EXPECT_EQ(id.store, "");  // the study's: $TRAINSCOPE_STORE
  ASSERT_TRUE(id.planned);
  EXPECT_EQ(*id.planned, env.planned);

  // Not the planned child: a parent of its own, a resume, or a name
  // without the study's parent.
  given.parent = "other";
  EXPECT_FALSE(resolve_identity(given, env).planned);
  EXPECT_EQ(resolve_identity(given, env).name, "script-default");
  given.parent.clear();
  EXPECT_FALSE(resolve_identity(given, env, /*resuming=*/true).planned);
  env.parent.clear();
  EXPECT_FALSE(resolve_identity(given, env).planned);
  EXPECT_EQ(resolve_identity(given, env).name, "script-default");
}

TEST(RunIdentityTest, AStudyAdmitsOnlyTheRunsItPlans) {
  TempDir dir;
  std::shared_ptr<store::Store> s =
      store::Store::open({.uri = "sqlite:" + (dir / "s.db").string()});
  const store::RunInfo study = hand_made_study(*s, dir);
  const study::StudySpec spec = study::recorded_spec(*s, study);
  const study::Plan plan(spec);
  const auto planned = [&](const std::string& name) {
    return study::command_run_text(spec, plan.at(*plan.find(name)));
  };
  RunEnvironment env{.experiment = "hand", .name = "init/r9", .parent = study.uuid};
  env.planned = "planned: text\n";
  const RunIdentity stray = resolve_identity(RunIdentity{}, env);
  try {
    start_run(s, stray);
    FAIL() << "a run the study does not plan joined it";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kConflict);
    EXPECT_NE(std::string(e.what()).find("'init/r9' is not a planned run of study hand"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(s->list_runs({.parent_uuid = study.uuid}).empty());
  // Named as the parent explicitly (`train --parent hand --name x`): the same.
  RunIdentity named;
  named.name = "x";
  named.parent = "hand";
  EXPECT_THROW(admitted_parent(*s, named), core::Error);

  // A planned name with another plan, or named by hand with a config of
  // its own, is refused: it was counted as the study's run, the study's
  // own set aside (twenty-sixth hunt, B-D2).
  env.name = "init/r1";
  for (const RunIdentity& other :
       {resolve_identity(RunIdentity{}, env),
        RunIdentity{.name = "init/r1", .parent = "hand", .config_text = "lr: 5\n"}}) {
    try {
      start_run(s, other);
      FAIL() << "another config joined the study under a planned name";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::kConflict);
      EXPECT_NE(std::string(e.what()).find("'init/r1' is a planned run of study hand with another "
                                           "config than this run's"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_TRUE(s->list_runs({.parent_uuid = study.uuid}).empty());

  // The planned run joins, tagged with the plan's hash; without a config
  // text of its own, the plan is its config text.
  env.planned = planned("init/r1");
  auto run = start_run(s, resolve_identity(RunIdentity{}, env));
  EXPECT_EQ(run->info().parent_uuid, study.uuid);
  EXPECT_EQ(run->info().name, "init/r1");
  EXPECT_EQ(run->info().config_text, env.planned);
  EXPECT_EQ(s->tags(run->uuid()).at(kPlannedTag), core::sha256_hex(env.planned));
  EXPECT_STREQ(study::kPlannedTag, kPlannedTag);
  // With a config text of its own (`trainscope train`'s), it keeps it.
  RunIdentity trained;
  trained.config_text = "train: {epochs: 1}\n";
  env.name = "init/r2";
  env.planned = planned("init/r2");
  auto second = start_run(s, resolve_identity(trained, env));
  EXPECT_EQ(second->info().config_text, trained.config_text);
  EXPECT_EQ(s->tags(second->uuid()).at(kPlannedTag), core::sha256_hex(env.planned));
}

TEST(RunIdentityTest, TheEnvironmentIsReadAndCheckedOnce) {
  ::setenv("TRAINSCOPE_EXPERIMENT", "e", 1);
  ::setenv("TRAINSCOPE_RUN_NAME", "n", 1);
  ::setenv("TRAINSCOPE_TAGS", "a=1,b=2", 1);
  ::setenv("TRAINSCOPE_PARENT", "p", 1);
  ::setenv("TRAINSCOPE_PLANNED", "x: 1\n", 1);
  const RunEnvironment e = read_run_environment();
  EXPECT_EQ(e.experiment, "e");
  EXPECT_EQ(e.name, "n");
  EXPECT_EQ(e.tags, (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(e.parent, "p");
  EXPECT_EQ(e.planned, "x: 1\n");
  ::setenv("TRAINSCOPE_TAGS", "team", 1);
  try {
    read_run_environment();
    FAIL() << "TRAINSCOPE_TAGS=team was taken";
  } catch (const core::Error& err) {
    EXPECT_EQ(err.kind(), core::ErrorKind::kUsage);
    EXPECT_NE(std::string(err.what()).find("TRAINSCOPE_TAGS: 'team' is not key=value"),
              std::string::npos)
        << err.what();
  }
  for (const char* v : {"TRAINSCOPE_EXPERIMENT", "TRAINSCOPE_RUN_NAME", "TRAINSCOPE_TAGS",
                        "TRAINSCOPE_PARENT", "TRAINSCOPE_PLANNED"})
    ::unsetenv(v);
  const RunEnvironment none = read_run_environment();
  EXPECT_TRUE(none.name.empty() && none.experiment.empty() && none.tags.empty());
}

}  // namespace
}  // namespace trainscope::instrument
