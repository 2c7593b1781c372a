// `trainscope watch`, `trainscope resources`, `trainscope report throughput`.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "context.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/svg.h"
#include "trainscope/core/util.h"
#include "trainscope/env/manifest.h"
#include "trainscope/monitor/sampler.h"
#include "trainscope/store/run_recorder.h"

namespace fs = std::filesystem;

namespace trainscope::cli {
using core::Error;
using core::ErrorKind;
using core::SvgChart;
using core::SvgSeries;
using core::csv_field;
using core::fail;
using core::format_double;
using core::log_info;
using core::log_warn;
using core::new_uuid;
using core::percentile;
using store::NewRun;
using store::RunInfo;
using store::RunRecorder;
using store::RunStatus;
using store::Store;

namespace {

volatile sig_atomic_t g_child = 0;
void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// Finds `name` the way execvp would; empty when not found.
std::string resolve_command(const std::string& name) {
  if (name.find('/') != std::string::npos)
    return access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  return {};
}

}  // namespace

// Parses metric lines printed by a watched program. Two formats:
//   trainscope: step=100 loss=0.53 acc=0.91     (step optional)
//   {"step": 100, "loss": 0.53, "acc": 0.91}    (a JSON object with "step")
// Anything else is ordinary output. A line that starts like one of these but
// does not parse is counted as malformed and skipped.
class MetricLineParser {
 public:
  explicit MetricLineParser(RunRecorder& rec) : rec_(rec) {}
  void line(const std::string& raw) {
    std::string l = raw;
    while (!l.empty() && (l.back() == '\r' || l.back() == '\n')) l.pop_back();
    if (l.rfind("trainscope:", 0) == 0) {
      parse_kv(l, l.substr(11));
    } else if (!l.empty() && l.front() == '{' && l.find("\"step\"") != std::string::npos) {
      parse_json(l);
    }
  }
  int64_t parsed = 0, malformed = 0;
  std::string first_malformed;

 private:
  void bad(const std::string& l) {
    if (malformed++ == 0) first_malformed = l;
  }
  void parse_kv(const std::string& l, const std::string& rest) {
    std::istringstream in(rest);
    std::string tok;
    std::vector<std::pair<std::string, double>> values;
    std::optional<int64_t> step;
    while (in >> tok) {
      auto eq = tok.find('=');
      if (eq == std::string::npos || eq == 0) return bad(l);
      std::string k = tok.substr(0, eq), v = tok.substr(eq + 1);
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0') return bad(l);
      if (k == "step") {
        step = static_cast<int64_t>(d);
      } else {
        values.emplace_back(k, d);
      }
    }
    if (values.empty()) return bad(l);
    emit(step, values);
  }
  void parse_json(const std::string& l) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(l);
    } catch (const nlohmann::json::exception&) {
      return bad(l);
    }
    if (!j.is_object() || !j["step"].is_number()) return bad(l);
    std::vector<std::pair<std::string, double>> values;
    for (auto& [k, v] : j.items())
      if (k != "step" && v.is_number()) values.emplace_back(k, v.get<double>());
    if (values.empty()) return bad(l);
    emit(j["step"].get<int64_t>(), values);
  }
  void emit(std::optional<int64_t> step, const std::vector<std::pair<std::string, double>>& values) {
    for (const auto& [k, v] : values) {
      int64_t s = step ? *step : next_step_[k]++;
      rec_.log_metric(k, v, s);
    }
    ++parsed;
  }
  RunRecorder& rec_;
  std::map<std::string, int64_t> next_step_;
};

namespace {

struct SeriesStats {
  std::string key;
  int64_t n = 0;
  double mean = 0, p50 = 0, p95 = 0, max = 0;
};

bool resource_key(const std::string& k) {
  return k.rfind("proc/", 0) == 0 || k.rfind("sys/", 0) == 0 || k.rfind("gpu", 0) == 0 ||
         k.rfind("energy/", 0) == 0;
}

// Statistics of every resource series, without samples taken in the first
// `warmup_s` seconds of the run (unless that would leave none).
std::vector<SeriesStats> resource_stats(Store& store, const RunInfo& run, double warmup_s) {
  std::vector<SeriesStats> out;
  for (const auto& m : store.metric_summaries(run.uuid)) {
    if (!resource_key(m.key)) continue;
    auto pts = store.metric(run.uuid, m.key);
    std::vector<double> v, all;
    for (const auto& p : pts) {
      if (!std::isfinite(p.value)) continue;
      all.push_back(p.value);
      if (p.wall_time - run.start_time >= warmup_s) v.push_back(p.value);
    }
    if (v.empty()) v = all;
    if (v.empty()) continue;
    SeriesStats s;
    s.key = m.key;
    s.n = static_cast<int64_t>(v.size());
    for (double x : v) s.mean += x;
    s.mean /= static_cast<double>(v.size());
    s.p50 = percentile(v, 0.5);
    s.p95 = percentile(v, 0.95);
    s.max = *std::max_element(v.begin(), v.end());
    out.push_back(s);
  }
  return out;
}

std::optional<double> mean_of(const std::vector<SeriesStats>& st, const std::string& key) {
  for (const auto& s : st)
    if (s.key == key) return s.mean;
  return std::nullopt;
}

std::optional<double> last_metric(Store& store, const std::string& uuid, const std::string& key) {
  auto pts = store.metric(uuid, key);
  if (pts.empty()) return std::nullopt;
  return pts.back().value;
}

std::optional<double> mean_metric(Store& store, const std::string& uuid, const std::string& key) {
  auto pts = store.metric(uuid, key);
  if (pts.empty()) return std::nullopt;
  double s = 0;
  for (const auto& p : pts) s += p.value;
  return s / static_cast<double>(pts.size());
}

std::string opt_fmt(const std::optional<double>& v, const char* f = "{:.1f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
}

}  // namespace

