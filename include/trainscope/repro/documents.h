// Documents a run's records answer: a Model Card (Mitchell et al.) and the
// ML Reproducibility Checklist (Pineau et al.), filled from params, the
// environment manifest and metrics, with what only a person can write left
// marked. Torch-free: they only read the store.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::repro {

// A Model Card in Markdown. Sections a person must write say TODO.
std::string model_card(store::Store& store, const store::RunInfo& run);

// One question of a reproducibility checklist and what the records answer.
struct ChecklistItem {
  std::string question;
  std::string answer;  // "OPEN: ..." when the records cannot answer it
  bool answered = false;
};

// The checklist items the records can answer. "Number of runs" and "mean
// and variation" are of `repeats`: the finished runs trained with the
// run's config as the caller counts them (study::repeats_of: each of a
// study's planned runs once, never an attempt it set aside); nullopt for a
// run that is no training with a config to repeat (a study's own run, a
// watched program, an import), whose two items then say so, open.
std::vector<ChecklistItem> checklist(store::Store& store, const store::RunInfo& run,
                                     const std::optional<std::vector<store::RunInfo>>& repeats);

}  // namespace trainscope::repro
