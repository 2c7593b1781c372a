#include "trainscope/tune/tune.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/fingerprint/records.h"
#include "trainscope/profile/report.h"
#include "trainscope/store/store.h"

namespace fs = std::filesystem;

namespace trainscope::tune {
using core::ErrorKind;
using core::fail;

namespace {

struct Child {
  int exit_code = 0;
  std::string out, err;
  double rss_mib = 0;
};

std::string read_all(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  close(fd);
  return s;
}

// Runs argv to its end; its own peak RSS comes from wait4.
Child run_child(const std::vector<std::string>& args) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    fail(ErrorKind::kRuntime, "tune: cannot create pipes");
  std::vector<char*> argv = core::exec_argv(args);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  Child c;
  c.err = read_all(err[0]);  // the child writes little to stderr (-q)
  c.out = read_all(out[0]);
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  c.rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  return c;
}

double median(std::vector<double> v) { return v.empty() ? 0 : core::percentile(std::move(v), 0.5); }

// Every trial: max_steps steps, a small test set, nothing written that
// would be timed (no checkpoints, no sampler), fingerprints every step.
std::vector<std::string> trial_args(const TuneOptions& o, const Setting& s, const fs::path& store,
                                    const std::string& name, bool profile) {
  std::vector<std::string> a = {o.executable,   "--store", "sqlite:" + store.string(),
                                "-q",           "--json",  "train",
                                o.config,       "--name",  name,
                                "--no-progress"};
  std::vector<std::string> sets = o.overrides;
  for (const char* fixed :
       {"train.epochs=100000", "data.test_subset=500", "checkpoint.every_epochs=0",
        "checkpoint.every_steps=0", "monitor.interval_s=0", "fingerprint.every_steps=1",
        "run.experiment=tune"})
    sets.push_back(fixed);
  sets.push_back("train.max_steps=" + std::to_string(profile ? 60 : o.steps));
  if (profile)
    sets.insert(sets.end(), {"profile.enabled=true", "profile.warmup_steps=10", "profile.every=5"});
  sets.insert(sets.end(), s.overrides.begin(), s.overrides.end());
  for (const auto& v : sets) a.insert(a.end(), {"--set", v});
  return a;
}

std::string last_line(const std::string& s) {
  auto end = s.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  auto begin = s.rfind('\n', end);
  return s.substr(begin == std::string::npos ? 0 : begin + 1,
                  end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

// Runs one trial; returns its run's UUID and peak RSS.
std::pair<std::string, double> trial(const TuneOptions& o, const Setting& s, const fs::path& store,
                                     const std::string& name, bool profile) {
  Child c = run_child(trial_args(o, s, store, name, profile));
  if (c.exit_code != 0)
    fail(ErrorKind::kRuntime, "tune: the trial of '{}' failed (exit {}): {}", s.label, c.exit_code,
         last_line(c.err));
  try {
    return {nlohmann::json::parse(c.out).at("run").get<std::string>(), c.rss_mib};
  } catch (const nlohmann::json::exception&) {
    fail(ErrorKind::kRuntime, "tune: the trial of '{}' printed no run ({})", s.label,
         last_line(c.out));
  }
}

// Median step time after the first fifth of the steps (at least 10).
double step_ms(store::Store& st, const std::string& run, int64_t steps) {
  const int64_t warmup = std::max<int64_t>(10, steps / 5);
  std::vector<double> v;
  for (const auto& p : st.metric(run, "train/step_ms"))
    if (p.step > warmup) v.push_back(p.value);
  return median(std::move(v));
}

// How the first steps of `run` compare with the baseline's, bit for bit.
void compare_numbers(store::Store& st, const std::string& base, const std::string& run,
                     SettingResult& r) {
  if (r.setting.changes_batch) {
    r.same_numbers = false;
    r.numerics = "another batch size: another training";
    return;
  }
  const auto a = fingerprint::read(st, base).steps, b = fingerprint::read(st, run).steps;
  const size_t n = std::min<size_t>({a.size(), b.size(), 20});
  for (size_t i = 0; i < n; ++i)
    if (a[i].hashes != b[i].hashes) {
      r.same_numbers = false;
      r.numerics = fmt::format("differs from step {}", a[i].step);
      return;
    }
  r.numerics =
      base == run ? "not repeated (one round)" : fmt::format("same bits for the first {} steps", n);
}

// The baseline's costliest layers, and the fastest setting's time for each.
std::vector<LayerChange> layer_changes(store::Store& st, const std::string& base,
                                       const std::string& best) {
  const profile::ProfileSummary a = profile::summarize(st, base), b = profile::summarize(st, best);
  std::map<std::string, double> best_us;
  for (const auto& l : b.layers) best_us[l.layer] = l.total();
  std::vector<LayerChange> out;
  for (const auto& l : a.layers) out.push_back({l.layer, l.type, l.total(), best_us[l.layer]});
  std::sort(out.begin(), out.end(),
            [](const auto& x, const auto& y) { return x.baseline_us > y.baseline_us; });
  if (out.size() > 6) out.resize(6);
  return out;
}

// Medians, samples per second (so that other batch sizes compare), the
// fastest setting.
void summarize_results(TuneReport& rep, int64_t batch) {
  for (auto& r : rep.results) {
    r.median_step_ms = median(r.step_ms);
    r.peak_rss_mib = r.rss_mib.empty() ? 0 : *std::max_element(r.rss_mib.begin(), r.rss_mib.end());
    const auto b = static_cast<double>(r.setting.batch_size > 0 ? r.setting.batch_size : batch);
    r.samples_per_s = r.median_step_ms > 0 ? b / r.median_step_ms * 1e3 : 0;
  }
  const double base = rep.results.front().samples_per_s;
  for (size_t i = 0; i < rep.results.size(); ++i) {
    auto& r = rep.results[i];
    r.speedup = base > 0 ? r.samples_per_s / base : 0;
    if (r.samples_per_s > rep.results[rep.best].samples_per_s) rep.best = i;
  }
}

}  // namespace

std::vector<Setting> candidate_settings(const Baseline& b) {
  std::vector<Setting> out = {{"as configured", {}}};
  std::vector<int> threads;
  for (int t = 1; t <= b.max_threads; ++t) threads.push_back(t);
  while (threads.size() > 4) threads.erase(threads.begin() + 1);  // keep 1 and the largest
  for (int t : threads)
    if (t != b.threads)
      out.push_back({fmt::format("threads={}", t), {fmt::format("compute.threads={}", t)}});
  const std::string other = b.memory_format == "channels_last" ? "contiguous" : "channels_last";
  out.push_back({other, {"compute.memory_format=" + other}});
  out.push_back({b.mkldnn ? "oneDNN off" : "oneDNN on",
                 {std::string("determinism.mkldnn=") + (b.mkldnn ? "false" : "true")}});
  std::vector<int64_t> batches = {b.batch_size};  // each batch tried once (2,2 was twice)
  for (double m : b.batch_multiples) {
    const auto batch = static_cast<int64_t>(static_cast<double>(b.batch_size) * m);
    if (batch < 1 || std::ranges::find(batches, batch) != batches.end()) continue;
    batches.push_back(batch);
    out.push_back(
        {fmt::format("batch {}", batch), {fmt::format("train.batch_size={}", batch)}, true, batch});
  }
  return out;
}

TuneReport run_tune(const TuneOptions& o) {
  const double t0 = core::monotonic_now();
  const fs::path dir =
      fs::temp_directory_path() / ("trainscope-tune-" + core::new_uuid().substr(0, 8));
  fs::create_directories(dir);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{dir};
  const fs::path db = dir / "tune.db";
  TuneReport rep;
  for (const auto& s : o.settings) rep.results.push_back({s});
  std::vector<std::vector<std::string>> runs(o.settings.size());
  const int n = static_cast<int>(o.settings.size()), trials = n * o.rounds;
  for (int r = 0, done = 0; r < o.rounds; ++r)
    for (int k = 0; k < n; ++k) {
      const int i = (k + r) % n;  // each round starts with another setting
      if (o.progress) o.progress(++done, trials, o.settings[i].label);
      auto [run, rss] = trial(o, o.settings[i], db, fmt::format("tune-{}-{}", i, r), false);
      runs[i].push_back(run);
      auto st = store::Store::open({.uri = "sqlite:" + db.string()});
      rep.results[i].step_ms.push_back(step_ms(*st, run, o.steps));
      rep.results[i].rss_mib.push_back(rss);
    }
  summarize_results(rep, o.batch_size);
  auto st = store::Store::open({.uri = "sqlite:" + db.string()});
  // The baseline against its own second trial: does it even repeat?
  compare_numbers(*st, runs[0][0], runs[0].back(), rep.results[0]);
  for (size_t i = 1; i < rep.results.size(); ++i)
    compare_numbers(*st, runs[0][0], runs[i][0], rep.results[i]);
  if (o.profile_layers && rep.best != 0) {
    const auto base = trial(o, o.settings[0], db, "tune-profile-base", true).first;
    const auto best = trial(o, o.settings[rep.best], db, "tune-profile-best", true).first;
    rep.layers = layer_changes(*st, base, best);
  }
  rep.seconds = core::monotonic_now() - t0;
  return rep;
}

}  // namespace trainscope::tune
