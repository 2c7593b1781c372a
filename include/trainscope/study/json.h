// JSON of a study: its status (`study status`, the API) and its analysis
// (`study report --format json`, the dashboard). Pure functions: they hold
// nothing and may run on any thread.
#pragma once

#include "trainscope/format/format.h"
#include "trainscope/study/report.h"
#include "trainscope/study/study.h"

namespace trainscope::study {

// The study, its liveness, each cell's counts and the total; Slurm's jobs
// and queue when it ran there; the planned runs that recorded nothing,
// those given up and the runs set aside, each count with its first
// example (null when none): what `study status` prints under its table.
format::Json study_status_json(const StudyStatus& s);
// Every part of the analysis (cells, comparisons, factor components,
// weights, cost, notes).
format::Json study_analysis_json(const StudyAnalysis& a);

}  // namespace trainscope::study
