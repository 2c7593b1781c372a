// Small utilities shared by every component: time, identifiers, hashing,
// escaping. All functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::core {

// Seconds since the Unix epoch (UTC), with sub-microsecond resolution.
double unix_now();

// Seconds from a monotonic clock; only differences are meaningful.
double monotonic_now();

// "2026-11-22T01:38:06.123Z" for a unix time in seconds.
std::string format_utc(double unix_seconds);

// A random RFC 4122 version-4 UUID in lowercase canonical form.
std::string new_uuid();
// The first 8 characters of a run's UUID, as messages and tables show it.
inline std::string short_uuid(std::string_view uuid) { return std::string(uuid.substr(0, 8)); }

// Lowercase hex SHA-256 of a byte string.
std::string sha256_hex(std::string_view bytes);
// Whether `text` is what sha256_hex writes: 64 lower-case hex digits (a
// stored hash read back is checked so).
bool is_sha256_hex(std::string_view text);

class Sha256;  // sha256.h, private to core
// SHA-256 of bytes fed a piece at a time (a file as it is sent).
class Sha256Hasher {
 public:
  // A digest of nothing yet.
  Sha256Hasher();
  // Frees the digest's state.
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;
  // Feeds the next `n` bytes.
  void update(const void* bytes, size_t n);
  // Lowercase hex of the digest of all that was fed; call once.
  std::string hex();

 private:
  std::unique_ptr<Sha256> impl_;
};

// Where trainscope keeps what it can compute again: $XDG_CACHE_HOME/trainscope,
// else $HOME/.cache/trainscope; empty when neither variable is set.
std::filesystem::path user_cache_dir();

// Lowercase hex SHA-256 of a file's content; throws Error naming the file if it
// cannot be read.
std::string sha256_file(const std::filesystem::path& path);

// Escapes control characters and backslashes so that any key prints on one
// line and moves no terminal: "a\nb" -> "a\\nb", ESC -> "\\x1b", a C1
// control (U+0080..U+009F: NEL, CSI) -> "\\u0085", a bidirectional
// control (is_bidi_control: it would reorder the line) -> "\\u202e", a
// byte that is not UTF-8 -> "\\xff", a character that draws as nothing
// (is_invisible_code_point) -> "\\u200b" but a joiner or a selector that
// follows text (an emoji sequence's U+200D, U+FE0F). Printable UTF-8
// passes through unchanged.
std::string escape_for_display(std::string_view s);
// `s` as escape_for_display shows it, cut to at most `max_bytes` at a
// character's start with "..." after a cut: a message never shows half a
// character as bytes the text does not hold (twenty-second hunt, B-D2).
std::string escape_cut(std::string_view s, size_t max_bytes);
// The longest start of `s` of at most `max_bytes` that ends at a
// character's start (UTF-8 text stays UTF-8 when cut there).
std::string_view utf8_prefix(std::string_view s, size_t max_bytes);
// `s` as valid UTF-8: a byte that starts no sequence (overlong forms,
// surrogates and code points past U+10FFFF included) becomes U+FFFD. For
// text from a store or a file that goes into a format that must be UTF-8
// (XML, SVG, proto3 strings).
std::string valid_utf8(std::string_view s);
// The length of the UTF-8 sequence at s[i] (1 to 4), 0 when the bytes there
// start none (overlong forms, surrogates and code points past U+10FFFF
// included). Pure; `i` must be inside `s`.
size_t utf8_sequence(std::string_view s, size_t i);
// The code point of the `n`-byte sequence at s[i] (n as utf8_sequence
// gave it, not 0).
char32_t utf8_code_point(std::string_view s, size_t i, size_t n);
// Whether `c` reorders the text around it (Unicode's bidirectional
// controls: U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069): shown
// raw, a name could make a line read as something else.
bool is_bidi_control(char32_t c);
// Whether `c` draws as nothing: Unicode's Default_Ignorable_Code_Point
// (U+00AD, U+200B..U+200F, U+2060..U+206F, U+3164, U+FE00..U+FE0F, U+FEFF,
// U+E0000..U+E0FFF ...).
bool is_invisible_code_point(char32_t c);
// Whether `c` shows as blank space or nothing: Unicode's White_Space
// (the space, U+00A0, U+2000..U+200A, U+3000 ...; not the C0 controls) and
// Default_Ignorable_Code_Point (U+00AD, U+200B..U+200F, U+2060..U+206F,
// U+3164, U+FE00..U+FE0F, U+FEFF, U+E0000..U+E0FFF ...), and U+2800.
bool is_blank_code_point(char32_t c);

// The rule for a key or a name, wherever one is checked (store/accept.h,
// config's run.experiment): the character at text[i] (valid UTF-8, `n`
// bytes) is a control character: C0 (below 0x20), DEL, C1 (U+0080..U+009F)
// or a bidirectional control (it reorders how the text around it reads).
bool is_control_at(std::string_view text, size_t i, size_t n);
// Whether `text` is valid UTF-8, without a copy (valid_utf8 makes one).
bool is_utf8(std::string_view text);
// Whether `text` (valid UTF-8) holds a control character (is_control_at).
bool holds_control(std::string_view text);
// Whether every character of `text` (valid UTF-8) is a blank
// (is_blank_code_point); true for "".
bool only_blanks(std::string_view text);
// Why `text` is not a key or a name of at most `max_bytes`: "is empty",
// "is longer than N bytes", "is not UTF-8 text", "holds a control
// character", "is only blanks"; nullopt when it is one.
std::optional<std::string> text_problem(std::string_view text, size_t max_bytes);

