// core::edit_distance, with and without a limit; files opened so that a
// FIFO, device or folder is refused without blocking (regular_file.h);
// write_fully() waiting for a non-blocking descriptor (output.h).
#include "trainscope/core/util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/markup.h"
#include "trainscope/core/output.h"
#include "trainscope/core/regular_file.h"

namespace trainscope::core {
namespace {

TEST(EditDistanceTest, ExactBelowTheLimitAndCappedAbove) {
  EXPECT_EQ(edit_distance("trian", "train"), 2u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting", 3), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting", 2), 3u);  // limit + 1
  EXPECT_EQ(edit_distance("a-very-long-garbage-key", "lr", 2), 3u);
  EXPECT_EQ(edit_distance("optimizer.nam", "optimizer.name", 1), 1u);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A FIFO nobody writes to, /dev/zero and a folder are refused at once with
// one line naming the path (a plain open() of the FIFO blocked forever); a
// missing file is -1 with errno for the caller's own message.
TEST(RegularFileTest, NonRegularFilesAreRefusedWithoutBlocking) {
  trainscope::testing::TempDir dir;
  const auto fifo = dir / "entry.bin";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_of([&] { open_regular_file(fifo, "config"); }),
            "cannot read config '" + fifo.string() +
                "': it is a FIFO (named pipe), not a regular file; give the path of a file");
  EXPECT_EQ(error_of([&] { read_regular_file(fifo, "study file"); }),
            "cannot read study file '" + fifo.string() +
                "': it is a FIFO (named pipe), not a regular file; give the path of a file");
  EXPECT_NE(error_of([&] { sha256_file(fifo); }).find("is a FIFO (named pipe)"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(error_of([&] { read_regular_file("/dev/zero", "IDX image file"); }),
            "cannot read IDX image file '/dev/zero': it is a character device, not a regular "
            "file; give the path of a file");
  EXPECT_EQ(error_of([&] { read_regular_file(dir.path(), "config"); }),
            "cannot read config '" + dir.path().string() +
                "': it is a folder, not a regular file; give the path of a file");
  errno = 0;
  EXPECT_EQ(open_regular_file(dir / "absent", "config"), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_FALSE(read_regular_file(dir / "absent", "config"));
  std::ofstream(dir / "a.yaml") << "train: {epochs: 1}\n";
  EXPECT_EQ(read_regular_file(dir / "a.yaml", "config"), "train: {epochs: 1}\n");
  const int fd = open_regular_file(dir / "a.yaml", "config");
  ASSERT_GE(fd, 0);
  EXPECT_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);  // blocking again
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  close(fd);
}

// Output into a FIFO: written in place once a reader opens it; a FIFO
// nobody reads is refused after the wait instead of blocking forever.
TEST(RegularFileTest, AFifoOutputNeedsAReader) {
  trainscope::testing::TempDir dir;
  const auto fifo = dir / "out.csv";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_of([&] {
              write_fifo(
                  fifo, [](std::ostream& o) { o << "a,b\n"; }, 0.2);
            }),
            "cannot write '" + fifo.string() +
                "': it is a FIFO (named pipe) that nobody reads; start its reader first, or give "
                "a file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  std::string got;
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // after the writer waits
    std::ifstream in(fifo);
    std::stringstream ss;
    ss << in.rdbuf();
    got = ss.str();
  });
  const std::string big(300000, 'x');  // more than a pipe holds
  write_file_atomically(fifo, [&](std::ostream& o) { o << "a,b\n" << big; });
  reader.join();
  EXPECT_EQ(got, "a,b\n" + big);
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));  // not replaced by a file
}

// A descriptor another process set O_NONBLOCK (a CLI's stdout) whose reader
// is slower than the writer: EAGAIN is a wait for the reader, not a failure
// that cuts the output at what the pipe held.
TEST(WriteFullyTest, ANonBlockingPipeIsWaitedForNotCut) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  ASSERT_EQ(fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK), 0);
  // Full: a plain write(2) now fails with EAGAIN.
  const std::string chunk(4096, 'f');
  size_t filled = 0;
  for (ssize_t n; (n = write(p[1], chunk.data(), chunk.size())) > 0;)
    filled += static_cast<size_t>(n);
  ASSERT_EQ(errno, EAGAIN);
  std::string got;
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the writer waits by now
    char buf[4096];
    for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  });
  std::string big(1 << 20, 'x');  // 16 times what a pipe holds
  big.back() = 'y';
  const int err = write_fully(p[1], big);
  close(p[1]);
  reader.join();
  close(p[0]);
  EXPECT_EQ(err, 0);
  ASSERT_EQ(got.size(), filled + big.size());
  EXPECT_TRUE(got.compare(filled, std::string::npos, big) == 0);
}

