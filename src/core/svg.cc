#include "trainscope/core/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainscope::core {
namespace {

constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                                    "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

// "Nice" tick positions covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int target = 6) {
  double span = hi - lo;
  if (!(span > 0)) return {lo};
  double raw = span / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(t);
  return out;
}

std::string tick_label(double v) {
  if (v == 0) return "0";
  double a = std::fabs(v);
  if (a >= 1e5 || a < 1e-3) return fmt::format("{:.0e}", v);
  return fmt::format("{:g}", v);
}

}  // namespace

std::string SvgChart::render() const {
  const double left = 70, right = 200, top = 40, bottom = 50;
  const double pw = width - left - right, ph = height - top - bottom;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
  auto ty = [&](double y) { return log_y ? std::log10(y) : y; };
  auto tx = [&](double x) { return log_x ? std::log10(x) : x; };
  auto skip = [&](double x, double y) {
    return !std::isfinite(x) || !std::isfinite(y) || (log_y && y <= 0) || (log_x && x <= 0);
  };
  for (const auto& s : series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      double y = s.y[i];
      if (skip(s.x[i], y)) continue;
      xmin = std::min(xmin, tx(s.x[i])), xmax = std::max(xmax, tx(s.x[i]));
      ymin = std::min(ymin, ty(y)), ymax = std::max(ymax, ty(y));
    }
  if (!std::isfinite(xmin)) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  if (xmax == xmin) xmax = xmin + 1;
  if (ymax == ymin) ymax = ymin + 1;
  double pad = (ymax - ymin) * 0.05;
  ymin -= pad, ymax += pad;
  auto px = [&](double x) { return left + (tx(x) - xmin) / (xmax - xmin) * pw; };
  auto py = [&](double y) { return top + (1 - (ty(y) - ymin) / (ymax - ymin)) * ph; };

  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n",
      width, height, width, height);
  o += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">{}</text>\n",
                   left + pw / 2, escape(title));
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n",
                   left, top, pw, ph);
  for (double t : ticks(xmin, xmax)) {
    double x = left + (t - xmin) / (xmax - xmin) * pw;
    o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     x, top, top + ph, top + ph + 16, tick_label(log_x ? std::pow(10.0, t) : t));
  }
  for (double t : ticks(ymin, ymax)) {
    double y = top + (1 - (t - ymin) / (ymax - ymin)) * ph;
    std::string label = log_y ? tick_label(std::pow(10.0, t)) : tick_label(t);
    o += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     left, y, left + pw, left - 6, y + 4, label);
  }
  o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + pw / 2,
                   height - 12, escape(x_label + (log_x ? " (log)" : "")));
  o += fmt::format("<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n",
                   top + ph / 2, top + ph / 2, escape(y_label + (log_y ? " (log)" : "")));
  for (size_t si = 0; si < series.size(); ++si) {
    const auto& s = series[si];
    const char* colour = kColours[si % std::size(kColours)];
    std::string path;
    bool pen_down = false;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      double y = s.y[i];
      if (skip(s.x[i], y)) {
        pen_down = false;
        continue;
      }
      if (s.points) {
        o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\" fill-opacity=\"0.8\">"
                         "<title>{}: {:g}, {:g}</title></circle>\n",
                         px(s.x[i]), py(y), colour, escape(s.name), s.x[i], y);
        continue;
      }
      path += fmt::format("{}{:.1f},{:.1f} ", pen_down ? "L" : "M", px(s.x[i]), py(y));
      pen_down = true;
    }
    if (!s.points)
      o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.3\"{}><title>{}</title></path>\n",
                       path, colour, s.dashed ? " stroke-dasharray=\"6 4\"" : "", escape(s.name));
    double ly = top + 10 + static_cast<double>(si) * 16;
    const std::string label = escape(s.name.size() > 26 ? s.name.substr(0, 25) + "…" : s.name);
    if (s.points)
      o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/><text x=\"{}\" y=\"{:.1f}\">{}</text>\n",
                       left + pw + 20, ly, colour, left + pw + 35, ly + 4, label);
    else
      o += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>"
                       "<text x=\"{5}\" y=\"{6:.1f}\">{7}</text>\n",
                       left + pw + 10, ly, left + pw + 30, colour,
                       s.dashed ? " stroke-dasharray=\"6 4\"" : "", left + pw + 35, ly + 4, label);
  }
  o += "</svg>\n";
  return o;
}

}  // namespace trainscope::core
