#include "trainscope/core/util.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "sha256.h"
#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"

namespace trainscope::core {

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

double monotonic_now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string format_utc(double unix_seconds) {
  // Years 1 to 9999 (what %Y prints in four digits); anything else is not
  // a time a reader can show.
  if (!std::isfinite(unix_seconds) || unix_seconds < -62135596800.0 ||
      unix_seconds >= 253402300800.0)
    return "-";
  auto secs = static_cast<std::time_t>(std::floor(unix_seconds));
  int millis = static_cast<int>((unix_seconds - static_cast<double>(secs)) * 1000.0);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, millis);
}

std::string new_uuid() {
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  std::array<uint8_t, 16> b{};
  for (int i = 0; i < 2; ++i) {
    uint64_t r = gen();
    for (int j = 0; j < 8; ++j) b[i * 8 + j] = static_cast<uint8_t>(r >> (8 * j));
  }
  b[6] = (b[6] & 0x0f) | 0x40;  // version 4
  b[8] = (b[8] & 0x3f) | 0x80;  // RFC 4122 variant
  std::string out;
  out.reserve(36);
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 15]);
  }
  return out;
}

bool is_sha256_hex(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

std::filesystem::path user_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::absolute(std::filesystem::path(x) / "trainscope");
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "trainscope";
  return {};
}

Sha256Hasher::Sha256Hasher() : impl_(std::make_unique<Sha256>()) {}
Sha256Hasher::~Sha256Hasher() = default;
void Sha256Hasher::update(const void* bytes, size_t n) { impl_->update(bytes, n); }
std::string Sha256Hasher::hex() { return impl_->hex(); }

std::string sha256_file(const std::filesystem::path& path) {
  const int fd = open_regular_file(path, "file");  // a FIFO would block, /dev/zero never ends
  if (fd < 0)
    fail(ErrorKind::kNotFound, "cannot read '{}': {}", path.string(), std::strerror(errno));
  Sha256 h;
  std::array<char, 1 << 16> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      if (n < 0) fail(ErrorKind::kRuntime, "error while reading '{}'", path.string());
      return h.hex();
    }
    h.update(buf.data(), static_cast<size_t>(n));
  }
}

namespace {

// An ASCII character as escape_for_display shows it, appended to `out`.
void append_ascii(std::string& out, unsigned char c) {
  switch (c) {
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\\':
      out += "\\\\";
      break;
    default:
      if (c < 0x20 || c == 0x7f) {
        out += fmt::format("\\x{:02x}", c);
      } else {
        out.push_back(static_cast<char>(c));
      }
  }
}

}  // namespace

size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2) || (c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F)) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3) || (c == 0xF0 && b(1) < 0x90) ||
        (c == 0xF4 && b(1) > 0x8F))
      return 0;
    return 4;
  }
  return 0;
}

char32_t utf8_code_point(std::string_view s, size_t i, size_t n) {
  const auto b = [&](size_t k) {
    return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]));
  };
  if (n == 1) return b(0);
  if (n == 2) return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
  if (n == 3) return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

bool is_bidi_control(char32_t c) {
  return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069);
}

bool is_invisible_code_point(char32_t c) {
  // Unicode 15's Default_Ignorable_Code_Point.
  return c == 0xAD || c == 0x34F || c == 0x61C || c == 0x115F || c == 0x1160 || c == 0x17B4 ||
         c == 0x17B5 || (c >= 0x180B && c <= 0x180F) || (c >= 0x200B && c <= 0x200F) ||
         (c >= 0x202A && c <= 0x202E) || (c >= 0x2060 && c <= 0x206F) || c == 0x3164 ||
         (c >= 0xFE00 && c <= 0xFE0F) || c == 0xFEFF || c == 0xFFA0 ||
         (c >= 0xFFF0 && c <= 0xFFF8) || (c >= 0x1BCA0 && c <= 0x1BCA3) ||
         (c >= 0x1D173 && c <= 0x1D17A) || (c >= 0xE0000 && c <= 0xE0FFF);
}

bool is_blank_code_point(char32_t c) {
  // Unicode 15's White_Space (those that are not controls).
  const bool space = c == 0x20 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
                     c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
  // Drawn as blank space though neither: the Braille blank.
  return space || is_invisible_code_point(c) || c == 0x2800;
}

namespace {

// The length of the UTF-8 sequence that `lead` starts, in valid UTF-8.
size_t lead_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

}  // namespace

bool is_control_at(std::string_view text, size_t i, size_t n) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (n == 1) return c < 0x20 || c == 0x7f;
  if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) return true;
  return is_bidi_control(utf8_code_point(text, i, n));
}

bool is_utf8(std::string_view text) {
  for (size_t i = 0, n = 0; i < text.size(); i += n)
    if ((n = utf8_sequence(text, i)) == 0) return false;
  return true;
}