// A reader that left is the failure the caller reports (EPIPE), at once.
TEST(WriteFullyTest, AReaderThatLeftIsTheFailure) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
  close(p[0]);
  struct sigaction ignore {};
  struct sigaction old {};
  ignore.sa_handler = SIG_IGN;  // the test's own process: EPIPE, not death
  sigaction(SIGPIPE, &ignore, &old);
  EXPECT_EQ(write_fully(p[1], "abc"), EPIPE);
  sigaction(SIGPIPE, &old, nullptr);
  close(p[1]);
}

// A store's text in Markdown stays text: no section, no table column, no
// HTML, no end of a code span (a Model Card, a study report).
TEST(MarkupTest, StoreTextStaysTextInMarkdown) {
  EXPECT_EQ(markdown_text("x\n## Results <img src=x onerror=alert(1)> a|b"),
            "x\\\\n\\#\\# Results \\<img src=x onerror=alert(1)\\> a\\|b");
  EXPECT_EQ(markdown_text("test/accuracy 0.5"), "test/accuracy 0.5");
  EXPECT_EQ(markdown_code("lenet5"), "`lenet5`");
  EXPECT_EQ(markdown_code("a`b"), "``a`b``");
  EXPECT_EQ(markdown_code("`x"), "`` `x ``");
  EXPECT_EQ(markdown_code("a\nb"), "`a\\nb`");
}