// `text` read whole as a decimal number from `low` to `high` (digits after
// an optional '-', nothing else: no blank, sign '+' or fraction); nullopt
// when it is not one. The one rule for counts read back from a store.
std::optional<int64_t> whole_in(std::string_view text, int64_t low, int64_t high);

// A CSV field: text that would move a terminal (a control character, a
// line break, a byte that is not UTF-8: escape_for_display) escaped, as
// every reader shows stored text, else as it is; quoted per RFC 4180 when
// it holds a comma or a quote.
std::string csv_field(std::string_view s);

// Formats a double so that parsing it back yields the same bits; NaN and
// infinities print as "nan", "inf" and "-inf".
std::string format_double(double v);
// Levenshtein distance (for "did you mean" suggestions); any distance above
// `limit` is returned as limit + 1, found early.
size_t edit_distance(const std::string& a, const std::string& b, size_t limit = SIZE_MAX);

// "1h02m", "3m05s", "4.2s"; "-" for a negative or non-finite duration.
std::string format_duration(double seconds);

// 6 significant digits, for tables; NaN and infinities spelled out.
std::string format_short(double v);

// The p-quantile (0..1) of `v` with linear interpolation between order
// statistics (p = 0.5: the median); NaN for an empty vector.
double percentile(std::vector<double> v, double p);

// The mean of `v` (NaN for an empty vector), also where a sum of finite
// values would overflow (twenty-second hunt, A-D5: twelve samples of 1e308
// had the mean inf): values beyond 2^500 are summed scaled by a power of
// two, which is exact, so any other data gives the plain sum's bits.
double mean(const std::vector<double>& v);
// The standard deviation of `v` with `ddof` (NaN for fewer than ddof + 1
// values), its squares scaled as mean() scales its sum.
double sd(const std::vector<double>& v, int ddof);

// Every command that writes a file checks its path the same way, before it
// does any work: check_output_file throws Error(kUsage) with one line naming
// the path and what to do when `path` is a folder, its folder does not
// exist or is not a folder, or nothing may be written there (permissions,
// a read-only file system). "" and "-" (stdout) pass.
void check_output_file(const std::filesystem::path& path);
// A file or folder no output may replace or write into: a store's file and
// its artifact folder, registered by the store that opens them.
// check_output_file and check_output_folder (and so every writer of a -o)
// refuse `path` itself and, for a folder, anything in it, naming `what`
// (thirty-first hunt, A-D4: `runs export -o s.db` replaced the store).
// Thread-safe.
void protect_from_output(const std::filesystem::path& path, std::string what);
// The same for a folder that is created (with its parents) when missing:
// refused when it is not a folder, when the nearest folder that exists
// may not be written in, or when it is "-" (stdout, which cannot hold a
// folder's files; "./-" names a folder '-').
void check_output_folder(const std::filesystem::path& path);

// Throws Error(kUsage): "cannot write WHAT: <strerror(err)>; free space or
// choose another place" (a full disk, /dev/full, an I/O error).
[[noreturn]] void fail_writing(const std::string& what, int err);

// Writes a file so that readers see either its old content or all of the
// new one: `body` writes into a temporary file beside `path` that is renamed
// over it at the end. The path is checked first (check_output_file); a FIFO
// or device (/dev/stdout) is written in place. Throws Error naming the path
// when it cannot be written (the temporary file is removed).
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& body);

// What write_synced_file wrote.
struct WrittenFile {
  std::string sha256;  // lowercase hex of the bytes written
  int64_t size = 0;
};
// Creates (or truncates) `path` and writes it through `body` in one pass:
// the bytes are hashed as they go and synced to disk (fsync) before this
// returns, so a crash after it leaves the whole file. Throws Error(kStore)
// naming the file when it cannot be written (disk full, ...).
WrittenFile write_synced_file(const std::filesystem::path& path,
                              const std::function<void(std::ostream&)>& body);
// Syncs a folder so that a rename into it survives a crash (best effort).
void sync_directory(const std::filesystem::path& dir);

// This host's name.
std::string host_name();

// Start time of a process in clock ticks since boot (field 22 of
// /proc/PID/stat), or -1 if the process does not exist. Together with the PID
// it identifies a process even when PIDs are reused.
int64_t process_start_ticks(int64_t pid);

// Whether the process `pid` of this host that started at `start_ticks` is
// alive: it exists, has that start time (not a reused PID) and has not
// exited (a zombie waiting for its parent is not alive). A stopped process
// (SIGSTOP, Ctrl-Z) is alive.
bool process_alive(int64_t pid, int64_t start_ticks);

// kill(target, sig), then SIGCONT to the same target: a stopped process
// (SIGSTOP, Ctrl-Z, a debugger) cannot act on a stop signal until it runs
// again, as a shell's `kill` of a stopped job knows. `target` as kill()
// takes it (-pgid: a process group). Async-signal-safe; kill()'s result.
int stop_signal(int64_t target, int sig);

// Flushes std::cout, std::cerr and every stdio stream, then ends the process
// with _exit(code): no static destructors, among them libtorch's, which
// deregister every operator one by one (0.2 s). For a process whose stores
// are closed and whose output is written: a forked training or rank, the
// CLI's main.
[[noreturn]] void exit_now(int code);

// The non-empty, trimmed items of a comma-separated list ("a, b,,c" ->
// a, b, c).
std::vector<std::string> split_list(std::string_view text);
// The trimmed items of a list a user gave as `what` ("--columns"): an empty
// item ("name,,status", a trailing comma) is Error(kUsage) naming it, not
// dropped (thirtieth hunt, A-D1). Empty text is no items.
std::vector<std::string> split_given_list(std::string_view text, std::string_view what);

}  // namespace trainscope::core
