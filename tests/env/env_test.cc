// Environment manifest: /proc/cpuinfo snapshots of several CPUs, a
// snapshot system tree, NVML absent, and NVML through a test double library.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/test_util.h"
#include "trainscope/env/cpus.h"
#include "trainscope/env/json.h"
#include "trainscope/env/manifest.h"

namespace trainscope::env {
namespace {

std::string snapshot(const std::string& name) {
  std::ifstream in(std::string(TS_TEST_DATA_DIR) + "/cpuinfo/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CpuInfoTest, IntelXeon) {
  CpuInfo c = parse_cpuinfo(snapshot("intel_xeon.txt"));
  EXPECT_EQ(c.arch, "x86_64");
  EXPECT_EQ(c.vendor, "GenuineIntel");
  EXPECT_EQ(c.model_name, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz");
  EXPECT_EQ(c.family, "6");
  EXPECT_EQ(c.model, "85");
  EXPECT_EQ(c.stepping, "4");
  EXPECT_EQ(c.microcode, "0x2006e05");
  EXPECT_EQ(c.logical, 4);
  EXPECT_EQ(c.physical, 2);  // two hyperthreads per core
  EXPECT_EQ(c.sockets, 1);
  EXPECT_EQ(numerics_flags(c), "avx avx2 avx512bw avx512cd avx512dq avx512f avx512vl f16c fma");
}

TEST(CpuInfoTest, AmdEpycOfThisKindOfMachine) {
  CpuInfo c = parse_cpuinfo(snapshot("amd_epyc.txt"));
  EXPECT_EQ(c.vendor, "AuthenticAMD");
  EXPECT_EQ(c.model_name, "AMD EPYC");
  EXPECT_EQ(c.family, "26");
  EXPECT_EQ(c.logical, 2);
  EXPECT_NE(numerics_flags(c).find("avx2"), std::string::npos);
  EXPECT_NE(numerics_flags(c).find("fma"), std::string::npos);
}

TEST(CpuInfoTest, ArmNeoverse) {
  CpuInfo c = parse_cpuinfo(snapshot("arm_neoverse.txt"));
  EXPECT_EQ(c.arch, "aarch64");
  EXPECT_EQ(c.vendor, "ARM");
  EXPECT_EQ(c.model, "0xd40");
  EXPECT_EQ(c.family, "0x1");
  EXPECT_EQ(c.stepping, "1");
  EXPECT_EQ(c.model_name, "ARM part 0xd40");
  EXPECT_EQ(c.logical, 2);
  EXPECT_EQ(c.physical, 2);
  EXPECT_EQ(numerics_flags(c), "asimd asimdhp fphp sve");
  EXPECT_EQ(simd_float_lanes(c), 4);
}

TEST(CpuInfoTest, SimdFloatLanesFollowTheWidestVectorUnit) {
  EXPECT_EQ(simd_float_lanes(parse_cpuinfo(snapshot("intel_xeon.txt"))), 16);
  EXPECT_EQ(simd_float_lanes(parse_cpuinfo(snapshot("amd_epyc.txt"))), 16);
  CpuInfo c;
  c.flags = {"fpu", "sse", "sse2", "avx", "avx2", "fma"};
  EXPECT_EQ(simd_float_lanes(c), 8);
  c.flags = {"fpu", "sse", "sse2"};
  EXPECT_EQ(simd_float_lanes(c), 4);
}

TEST(SystemTest, ReadsASnapshotTree) {
  testing::TempDir root;
  auto put = [&](const std::string& rel, const std::string& content) {
    std::filesystem::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << content;
  };
  put("proc/cpuinfo", snapshot("intel_xeon.txt"));
  put("proc/meminfo", "MemTotal:       32768000 kB\nMemFree:  1 kB\n");
  put("proc/sys/kernel/osrelease", "5.15.0-test\n");
  put("etc/os-release", "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n");
  const std::string cpu0 = "sys/devices/system/cpu/cpu0/";
  put(cpu0 + "cpufreq/cpuinfo_min_freq", "1000000\n");
  put(cpu0 + "cpufreq/cpuinfo_max_freq", "3700000\n");
  put(cpu0 + "cache/index0/level", "1\n");
  put(cpu0 + "cache/index0/type", "Data\n");
  put(cpu0 + "cache/index0/size", "32K\n");
  put(cpu0 + "cache/index1/level", "2\n");
  put(cpu0 + "cache/index1/type", "Unified\n");
  put(cpu0 + "cache/index1/size", "1024K\n");
  Manifest m = capture_system(root.path());
  EXPECT_EQ(m["hardware.cpu.model_name"], "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz");
  EXPECT_EQ(m["hardware.cpu.min_freq"], "1000 MHz");
  EXPECT_EQ(m["hardware.cpu.max_freq"], "3700 MHz");
  EXPECT_EQ(m["hardware.cache.L1d"], "32K");
  EXPECT_EQ(m["hardware.cache.L2"], "1024K");
  EXPECT_EQ(m["hardware.memory.total"], "31.2 GiB");
  EXPECT_EQ(m["system.os"], "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(m["system.kernel"], "5.15.0-test");
}

// A machine of 4 CPUs: 2 physical cores with 2 hardware threads each.
// The cgroup's quota decides how many of them a process may keep busy.
TEST(CpuBudgetTest, PhysicalCoresUnderTheCgroupQuota) {
  testing::TempDir root;
  auto put = [&](const std::string& rel, const std::string& content) {
    std::filesystem::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << content;
  };
  put("sys/devices/system/cpu/online", "0-3\n");
  for (int cpu = 0; cpu < 4; ++cpu) {
    const std::string topo = "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    put(topo + "physical_package_id", "0\n");
    put(topo + "core_id", std::to_string(cpu / 2) + "\n");
  }
  CpuBudget b = cpu_budget(root.path());
  EXPECT_EQ(b.logical, 4);
  EXPECT_EQ(b.physical, 2);
  EXPECT_EQ(b.quota, 0);
  EXPECT_EQ(b.threads(), 2);
  // cgroup v2: the process's group allows 1.5 CPUs, its parent 3.
  put("proc/self/cgroup", "0::/jobs/train\n");
  put("sys/fs/cgroup/jobs/train/cpu.max", "150000 100000\n");
  put("sys/fs/cgroup/jobs/cpu.max", "300000 100000\n");
  b = cpu_budget(root.path());
  EXPECT_DOUBLE_EQ(b.quota, 1.5);
  EXPECT_EQ(b.threads(), 1);
  put("sys/fs/cgroup/jobs/train/cpu.max", "max 100000\n");
  EXPECT_DOUBLE_EQ(cpu_budget(root.path()).quota, 3.0);
  EXPECT_EQ(cpu_budget(root.path()).threads(), 2);
  // This live process: at least one core, never more than its CPUs.
  const CpuBudget live = cpu_budget();
  EXPECT_GE(live.threads(), 1);
  EXPECT_LE(live.threads(), live.logical);
}

TEST(CpuBudgetTest, KernelListsAndQuotaLines) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::set<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::set<int>{});
  EXPECT_EQ(parse_cpu_list("x-1"), std::set<int>{});
  EXPECT_EQ(parse_cpu_max("max 100000"), 0);
  EXPECT_EQ(parse_cpu_max("50000 100000"), 0.5);
  EXPECT_EQ(parse_cpu_max("garbage"), 0);
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(GpuTest, NoNvmlIsACleanNoGpu) {
  ScopedEnv lib("TRAINSCOPE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
  Manifest m = capture_gpus();
  EXPECT_EQ(m["driver.gpu"].rfind("none (NVML not found", 0), 0u) << m["driver.gpu"];
  for (const auto& [k, v] : m) EXPECT_EQ(k.rfind("hardware.gpu", 0), std::string::npos) << k;
}

TEST(GpuTest, NvmlTestDoubleFillsEveryField) {
  ScopedEnv lib("TRAINSCOPE_NVML_LIBRARY", TS_FAKE_NVML);
  Manifest m = capture_gpus();
  EXPECT_EQ(m["driver.gpu"], "2 NVIDIA GPU(s)");
  EXPECT_EQ(m["driver.nvidia.version"], "535.104.05");
  EXPECT_EQ(m["driver.cuda.driver_version"], "12.2");
  EXPECT_EQ(m["hardware.gpu0.name"], "Fake GPU A100");
  EXPECT_EQ(m["hardware.gpu1.name"], "Fake GPU B100");
  EXPECT_EQ(m["hardware.gpu1.uuid"], "GPU-00000000-1111-2222-3333-000000000001");
  EXPECT_EQ(m["hardware.gpu0.serial"], "SERIAL-1320");
  EXPECT_EQ(m["hardware.gpu0.memory_total"], "40.0 GiB");
  EXPECT_EQ(m["hardware.gpu1.compute_capability"], "8.1");
  EXPECT_EQ(m["hardware.gpu0.max_sm_clock"], "1410 MHz");
  EXPECT_EQ(m["hardware.gpu0.max_mem_clock"], "1215 MHz");
  EXPECT_EQ(m["hardware.gpu0.power_limit"], "400 W");
}

TEST(ManifestTest, EnvVarsAndDiffGroups) {
  ScopedEnv omp("OMP_NUM_THREADS", "3");
  ScopedEnv blas("OPENBLAS_NUM_THREADS", nullptr);
  Manifest a = capture_env_vars();
  EXPECT_EQ(a["env.OMP_NUM_THREADS"], "3");
  EXPECT_EQ(a["env.OPENBLAS_NUM_THREADS"], "unset");
  Manifest b = a;
  b["env.OMP_NUM_THREADS"] = "1";
  b["hardware.cpu.model_name"] = "other";
  a["hardware.cpu.model_name"] = "this";
  b["data.sha256./x"] = "ab";
  auto d = diff(a, b);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].group, "hardware");  // groups in their fixed order
  EXPECT_EQ(d[1].key, "env.OMP_NUM_THREADS");
  EXPECT_EQ(d[2].a, std::nullopt);
  EXPECT_EQ(side_text(d[2].a), "(absent)");
  EXPECT_TRUE(diff(a, a).empty());
  // Twenty-eighth hunt, A-D4: an entry recorded as the text "(absent)"
  // was no difference from none.
  Manifest note = a;
  note["user.note"] = "(absent)";
  const auto noted = diff(note, a);
  ASSERT_EQ(noted.size(), 1u);
  EXPECT_EQ(noted[0].a, "(absent)");
  EXPECT_EQ(noted[0].b, std::nullopt);
  EXPECT_TRUE(differences_json(noted)[0]["b"].is_null());
}

// Everyday-use defect 4: git ran through popen with hand-made quoting; a
// folder whose name holds a quote lost the git record or ran shell code.
TEST(ManifestTest, GitIsRecordedWhateverTheFolderIsCalled) {
  testing::TempDir dir;
  auto repo = dir.path() / "it's $(touch pwned) `touch pwned2`";
  std::filesystem::create_directories(repo);
  std::string q = testing::shell_quote(repo.string());
  auto made = testing::run_command("cd " + q +
                                   " && git init -q && echo x > f && git add f && "
                                   "git -c user.email=t@t -c user.name=t commit -qm init");
  ASSERT_EQ(made.exit_code, 0) << made.out;
  Manifest m = capture_git(repo);
  EXPECT_EQ(m["git.commit"].size(), 40u) << m["git.commit"];
  EXPECT_EQ(m["git.dirty"], "false");
  EXPECT_FALSE(std::filesystem::exists(repo / "pwned"));
  EXPECT_FALSE(std::filesystem::exists(repo / "pwned2"));
  EXPECT_FALSE(std::filesystem::exists("pwned"));
}

// Everyday-use defect 13: whether a run ran in a container or a VM, and
// under which memory limit, was not recorded.
TEST(SystemTest, ContainerVirtualMachineAndMemoryLimitAreRecorded) {
  testing::TempDir root;
  auto put = [&](const std::string& rel, const std::string& content) {
    std::filesystem::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << content;
  };
  CpuInfo vm;
  vm.flags = {"fpu", "sse2", "hypervisor"};
  Manifest bare = capture_isolation(root.path(), CpuInfo{});
  EXPECT_EQ(bare["system.container"], "none");
  EXPECT_EQ(bare["system.virtualization"], "none");
  EXPECT_EQ(bare["system.memory.cgroup_limit"], "none");

  put(".dockerenv", "");
  put("proc/self/cgroup", "0::/docker/abc\n");
  put("sys/fs/cgroup/docker/abc/memory.max", "4294967296\n");
  put("sys/fs/cgroup/docker/memory.max", "max\n");
  put("sys/class/dmi/id/sys_vendor", "QEMU\n");
  put("sys/class/dmi/id/product_name", "Standard PC (i440FX + PIIX, 1996)\n");
  Manifest m = capture_isolation(root.path(), vm);
  EXPECT_EQ(m["system.container"], "docker");
  EXPECT_EQ(m["system.virtualization"], "yes (hypervisor flag)");
  EXPECT_EQ(m["system.virtualization.machine"], "QEMU Standard PC (i440FX + PIIX, 1996)");
  EXPECT_EQ(m["system.memory.cgroup_limit"], "4.00 GiB");

  put("run/.containerenv", "engine=\"podman-4.3\"\nimage=\"docker.io/library/debian:12\"\n");
  Manifest p = capture_isolation(root.path(), vm);
  EXPECT_EQ(p["system.container"], "podman");
  EXPECT_EQ(p["system.container.image"], "docker.io/library/debian:12");
  // This machine, live: the keys are there whatever it is.
  Manifest live = capture_system("/");
  EXPECT_TRUE(live.count("system.container"));
  EXPECT_TRUE(live.count("system.virtualization"));
}

}  // namespace
}  // namespace trainscope::env