bool holds_control(std::string_view text) {
  for (size_t i = 0, n = 0; i < text.size(); i += n) {
    n = lead_length(static_cast<unsigned char>(text[i]));
    if (is_control_at(text, i, n)) return true;
  }
  return false;
}

bool only_blanks(std::string_view text) {
  for (size_t i = 0, n = 0; i < text.size(); i += n) {
    n = lead_length(static_cast<unsigned char>(text[i]));
    if (!is_blank_code_point(utf8_code_point(text, i, n))) return false;
  }
  return true;
}

std::optional<int64_t> whole_in(std::string_view text, int64_t low, int64_t high) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < low || v > high)
    return std::nullopt;
  return v;
}

std::optional<std::string> text_problem(std::string_view text, size_t max_bytes) {
  if (text.empty()) return "is empty";
  if (text.size() > max_bytes) return fmt::format("is longer than {} bytes", max_bytes);
  if (!is_utf8(text)) return "is not UTF-8 text";
  if (holds_control(text)) return "holds a control character";
  if (only_blanks(text)) return "is only blanks";
  return std::nullopt;
}

std::string escape_for_display(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool after_symbol = false;  // the last character was drawn, not a blank, and not ASCII
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_sequence(s, i);
    const char32_t cp = n > 1 ? utf8_code_point(s, i, n) : c;
    // A joiner or a selector that follows a symbol shapes it (an emoji
    // sequence, a flag's tags): part of it, not hidden in it. After ASCII
    // ("kind" + U+200D) it would only make a key look like another.
    const bool modifies =
        after_symbol && (cp == 0x200C || cp == 0x200D || cp == 0x34F ||
                         (cp >= 0x180B && cp <= 0x180F) || (cp >= 0xFE00 && cp <= 0xFE0F) ||
                         (cp >= 0xE0020 && cp <= 0xE007F) || (cp >= 0xE0100 && cp <= 0xE01EF));
    const bool c1 = n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;
    after_symbol = modifies || (n > 1 && !c1 && !is_blank_code_point(cp));
    if (n == 0) {  // a byte that is not UTF-8: a terminal would guess
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else if (c1) {
      // A C1 control (U+0080..U+009F): NEL breaks a line, CSI starts an
      // escape sequence in terminals that take 8-bit controls.
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[i + 1]));
      i += 2;
    } else if (n > 1 && (is_bidi_control(cp) || (is_invisible_code_point(cp) && !modifies))) {
      // Shown as its number: raw, a bidirectional control would reorder
      // the rest of the line, and what draws as nothing would not be seen
      // (a key of U+200D alone, a U+200B after a name).
      out += cp > 0xFFFF ? fmt::format("\\U{:08x}", static_cast<uint32_t>(cp))
                         : fmt::format("\\u{:04x}", static_cast<uint32_t>(cp));
      i += n;
    } else if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      append_ascii(out, c);
      ++i;
    }
  }
  return out;
}

std::string_view utf8_prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes;
  // Back to a character's start (continuation bytes are 10xxxxxx): at
  // most three steps, whatever bytes text that is not UTF-8 holds.
  for (int i = 0; i < 3 && cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80; ++i)
    --cut;
  return s.substr(0, cut);
}

std::string escape_cut(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return escape_for_display(s);
  return escape_for_display(utf8_prefix(s, max_bytes)) + "...";
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i);
    out += n ? s.substr(i, n) : std::string_view("\xEF\xBF\xBD");
    i += n ? n : 1;
  }
  return out;
}