void register_monitor_commands(CLI::App& app, Context& ctx) {
  // watch
  {
    auto* cmd = app.add_subcommand(
        "watch", "Run any command, sample its process tree, record its output and metric lines");
    auto name = std::make_shared<std::string>();
    auto experiment = std::make_shared<std::string>("watch");
    auto interval = std::make_shared<double>(1.0);
    auto carbon = std::make_shared<double>(0.385);
    auto command = std::make_shared<std::vector<std::string>>();
    cmd->add_option("--name", *name, "Run name (default: the command's name)");
    cmd->add_option("--experiment", *experiment, "Experiment");
    cmd->add_option("--interval", *interval, "Sampling interval in seconds")
        ->check(CLI::Range(0.05, 3600.0));
    cmd->add_option("--carbon", *carbon, "Grid carbon intensity, kg CO2 per kWh");
    cmd->add_option("COMMAND", *command, "The command and its arguments, after --")
        ->required()
        ->expected(-1);
    cmd->footer(
        "\nMetric lines the command may print (others are plain output):\n"
        "  trainscope: step=100 loss=0.53 acc=0.91\n"
        "  {\"step\": 100, \"loss\": 0.53}\n"
        "\nExample:\n  trainscope watch --name torch-mlp -- python3 train.py --epochs 2\n");
    cmd->callback([&ctx, name, experiment, interval, carbon, command] {
      const std::string exe = resolve_command(command->front());
      if (exe.empty())
        fail(ErrorKind::kCommandNotFound, "command not found: '{}' (not an executable file in $PATH)",
             command->front());
      std::string cmdline;
      for (const auto& a : *command) cmdline += (cmdline.empty() ? "" : " ") + a;
      NewRun nr;
      nr.experiment = *experiment;
      nr.name = name->empty() ? fs::path(command->front()).filename().string() : *name;
      nr.command_line = cmdline;
      auto rec = RunRecorder::start(ctx.store(), nr);
      rec->set_environment(env::capture_machine());
      rec->set_tag("watch.command", cmdline);

      int out_pipe[2], err_pipe[2];
      if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        fail(ErrorKind::kRuntime, "cannot create pipes: {}", std::strerror(errno));
      std::vector<char*> argv;
      for (auto& a : *command) argv.push_back(a.data());
      argv.push_back(nullptr);
      pid_t pid = fork();
      if (pid == 0) {
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        execv(exe.c_str(), argv.data());
        _exit(127);
      }
      close(out_pipe[1]);
      close(err_pipe[1]);
      g_child = pid;
      std::signal(SIGINT, forward_signal);
      std::signal(SIGTERM, forward_signal);

      monitor::SamplerOptions so;
      so.interval_s = *interval;
      so.pid = pid;
      so.carbon_kg_per_kwh = *carbon;
      auto sampler = std::make_unique<monitor::ResourceSampler>(*rec, so);

      fs::path tmp = fs::temp_directory_path() / ("trainscope-watch-" + new_uuid().substr(0, 8));
      fs::create_directories(tmp);
      MetricLineParser parser(*rec);
      std::mutex parse_mu;
      auto pump = [&](int fd, FILE* echo, const fs::path& file) {
        std::ofstream out(file, std::ios::binary);
        std::string pending;
        char buf[8192];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0) {
          fwrite(buf, 1, static_cast<size_t>(n), echo);
          fflush(echo);
          out.write(buf, n);
          pending.append(buf, static_cast<size_t>(n));
          size_t nl;
          while ((nl = pending.find('\n')) != std::string::npos) {
            std::lock_guard lock(parse_mu);
            parser.line(pending.substr(0, nl));
            pending.erase(0, nl + 1);
          }
        }
        if (!pending.empty()) {
          std::lock_guard lock(parse_mu);
          parser.line(pending);
        }
        close(fd);
      };
      std::thread t_out(pump, out_pipe[0], stdout, tmp / "stdout.txt");
      std::thread t_err(pump, err_pipe[0], stderr, tmp / "stderr.txt");
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      t_out.join();
      t_err.join();
      g_child = 0;
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      auto energy = sampler->stop();
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      rec->log_metric("exit_code", code, 0);
      rec->set_tag("exit_code", std::to_string(code));
      rec->set_tag("metric_lines.parsed", std::to_string(parser.parsed));
      rec->set_tag("metric_lines.malformed", std::to_string(parser.malformed));
      if (parser.malformed > 0) {
        rec->set_tag("metric_lines.first_malformed", parser.first_malformed.substr(0, 200));
        log_warn("skipped {} malformed metric line(s); the first was: {}", parser.malformed,
                 parser.first_malformed.substr(0, 200));
      }
      rec->add_artifact(tmp / "stdout.txt", "stdout", "stdout.txt");
      rec->add_artifact(tmp / "stderr.txt", "stderr", "stderr.txt");
      std::error_code ec;
      fs::remove_all(tmp, ec);
      rec->end(code == 0 ? RunStatus::kFinished : RunStatus::kFailed);
      log_info("watch: run {} {} (exit code {}, {} samples, {} metric lines, {:.3g} kWh {})",
               rec->uuid().substr(0, 8), code == 0 ? "finished" : "failed", code, sampler->samples(),
               parser.parsed, energy.kwh(), energy.cpu_source == "rapl" ? "metered" : "estimated");
      if (code != 0) throw Error(fmt::format("the command exited with code {}", code),
                                 static_cast<ErrorKind>(code > 0 && code < 256 ? code : 1));
    });
  }
  // resources
  {
    auto* cmd = app.add_subcommand("resources", "Mean, p50, p95 and max of a run's resource series");
    auto ref = std::make_shared<std::string>();
    auto warmup = std::make_shared<double>(5.0);
    auto plot = std::make_shared<std::string>();
    auto format = std::make_shared<std::string>("table");
    cmd->add_option("RUN", *ref, "Run")->required();
    cmd->add_option("--warmup", *warmup,
                    "Exclude samples from the run's first S seconds (all kept if none remain)");
    cmd->add_option("--plot", *plot, "Write resources_cpu.svg and resources_memory.svg to this folder");
    cmd->add_option("--format,-f", *format, "table, csv or json")->check(CLI::IsMember({"table", "csv", "json"}));
    set_example(cmd, "trainscope resources demo --warmup 10 --plot plots/");
    cmd->callback([&ctx, ref, warmup, plot, format] {
      auto store = ctx.store();
      RunInfo run = store->resolve_run(*ref);
      auto stats = resource_stats(*store, run, *warmup);
      if (stats.empty())
        fail(ErrorKind::kNotFound,
             "run {} has no resource samples (sampling off, or not recorded by train/watch)",
             run.uuid.substr(0, 8));
      std::string f = ctx.json ? "json" : *format;
      if (f == "json") {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& s : stats)
          arr.push_back({{"key", s.key}, {"n", s.n}, {"mean", s.mean}, {"p50", s.p50},
                         {"p95", s.p95}, {"max", s.max}});
        std::cout << arr.dump(2) << "\n";
      } else if (f == "csv") {
        std::cout << "key,n,mean,p50,p95,max\n";
        for (const auto& s : stats)
          std::cout << csv_field(s.key) << "," << s.n << "," << format_double(s.mean) << ","
                    << format_double(s.p50) << "," << format_double(s.p95) << ","
                    << format_double(s.max) << "\n";
      } else {
        Table t({"SERIES", "SAMPLES", "MEAN", "P50", "P95", "MAX"});
        for (size_t c = 1; c < 6; ++c) t.align_right(c);
        for (const auto& s : stats)
          t.add_row({s.key, std::to_string(s.n), format_value(s.mean), format_value(s.p50),
                     format_value(s.p95), format_value(s.max)});
        t.print(std::cout);
        std::cout << fmt::format("(samples from the first {:g} s excluded as warm-up)\n", *warmup);
      }
      if (!plot->empty()) {
        fs::create_directories(*plot);
        auto chart = [&](const std::string& title, const std::string& ylabel,
                         const std::vector<std::string>& prefixes, const std::string& file) {
          SvgChart c;
          c.title = title + " — run " + run.uuid.substr(0, 8);
          c.x_label = "seconds since start";
          c.y_label = ylabel;
          for (const auto& m : store->metric_summaries(run.uuid)) {
            bool match = std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) {
              return m.key == p || (p.back() == '*' && m.key.rfind(p.substr(0, p.size() - 1), 0) == 0 &&
                                    m.key.find(ylabel == "%" ? "percent" : "mib") != std::string::npos);
            });
            if (!match) continue;
            SvgSeries s;
            s.name = m.key;
            for (const auto& p : store->metric(run.uuid, m.key)) {
              s.x.push_back(p.wall_time - run.start_time);
              s.y.push_back(p.value);
            }
            c.series.push_back(std::move(s));
          }
          std::ofstream(fs::path(*plot) / file) << c.render();
        };
        chart("CPU and GPU utilisation", "%", {"proc/cpu_percent", "sys/cpu_percent", "gpu*"},
              "resources_cpu.svg");
        chart("Memory", "MiB", {"proc/rss_mib", "sys/mem_used_mib", "gpu*"}, "resources_memory.svg");
        log_info("wrote {}/resources_cpu.svg and resources_memory.svg", *plot);
      }
    });
  }
  // report throughput
  {
    auto* report = app.add_subcommand("report", "Tables across runs");
    report->require_subcommand(1);
    set_example(report, "trainscope report throughput bs64 bs128 bs256");
    auto* cmd = report->add_subcommand(
        "throughput", "BRIEF §4 table: one column per run — CPU, memory, GPU, steps/s, accuracy, time to target");
    auto refs = std::make_shared<std::vector<std::string>>();
    auto warmup = std::make_shared<double>(5.0);
    cmd->add_option("RUNS", *refs, "Runs to compare")->required()->expected(-1);
    cmd->add_option("--warmup", *warmup, "Exclude the first S seconds of resource samples");
    set_example(cmd, "trainscope report throughput bs64 bs128 bs256 --json");
    cmd->callback([&ctx, refs, warmup] {
      auto store = ctx.store();
      std::vector<std::string> header = {"METRIC"};
      std::vector<std::vector<std::string>> cols;
      nlohmann::json js = nlohmann::json::array();
      std::vector<std::string> rows = {"run",          "batch size",      "CPU % (1 core = 100)",
                                       "RSS MiB",      "GPU %",           "GPU MiB",
                                       "steps/s",      "samples/s",       "epochs run",
                                       "test accuracy", "time to target s", "epochs to target",
                                       "energy kWh"};
      for (const auto& ref : *refs) {
        RunInfo r = store->resolve_run(ref);
        auto st = resource_stats(*store, r, *warmup);
        auto p = store->params(r.uuid);
        auto gpu_util = mean_of(st, "gpu0/util_percent");
        auto gpu_mem = mean_of(st, "gpu0/proc_mem_mib");
        std::vector<std::optional<double>> nums = {
            mean_of(st, "proc/cpu_percent"), mean_of(st, "proc/rss_mib"), gpu_util, gpu_mem,
            mean_metric(*store, r.uuid, "steps_per_s"), mean_metric(*store, r.uuid, "samples_per_s"),
            last_metric(*store, r.uuid, "epoch"), last_metric(*store, r.uuid, "test/accuracy"),
            last_metric(*store, r.uuid, "time_to_target_s"), last_metric(*store, r.uuid, "epochs_to_target"),
            last_metric(*store, r.uuid, "energy/total_kwh")};
        std::vector<std::string> col = {r.name.empty() ? r.uuid.substr(0, 8) : r.name,
                                        p.count("batch_size") ? p.at("batch_size") : "-"};
        const char* fmts[] = {"{:.1f}", "{:.0f}", "{:.1f}", "{:.0f}", "{:.2f}", "{:.0f}",
                              "{:.0f}", "{:.4f}", "{:.1f}", "{:.0f}", "{:.3g}"};
        for (size_t i = 0; i < nums.size(); ++i) col.push_back(opt_fmt(nums[i], fmts[i]));
        if (!last_metric(*store, r.uuid, "time_to_target_s") && p.count("target_accuracy") &&
            p.at("target_accuracy") != "0")
          col[10] = col[11] = "not reached";
        nlohmann::json j = {{"run", r.uuid}};
        for (size_t i = 1; i < rows.size(); ++i) j[rows[i]] = col[i];
        js.push_back(j);
        cols.push_back(std::move(col));
      }
      if (ctx.json) {
        std::cout << js.dump(2) << "\n";
        return;
      }
      for (const auto& c : cols) header.push_back(c[0]);
      Table t(header);
      for (size_t c = 1; c < header.size(); ++c) t.align_right(c);
      for (size_t i = 1; i < rows.size(); ++i) {
        std::vector<std::string> row = {rows[i]};
        for (const auto& c : cols) row.push_back(c[i]);
        t.add_row(row);
      }
      t.print(std::cout);
      std::cout << fmt::format(
          "(process-tree CPU and RSS means without the first {:g} s; GPU columns for gpu0)\n", *warmup);
    });
  }
}

}  // namespace trainscope::cli
