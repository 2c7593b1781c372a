// Planning a study and keeping it to its plan: the private half of
// study.h's plan_study() and resume_study().
#pragma once

#include <map>
#include <string>

#include "trainscope/store/store.h"
#include "trainscope/study/study.h"

namespace trainscope::study {

// Refuses (Error kConflict, naming the first key that differs and what to
// do) when the study's file or its base config on disk say something else
// than the study recorded when it was planned. A file that is gone is no
// change: the recorded plan stands on its own, but for a command study,
// whose command a shell runs: refused (Error kUsage) without its file.
void check_unchanged(store::Store& store, const store::RunInfo& study, const StudySpec& recorded);

// What a plan is, as the study's tags: study.mode, study.replicates,
// study.vary, study.retries, study.threads_per_run, study.planned_runs.
std::map<std::string, std::string> plan_tags(const StudySpec& spec);

// Plans the study again from its file as it is now, records that plan as
// the study's, and sets aside (kSupersededTag) every attempt whose recorded
// config the new plan does not train, so that it is trained again.
StudySpec replan_study(store::Store& store, const store::RunInfo& study,
                       const StudyOptions& options);

}  // namespace trainscope::study
