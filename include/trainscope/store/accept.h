// What a run accepts, whatever the entry point: the CLI's --param, --tag
// and TRAINSCOPE_TAGS (run_env.h), `watch`'s metric and param lines, the
// Python package, the dashboard's API and `import tfevents` all ask these
// functions, and each words the answer with its own argument's name. The
// store itself keeps any bytes it is given (what a run recorded before this
// rule, and a store copy, read back unchanged).
//
// - A key (of a metric, a param or a tag): 1 to 256 bytes of UTF-8 text
//   (bytes that are not UTF-8 could only come back as U+FFFD, in JSON, the
//   API and Python), no control character (C0 below 0x20, DEL 0x7f, or C1
//   U+0080..U+009F: NEL breaks a line, CSI starts a terminal's escape
//   sequence; nor a bidirectional control, core::is_bidi_control, which
//   reorders the line it is printed on), not only blanks (any of
//   core::is_blank_code_point: U+00A0, U+3000, U+200B, U+FEFF ...).
// - A step: an integer from 0 to 2^53 (every one exact in a double, as a
//   JSON reader gives it). A step written as text is read exactly from its
//   digits, never through a double, which rounds 2^53 + 1 to 2^53.
// - A metric's steps only go forward: within a run, a point of a key at a
//   step below the last one that key was given is refused (StepOrder); the
//   same step again is taken. A series read back, charted or compared step
//   by step (diff, stats' last value) is then in the order it was written.
// - A metric value: any double. NaN and +-Inf are kept bit for bit (a loss
//   that diverged is a result); readers count them apart (the API's
//   `nonfinite`, the summaries' finite min and max). What is a number is
//   the entry point's to say: a JSON or text number in metric lines, a
//   Python bool, int or float, NumPy scalar or tensor of one element.
// - A param's or a tag's value: at most 4096 bytes, any bytes.
// - A run's name and its experiment: at most 256 bytes of UTF-8 text, no
//   control character (C0, DEL, C1 or bidirectional, as a key), not only
//   blanks; an
//   experiment is never empty, a name may be (a run without one). They are
//   printed on one line of every listing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace trainscope::store {

inline constexpr size_t kMaxKeyBytes = 256;            // a key's, a name's most bytes
inline constexpr size_t kMaxValueBytes = 4096;         // a param's or tag's value's most bytes
inline constexpr int64_t kMaxStep = int64_t{1} << 53;  // the largest step

// The key rule in words, for the end of a message.
inline constexpr std::string_view kKeyRule =
    "a key is 1 to 256 bytes of UTF-8 text without control characters, not only blanks";

// What is wrong with a key, as the words that follow it: "is empty", "is
// longer than 256 bytes", "is not UTF-8 text", "holds a control
// character", "is only blanks"; nullopt for a key a run accepts.
std::optional<std::string> key_problem(std::string_view key);

// A key for a message: escaped for display (core::escape_for_display: no
// control character or byte that is not UTF-8 is written raw), cut at 64
// bytes (at a character's start) with "..." after a cut.
std::string shown_key(std::string_view key);

// A refusal of `key` named as `noun` ("metric key", "tag key", "param",
// "key"): "tag key 'a\x00b' holds a control character; a key is 1 to 256
// bytes ...". nullopt for a key a run accepts.
std::optional<std::string> key_refusal(std::string_view noun, std::string_view key);
inline constexpr size_t kMaxArtifactNameBytes = 1024;  // an artifact name's most bytes
// A part's most bytes: a file system's 255 less the suffix of the file an
// artifact is written to before it is renamed (".tmp-" and 8 characters).
inline constexpr size_t kMaxArtifactPartBytes = 240;
// The artifact name rule in words, for the end of a message.
inline constexpr std::string_view kArtifactNameRule =
    "an artifact name is a relative path of 1 to 1024 bytes of UTF-8 text without control "
    "characters, each part 1 to 240 bytes, not only blanks, and none '.' or '..'";
// What is wrong with an artifact name (Store::add_artifact, write_artifact,
// Python's log_artifact), as the words that follow it; nullopt for a name
// a run accepts.
std::optional<std::string> artifact_name_problem(std::string_view name);

std::optional<std::string> metric_key_problem(std::string_view key);  // "metric key ..."
// "tag key ...", or own_tag_problem's answer: what a user may tag with.
std::optional<std::string> tag_key_problem(std::string_view key);
std::optional<std::string> param_key_problem(std::string_view key);  // "param ..."
// The metric keys trainscope itself records in a run a program or script
// also logs into (`watch`, a Python run): exit_code, the resource
// sampler's proc/*, sys/*, gpuN/* and energy/*, the probes' probe/* and the
// profiler's profile/*. A metric line or log() of
// one is refused, "metric 'proc/rss_mib' is one trainscope records itself
// (...); log it under another key", so that a series holds one writer's
// points; nullopt for any other key.
std::optional<std::string> own_metric_problem(std::string_view key);
// exit_code and the resource sampler's series: those whose values
// own_metric_value_problem checks.
bool is_own_metric(std::string_view key);
// What is wrong with a value of one of those keys where a file brings
// the series back (import tfevents of trainscope's own export): exit_code
// is an integer from 0 to 255, the sampler's series finite and not
// negative; nullopt for a value the sampler could have recorded, or any
// other key. Every store read applies it too (a point or summary of such a
// series that breaks it is a damaged store: checklist, card, resources and
// runs list never show it as a fact).
std::optional<std::string> own_metric_value_problem(std::string_view key, double value);