// Issue 51, thirteenth hunt (A-D3): `runs list -f csv` and `stats -f csv`
// printed a param's terminal escapes raw. Every CSV field is shown as the
// table shows it; text with nothing to escape but backslashes is kept.
TEST(CsvFieldTest, TextThatWouldMoveATerminalIsEscapedAndTheRestKept) {
  EXPECT_EQ(csv_field("x\x1b]0;pwn\x07\x1b[2J\ny"), "x\\x1b]0;pwn\\x07\\x1b[2J\\ny");
  EXPECT_EQ(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
  EXPECT_EQ(csv_field("a,b\r"), "\"a,b\\r\"");
  EXPECT_EQ(csv_field("C:\\runs\\x"), "C:\\runs\\x");
  EXPECT_EQ(csv_field("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(csv_field("\xff\\"), "\\xff\\\\");
}

// Text escaped for a terminal prints on one line and moves nothing: C0
// controls, DEL, the C1 controls (NEL, CSI in UTF-8) and bytes that are
// not UTF-8 are escaped; printable UTF-8 (U+00A0 and U+2028 included)
// passes through (issue 51, third hunt, D8 and D9).
TEST(EscapeForDisplayTest, ControlsAndBytesThatAreNotUtf8AreEscaped) {
  EXPECT_EQ(escape_for_display("a\nb\t\\"), "a\\nb\\t\\\\");
  EXPECT_EQ(escape_for_display("e\x1b]0;x\x07\x7f"), "e\\x1b]0;x\\x07\\x7f");
  EXPECT_EQ(escape_for_display("a\xc2\205b\xc2\2332J"), "a\\u0085b\\u009b2J");
  EXPECT_EQ(escape_for_display("caf\xe9-\xff"), "caf\\xe9-\\xff");
  EXPECT_EQ(escape_for_display("\xc3("), "\\xc3(");
  EXPECT_EQ(escape_for_display("\xc3\xa9t\xc3\xa9 \xc2\xa0 \xe2\x80\xa8 \xf0\x9f\x98\x80"),
            "\xc3\xa9t\xc3\xa9 \xc2\xa0 \xe2\x80\xa8 \xf0\x9f\x98\x80");
  // A bidirectional control would reorder the line (ninth hunt, D10).
  EXPECT_EQ(escape_for_display("a\xe2\x80\xae"
                               "evil\xe2\x81\xa6"),
            "a\\u202eevil\\u2066");
  // What draws as nothing is shown (tenth hunt, D6: a key of U+200D, a name
  // of U+3164, a U+200B after a name); a joiner or a selector that shapes
  // the text before it (an emoji sequence) is part of that text.
  EXPECT_EQ(escape_for_display("\xe2\x80\x8d"), "\\u200d");
  EXPECT_EQ(escape_for_display("\xe3\x85\xa4"), "\\u3164");
  EXPECT_EQ(escape_for_display("ab\xe2\x80\x8b"), "ab\\u200b");
  EXPECT_EQ(escape_for_display("\xf3\xa0\x80\xa0"), "\\U000e0020");
  const std::string family = "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9";
  EXPECT_EQ(escape_for_display(family), family);
  EXPECT_EQ(escape_for_display("\xe2\x9d\xa4\xef\xb8\x8f"), "\xe2\x9d\xa4\xef\xb8\x8f");
  // After ASCII a joiner only makes a key look like another (eleventh
  // hunt, D1: "kind" + U+200D); a flag's tags all belong to it.
  EXPECT_EQ(escape_for_display("kind\xe2\x80\x8d"), "kind\\u200d");
  EXPECT_EQ(escape_for_display("acc\xef\xb8\x8f"), "acc\\ufe0f");
  const std::string scotland =
      "\xf0\x9f\x8f\xb4\xf3\xa0\x81\xa7\xf3\xa0\x81\xa2\xf3\xa0\x81\xb3\xf3\xa0\x81\xa3"
      "\xf3\xa0\x81\xb4\xf3\xa0\x81\xbf";
  EXPECT_EQ(escape_for_display(scotland), scotland);
}

// `-` is stdout wherever a file is written; where a folder of files is
// written it is refused, never a folder named '-' (issue 51, third hunt,
// D6's class).
TEST(OutputFolderTest, DashIsRefusedWhereAFolderIsWritten) {
  try {
    check_output_folder("-");
    ADD_FAILURE() << "'-' was taken as a folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_EQ(std::string(e.what()),
              "cannot write a folder of files to stdout ('-'); give a folder (./- for one named "
              "'-')");
  }
  EXPECT_NO_THROW(check_output_folder("./-"));
  EXPECT_NO_THROW(check_output_file("-"));
}

// The one rule for a count read back from a store (costmodel's threads,
// the card's environment counts, a rank's tags): the whole text, decimal,
// within the bounds.
TEST(WholeInTest, OnlyAWholeDecimalWithinTheBounds) {
  EXPECT_EQ(whole_in("0", 0, 8), 0);
  EXPECT_EQ(whole_in("8", 0, 8), 8);
  EXPECT_EQ(whole_in("-3", -5, 5), -3);
  for (const char* bad : {"", "9", "-1", "+1", " 1", "1 ", "1.0", "1e0", "0x1", "one", "1\n"})
    EXPECT_EQ(whole_in(bad, 0, 8), std::nullopt) << bad;
  EXPECT_EQ(whole_in("99999999999999999999", 0, INT64_MAX), std::nullopt);
  EXPECT_EQ(whole_in("9223372036854775807", 0, INT64_MAX), INT64_MAX);
}

// Thirtieth hunt, A-D1: "name,,status" lost its empty item without a word.
TEST(SplitGivenListTest, AnEmptyItemIsRefusedNotDropped) {
  EXPECT_EQ(split_given_list(" a, b ,c", "--columns"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(split_given_list("", "--columns").empty());
  for (const char* bad : {"name,,status", "name,", ",name", " , ", "a, ,b"}) {
    try {
      split_given_list(bad, "--columns");
      ADD_FAILURE() << "took " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_TRUE(std::string(e.what()).starts_with(std::string("--columns '") + bad + "': item "))
          << e.what();
    }
  }
}

// Thirtieth hunt, A-D5: the temporary file was FILE.tmp, whatever a user
// kept under that name: truncated, then renamed away.
TEST(WriteAtomicallyTest, AFileOfTheUsersBesideTheOutputIsLeftAlone) {
  trainscope::testing::TempDir dir;
  const auto out = dir / "card.md";
  std::ofstream(dir / "card.md.tmp") << "my notes\n";
  write_file_atomically(out, [](std::ostream& o) { o << "card\n"; });
  std::ifstream kept(dir / "card.md.tmp"), written(out);
  std::string a, b;
  std::getline(kept, a);
  std::getline(written, b);
  EXPECT_EQ(a, "my notes");
  EXPECT_EQ(b, "card");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 2u);  // no temporary file left behind
  EXPECT_THROW(write_file_atomically("", [](std::ostream&) {}), Error);
}

// Thirty-first hunt, A-D4: `runs export -o s.db` replaced the store it
// read, and `card -o` a recorded checkpoint. What a store registers is
// refused, itself and what lies in it; a name beside it is not.
TEST(ProtectFromOutputTest, AStoreAndItsArtifactsAreNoOutput) {
  trainscope::testing::TempDir dir;
  std::ofstream(dir / "s.db") << "db";
  std::filesystem::create_directories(dir / "s-artifacts" / "run");
  protect_from_output(dir / "s.db", "the store this command opened");
  protect_from_output(dir / "s-artifacts", "inside the artifact folder of a store");
  const std::pair<std::filesystem::path, std::string> refused[] = {
      {dir / "s.db", "it is the store this command opened"},
      {dir / "." / "s.db", "it is the store this command opened"},
      {dir / "s-artifacts" / "run" / "step-1.pt", "it is inside the artifact folder"},
  };
  for (const auto& [path, why] : refused) {
    try {
      check_output_file(path);
      ADD_FAILURE() << "took " << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(check_output_folder(dir / "s-artifacts" / "logs"), Error);
  EXPECT_NO_THROW(check_output_file(dir / "s.db.csv"));
  EXPECT_NO_THROW(check_output_file(dir / "s-artifacts.md"));
  EXPECT_NO_THROW(check_output_folder(dir / "logs"));
}

// Twenty-second hunt, A-D5: twelve samples of 1e308 had the mean inf (the
// sum overflowed), and three equal ones the SD nan. Ordinary data keeps
// the plain sum's bits.
TEST(MeanTest, FiniteValuesHaveAFiniteMeanAndSpread) {
  EXPECT_EQ(mean(std::vector<double>(12, 1e308)), 1e308);
  EXPECT_EQ(sd(std::vector<double>(3, 1e308), 1), 0);
  EXPECT_EQ(mean({1e308, -1e308}), 0);
  EXPECT_DOUBLE_EQ(sd({1e308, -1e308}, 0), 1e308);
  EXPECT_EQ(percentile({-1e308, 1e308}, 0.5), 0);
  EXPECT_EQ(mean({0.1, 0.2, 0.4}), (0.1 + 0.2 + 0.4) / 3);
  EXPECT_DOUBLE_EQ(sd({1, 2, 3, 4}, 1), std::sqrt(5.0 / 3));
  EXPECT_TRUE(std::isnan(mean({})));
  EXPECT_TRUE(std::isnan(sd({1}, 1)));
  EXPECT_TRUE(std::isnan(mean({1, NAN})));
}

// Twenty-sixth hunt, A-D2..A-D5: a path or key holding a line feed cut
// an error at it (the CLI shows the first line) or split it in two. An
// Error is one line whatever it embeds; a part escaped already is kept.
TEST(ErrorTest, AMessageIsOneLineWhateverItEmbeds) {
  using namespace std::string_literals;
  const Error e("cannot read 'a\nb\tc\r\x1b[2J\0d' (x\\x1b)"s);
  EXPECT_STREQ(e.what(), "cannot read 'a\\nb\\tc\\r\\x1b[2J\\x00d' (x\\x1b)");
  EXPECT_STREQ(Error("caf\xc3\xa9 \xc2\x9b").what(), "caf\xc3\xa9 \\u009b");  // text kept, C1 not
}

// A log line is one line likewise; terminal_text without one_line keeps
// the line feeds of a text of several lines (a study's table).
TEST(LogTest, ALineIsOneLineWhateverItEmbeds) {
  EXPECT_EQ(terminal_text("a\nb\tc", true), "a\\nb\\tc");
  EXPECT_EQ(terminal_text("a\nb\tc"), "a\nb\tc");
  ::testing::internal::CaptureStderr();
  log_info("wrote {}", "dir\nname");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "wrote dir\\nname\n");
}

}  // namespace
}  // namespace trainscope::core
