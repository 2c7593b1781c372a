// Minimal SVG line charts for reports: no dependencies, deterministic output.
#pragma once

#include <string>
#include <vector>

namespace trainscope {

struct SvgSeries {
  std::string name;
  std::vector<double> x, y;  // same length; non-finite points break the line
  bool dashed = false;
};

struct SvgChart {
  std::string title, x_label, y_label;
  bool log_y = false;
  int width = 900, height = 480;
  std::vector<SvgSeries> series;
  // Renders the chart with axes, ticks, a legend and one colour per series.
  std::string render() const;
};

}  // namespace trainscope
