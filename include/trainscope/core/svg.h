// Minimal SVG line and scatter charts for reports: no dependencies, deterministic output.
#pragma once

#include <string>
#include <vector>

namespace trainscope::core {

// Text for XML/SVG/HTML: & < > " escaped.
std::string xml_escape(const std::string& s);

// One line (or scatter) of an SvgChart and its legend entry.
struct SvgSeries {
  std::string name;
  std::vector<double> x, y;  // same length; non-finite points break the line
  bool dashed = false;
  bool points = false;  // markers only (a scatter plot), no line
};

// A chart to render: the axes span every finite point of every series (a
// log axis leaves out values <= 0; no point at all: [0, 1]); width and
// height in pixels. A plain value: any thread.
struct SvgChart {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  int width = 900, height = 480;
  std::vector<SvgSeries> series;
  // Renders the chart with axes, ticks, a legend and one colour per series.
  std::string render() const;
};

}  // namespace trainscope::core