std::string csv_field(std::string_view raw) {
  // Text that would move a terminal (a control, a byte that is not UTF-8,
  // an invisible or bidirectional character) is the escaped text; text
  // whose only escape would be its backslashes is kept as it is.
  std::string shown = escape_for_display(raw), doubled;
  for (char c : raw) {
    doubled.push_back(c);
    if (c == '\\') doubled.push_back(c);
  }
  const std::string_view s = shown == doubled ? raw : std::string_view(shown);
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {

// Why nothing may be created in `dir` (an existing folder), or "".
std::string unwritable(const std::filesystem::path& dir) {
  if (::access(dir.c_str(), W_OK | X_OK) == 0) return {};
  return std::strerror(errno);
}

std::string folder_of(const std::filesystem::path& path) {
  const auto parent = path.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

struct Protected {
  std::mutex mu;
  std::vector<std::pair<std::filesystem::path, std::string>> paths;  // weakly canonical
};

Protected& protected_paths() {
  static Protected p;
  return p;
}

// Refuses `path` when it is, or lies inside, a path no output may touch.
void check_protected(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path at = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return;
  Protected& p = protected_paths();
  std::lock_guard lock(p.mu);
  for (const auto& [kept, what] : p.paths) {
    auto [k, a] = std::mismatch(kept.begin(), kept.end(), at.begin(), at.end());
    if (k == kept.end())
      fail(ErrorKind::kUsage, "cannot write '{}': it is {} ('{}'); choose another place",
           path.string(), what, kept.string());
  }
}

}  // namespace

void protect_from_output(const std::filesystem::path& path, std::string what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path at = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return;
  Protected& p = protected_paths();
  std::lock_guard lock(p.mu);
  p.paths.emplace_back(std::move(at), std::move(what));
}

void check_output_file(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  if (path.empty() || path == "-") return;
  check_protected(path);
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::is_directory(st))
    fail(ErrorKind::kUsage, "cannot write '{}': it is a folder; give a file name in it, e.g. '{}'",
         path.string(), (path / "out").string());
  if (fs::exists(st) && !fs::is_regular_file(st)) return;  // a FIFO or a device: written in place
  const fs::path dir = folder_of(path);
  const auto dst = fs::status(dir, ec);
  if (!fs::exists(dst))
    fail(ErrorKind::kUsage,
         "cannot write '{}': folder '{}' does not exist; create it first (mkdir -p '{}')",
         path.string(), dir.string(), dir.string());
  if (!fs::is_directory(dst))
    fail(ErrorKind::kUsage, "cannot write '{}': '{}' is not a folder", path.string(), dir.string());
  if (auto why = unwritable(dir); !why.empty())
    fail(ErrorKind::kUsage,
         "cannot write '{}': folder '{}' may not be written in ({}); choose "
         "another place",
         path.string(), dir.string(), why);
}

void check_output_folder(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return;
  // `-` is stdout wherever a file is written; a folder of files cannot go
  // there, and a folder named '-' is not what was meant.
  if (path == "-")
    fail(ErrorKind::kUsage,
         "cannot write a folder of files to stdout ('-'); give a folder (./- for one named '-')");
  check_protected(path);
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    fail(ErrorKind::kUsage, "cannot write into '{}': it is a file, not a folder; give a folder",
         path.string());
  // The nearest folder that exists is where the missing ones are created.
  fs::path dir = fs::exists(st) ? path : fs::path(folder_of(path));
  while (!fs::exists(dir, ec) && dir.has_parent_path() && dir.parent_path() != dir)
    dir = dir.parent_path();
  if (!fs::exists(dir, ec)) dir = ".";
  if (!fs::is_directory(dir, ec))
    fail(ErrorKind::kUsage, "cannot create folder '{}': '{}' is a file, not a folder",
         path.string(), dir.string());
  if (auto why = unwritable(dir); !why.empty())
    fail(ErrorKind::kUsage,
         "cannot write into '{}': folder '{}' may not be written in ({}); "
         "choose another place",
         path.string(), dir.string(), why);
}

void fail_writing(const std::string& what, int err) {
  fail(ErrorKind::kUsage, "cannot write {}: {}; free space or choose another place", what,
       err ? std::strerror(err) : "the write failed");
}

void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& body) {
  if (path.empty())
    fail(ErrorKind::kUsage, "no file to write: the name is empty; give a file name");
  check_output_file(path);
  std::error_code ec;
  if (std::filesystem::is_fifo(path, ec)) return write_fifo(path, body);  // never blocks forever
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    std::ofstream out(path, std::ios::binary);  // a device: no rename over it
    if (!out) fail(ErrorKind::kUsage, "cannot write '{}': {}", path.string(), std::strerror(errno));
    body(out);
    out.flush();
    if (!out) fail_writing("'" + path.string() + "'", errno);
    return;
  }
  // A name of its own beside the file, created only if new (O_EXCL; mode
  // 0666 less the umask, as the file itself would be): a fixed FILE.tmp
  // overwrote, then removed, a user's file of that name (thirtieth hunt,
  // A-D5).
  std::filesystem::path tmp;
  for (int tries = 0; tmp.empty(); ++tries) {
    std::string name = path.string() + ".tmp-" + new_uuid().substr(0, 8);
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      tmp = name;
    } else if (errno != EEXIST || tries > 100) {
      fail(ErrorKind::kUsage, "cannot write '{}': {}", path.string(), std::strerror(errno));
    }
  }
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      const int err = errno;
      std::filesystem::remove(tmp, ec);
      fail(ErrorKind::kUsage, "cannot write '{}': {}", path.string(), std::strerror(err));
    }
    try {
      body(out);
    } catch (...) {
      out.close();
      std::filesystem::remove(tmp, ec);
      throw;
    }
    out.flush();
    if (!out) {
      const int err = errno;
      std::filesystem::remove(tmp, ec);
      fail_writing("'" + path.string() + "'", err);
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();  // before remove() reuses ec
    std::filesystem::remove(tmp, ec);
    fail(ErrorKind::kUsage, "cannot create '{}': {}; choose another place", path.string(), why);
  }
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

