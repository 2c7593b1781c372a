// SVG charts for reports: line and scatter series, linear and log axes.
#include "trainscope/core/svg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace trainscope::core {
namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(SvgChartTest, ScatterSeriesDrawOneMarkerPerFinitePointAndNoLine) {
  SvgChart c;
  c.title = "predicted vs measured";
  c.series.push_back({"a & b", {1, 2, 3}, {1, 4, 9}, false, true});
  c.series.push_back({"nan skipped", {1, 2}, {NAN, 5}, false, true});
  const std::string svg = c.render();
  // 3 + 1 markers in the plot, one per series in the legend.
  EXPECT_EQ(count(svg, "<circle"), 4 + 2);
  EXPECT_EQ(count(svg, "<path"), 0);
  EXPECT_NE(svg.find("a &amp; b"), std::string::npos);  // escaped
}

TEST(SvgChartTest, LogAxesLabelDecadesAndDropNonPositivePoints) {
  SvgChart c;
  c.log_x = c.log_y = true;
  c.x_label = "measured";
  c.series.push_back({"s", {0.5, 1, 10, 100, 1000, -1}, {0.5, 1, 10, 100, 1000, 3}, false, true});
  const std::string svg = c.render();
  EXPECT_EQ(count(svg, "<circle"), 5 + 1);  // the point at x = -1 is dropped
  EXPECT_NE(svg.find("measured (log)"), std::string::npos);
  for (const char* label : {">1<", ">10<", ">100<", ">1000<"})
    EXPECT_NE(svg.find(label), std::string::npos) << label;
}

TEST(SvgChartTest, LineSeriesStayLines) {
  SvgChart c;
  c.series.push_back({"loss", {0, 1, 2}, {3, 2, 1}, true, false});
  const std::string svg = c.render();
  EXPECT_EQ(count(svg, "<path"), 1);
  EXPECT_EQ(count(svg, "<circle"), 0);
  // One polyline: a move then line segments.
  const size_t d = svg.find("d=\"M");
  ASSERT_NE(d, std::string::npos);
  EXPECT_EQ(count(svg.substr(d, svg.find('"', d + 3) - d), " L"), 2);
}

// Everyday-use defect 2: a series spanning a few ULPs never finished its
// ticks (t += step stopped moving t): `resources --plot` ran out of memory.
TEST(SvgChartTest, ASeriesSpanningAFewUlpsRenders) {
  SvgChart c;
  double v = 1234.5;
  c.series.push_back({"flat", {0, 1, 2}, {v, std::nextafter(v, 2e3), v}});
  std::string svg = c.render();
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_LT(svg.size(), 100000u);
}

// Everyday-use defect 2: a long legend was cut in the middle of a UTF-8
// character; names are escaped.
TEST(SvgChartTest, LegendsAreCutBetweenCharactersAndEscaped) {
  SvgChart c;
  std::string name = "layer a<b&c " + std::string(10, 'x') + "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9";
  c.series.push_back({name, {0, 1}, {1, 2}});
  std::string svg = c.render();
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b&amp;c"), std::string::npos);
  for (size_t i = 0; i + 1 < svg.size(); ++i) {  // no lead byte without its continuation
    if ((static_cast<unsigned char>(svg[i]) & 0xE0) == 0xC0) {
      EXPECT_EQ(static_cast<unsigned char>(svg[i + 1]) & 0xC0, 0x80) << i;
    }
  }
}

}  // namespace
}  // namespace trainscope::core

// Issue 51: a store's text (a run named with an escape character or bytes
// that are not UTF-8) must leave the SVG well-formed.
TEST(SvgChartTest, StoreTextIsWellFormedXml) {
  EXPECT_EQ(trainscope::core::xml_escape("a\x1b[31m<b>\t\"&"), "a\\x1b[31m&lt;b&gt;\t&quot;&amp;");
  EXPECT_EQ(trainscope::core::xml_escape("na\xffme"), "na\xEF\xBF\xBDme");
  EXPECT_EQ(trainscope::core::xml_escape("\xC3\xA9t\xC3\xA9"), "\xC3\xA9t\xC3\xA9");  // été stays
  EXPECT_EQ(trainscope::core::xml_escape("x\x7fy"), "x\\x7fy");
}