// An artifact kind trainscope writes itself and its readers act on
// (`checkpoint`: resume, rerun and a study load it; `trace`: `profile show
// --ops` reads it as its profiler's; `predictions`: `study report` compares
// them; `code`: `env recreate` applies its git.diff). Those readers match
// the kind as well as the name. An artifact a user logs (Python's
// log_artifact) of one is refused, "artifact kind 'trace' is one trainscope
// writes and reads itself (...); log it under another kind"; nullopt for
// any other kind.
std::optional<std::string> own_artifact_kind_problem(std::string_view kind);

// What is wrong with a capability's record (RunRecorder::log_record), as a
// whole message naming its kind: a key over kMaxRecordKeyBytes, not UTF-8,
// holding a control character or only blanks (it reaches a view's table,
// CSV and JSON; an empty key is a run's one record of its kind), or a step
// outside step_problem's range; nullopt for a record a run accepts.
std::optional<std::string> record_problem(std::string_view kind, std::string_view key,
                                          int64_t step);

// The tags trainscope itself records and its readers act on (`kind`:
// study, the study's study.*, watch.*, dist.*, import.*, metric_lines.*,
// energy.*, exit_code, resumed_from, fingerprint.hash, ...; not data.file.*,
// which a script records from TrainerInputs.data_tags):
// a user's tag (--tag, $TRAINSCOPE_TAGS, Python, the API's PUT and DELETE)
// of one is refused, "tag 'kind' is one trainscope records itself (...);
// tag with another key", so that no reader is told what did not happen;
// nullopt for any other key.
std::optional<std::string> own_tag_problem(std::string_view key);

// "the value of param 'lr' is longer than 4096 bytes", or "... is not UTF-8
// text"; nullopt for a value a run accepts.
std::optional<std::string> value_refusal(std::string_view noun, std::string_view key,
                                         std::string_view value);
// The same, named "param".
std::optional<std::string> param_value_problem(std::string_view key, std::string_view value);
// The same, named "tag".
std::optional<std::string> tag_value_problem(std::string_view key, std::string_view value);

// Whether a param's value given again is the one it has: the same text, or
// the same number written otherwise ("1" and "1.0", "0.1" and "0.10",
// "1e-3" and "0.001"), as --filter and stats --by compare them. A param is
// set once; this is what "the same value again is nothing new" means.
bool same_param_value(std::string_view stored, std::string_view given);

// The name rule in words, for the end of a message.
inline constexpr std::string_view kNameRule =
    "a name is at most 256 bytes of UTF-8 text without control characters, not only blanks";

// A refusal of a run's name, or of its experiment's, named as `noun` ("run
// name", "--experiment", "TRAINSCOPE_RUN_NAME"): "--name 'a\nb' holds a
// control character; a name is at most ...". nullopt for one a run accepts.
// An empty name passes (a run without one).
std::optional<std::string> run_name_problem(std::string_view noun, std::string_view name);
// The same for an experiment, which is never empty.
std::optional<std::string> experiment_problem(std::string_view noun, std::string_view experiment);

// A name a run takes from something else (a folder, a command's file name)
// made one the name rule accepts: each byte that is not UTF-8 becomes
// U+FFFD, each control character (C0, DEL, C1) '_', it is cut to 240 bytes
// at a UTF-8 character's start (room for the "-2" that keeps a name to one
// run), and one of blanks only (or nothing) becomes `fallback`.
std::string derived_name(std::string_view from, std::string_view fallback);

// "step -1 is not an integer from 0 to 2^53", of a step as an integer or
// as a number read from text (1.5, 1e30, NaN are refused; 4.0 is step 4).
std::optional<std::string> step_problem(int64_t step);
std::optional<std::string> step_problem(double step);
// The same words for a step as it was written (a token, a Python repr).
std::string step_refusal(std::string_view written);

// The steps a run's metric keys were given so far, by the entry point that
// hands them (a Python run, `watch`'s metric lines, an import's folder),
// for the rule that a key's steps only go forward. Each entry point asks
// before it records anything of a call, a line or an import, so a refusal
// leaves nothing half recorded. Holds one step per key.
class StepOrder {
 public:
  // "metric 'loss' at step 3 goes back: it was logged at step 5 before;
  // steps of a key only go forward"; nullopt for a step the key may take.
  std::optional<std::string> problem(std::string_view key, int64_t step) const;
  // `key` was recorded at `step` (one problem() took).
  void take(std::string_view key, int64_t step);
  // The last step `key` was given; nullopt before its first.
  std::optional<int64_t> last(std::string_view key) const;

 private:
  std::map<std::string, int64_t, std::less<>> last_;
};

}  // namespace trainscope::store