int64_t process_start_ticks(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return -1;
  std::string line;
  std::getline(in, line);
  // Field 2 (comm) may contain spaces and parentheses: skip past the last ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::string_view rest(line);
  rest.remove_prefix(close + 2);
  // rest starts at field 3; we need field 22, i.e. the 20th token from here.
  int field = 3;
  size_t pos = 0;
  while (field < 22 && pos < rest.size()) {
    pos = rest.find(' ', pos);
    if (pos == std::string_view::npos) return -1;
    ++pos;
    ++field;
  }
  int64_t ticks = -1;
  std::from_chars(rest.data() + pos, rest.data() + rest.size(), ticks);
  return ticks;
}

int stop_signal(int64_t target, int sig) {
  const int rc = kill(static_cast<pid_t>(target), sig);
  if (rc == 0 && sig != SIGKILL && sig != SIGCONT) kill(static_cast<pid_t>(target), SIGCONT);
  return rc;
}

bool process_alive(int64_t pid, int64_t start_ticks) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return false;
  // Field 3, the state, follows the last ')' of the command name.
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char state = line[close + 2];
  if (state == 'Z' || state == 'X' || state == 'x') return false;
  return process_start_ticks(pid) == start_ticks;
}

void exit_now(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(code);
}

std::string format_duration(double s) {
  // Past 10,000 years (2^53 ns): not a duration a run had.
  if (!std::isfinite(s) || s < 0 || s > 3.2e11) return "-";
  if (s < 60) return fmt::format("{:.1f}s", s);
  auto total = static_cast<int64_t>(s);
  if (total < 3600) return fmt::format("{}m{:02d}s", total / 60, total % 60);
  return fmt::format("{}h{:02d}m", total / 3600, (total % 3600) / 60);
}

std::string format_short(double v) {
  if (!std::isfinite(v)) return format_double(v);
  return fmt::format("{:.6g}", v);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  double idx = p * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(idx)), hi = static_cast<size_t>(std::ceil(idx));
  const double f = idx - static_cast<double>(lo), gap = v[hi] - v[lo];
  // A gap past the largest double (-1e308 to 1e308): weighted instead.
  return std::isfinite(gap) || !std::isfinite(v[lo]) || !std::isfinite(v[hi])
             ? v[lo] + gap * f
             : v[lo] * (1 - f) + v[hi] * f;
}

namespace {

// The power of two `v` is summed scaled by: 2^e > max |x| when that is
// beyond 2^500 (a square or a sum of several could overflow), else 1.
int scale_exponent(const std::vector<double>& v) {
  double big = 0;
  for (double x : v) big = std::max(big, std::fabs(x));
  return std::isfinite(big) && big > 0x1p500 ? std::ilogb(big) + 1 : 0;
}

}  // namespace

double mean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  const int e = scale_exponent(v);
  double sum = 0;
  for (double x : v) sum += std::ldexp(x, -e);
  return std::ldexp(sum / static_cast<double>(v.size()), e);
}

double sd(const std::vector<double>& v, int ddof) {
  if (std::ssize(v) <= ddof) return NAN;
  const int e = scale_exponent(v);
  const double m = std::ldexp(mean(v), -e);
  double ss = 0;
  for (double x : v) ss += (std::ldexp(x, -e) - m) * (std::ldexp(x, -e) - m);
  return std::ldexp(std::sqrt(ss / static_cast<double>(std::ssize(v) - ddof)), e);
}

size_t edit_distance(const std::string& a, const std::string& b, size_t limit) {
  const size_t over = limit == SIZE_MAX ? SIZE_MAX : limit + 1;
  const size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > limit) return over;
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    // A row's minimum never decreases further down.
    if (*std::min_element(cur.begin(), cur.end()) > limit) return over;
    std::swap(prev, cur);
  }
  return std::min(prev[b.size()], over);
}

namespace {

// Every trimmed item of a comma-separated list, the empty ones included.
std::vector<std::string> list_items(std::string_view text) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= text.size();) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string part(text.substr(start, comma - start));
    start = comma + 1;
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    out.push_back(std::move(part));
  }
  return out;
}

}  // namespace

std::vector<std::string> split_given_list(std::string_view text, std::string_view what) {
  if (text.empty()) return {};
  std::vector<std::string> out = list_items(text);
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].empty())
      fail(ErrorKind::kUsage, "{} '{}': item {} is empty; separate the items with single commas",
           what, text, i + 1);
  return out;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out = list_items(text);
  std::erase(out, std::string());
  return out;
}

}  // namespace trainscope::core
