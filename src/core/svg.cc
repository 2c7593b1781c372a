#include "trainscope/core/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "trainscope/core/util.h"

namespace trainscope::core {
// Store text (a run's name, a key) as XML text: valid UTF-8, markup
// escaped, and the control characters XML 1.0 forbids shown as \xNN, as
// the CLI shows them; an SVG that holds them is not well-formed.
std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : valid_utf8(text)) {
    const auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        if ((b < 0x20 && c != '\t' && c != '\n' && c != '\r') || b == 0x7f)
          out += fmt::format("\\x{:02x}", b);
        else
          out.push_back(c);
    }
  }
  return out;
}

namespace {

// At most `n` bytes of `s`, never cutting a UTF-8 sequence in two.
std::string utf8_prefix(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                                    "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173"};

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
  // Ticks as integer multiples of the step: `t += step` stops moving when a
  // span of a few ULPs makes the step smaller than t's ULP (the loop never
  // ended); such a span gets its two ends.
  std::vector<double> out;
  double first = std::ceil(lo / step);
  for (int i = 0; i <= 2 * target + 2; ++i) {
    double t = (first + i) * step;
    if (t > hi + step * 1e-9) break;
    if (!out.empty() && t <= out.back()) return {lo, hi};
    out.push_back(t);
  }
  if (out.empty()) return {lo, hi};
  return out;
}

std::string tick_label(double v) {
  if (v == 0) return "0";
  double a = std::fabs(v);
  if (a >= 1e5 || a < 1e-3) return fmt::format("{:.0e}", v);
  return fmt::format("{:g}", v);
}

}  // namespace

namespace {

// The plot area and the mapping from data to pixels.
struct Frame {
  static constexpr double kLeft = 70, kRight = 200, kTop = 40, kBottom = 50;
  double pw = 0, ph = 0;
  bool log_x = false, log_y = false;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;

  double tx(double x) const { return log_x ? std::log10(x) : x; }
  double ty(double y) const { return log_y ? std::log10(y) : y; }
  // Points a log axis cannot show, and non-finite ones, are left out.
  bool skip(double x, double y) const {
    return !std::isfinite(x) || !std::isfinite(y) || (log_y && y <= 0) || (log_x && x <= 0);
  }
  double px(double x) const { return kLeft + (tx(x) - xmin) / (xmax - xmin) * pw; }
  double py(double y) const { return kTop + (1 - (ty(y) - ymin) / (ymax - ymin)) * ph; }
};

Frame frame_of(const SvgChart& c) {
  Frame f;
  f.pw = c.width - Frame::kLeft - Frame::kRight;
  f.ph = c.height - Frame::kTop - Frame::kBottom;
  f.log_x = c.log_x;
  f.log_y = c.log_y;
  for (const auto& s : c.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (f.skip(s.x[i], s.y[i])) continue;
      f.xmin = std::min(f.xmin, f.tx(s.x[i])), f.xmax = std::max(f.xmax, f.tx(s.x[i]));
      f.ymin = std::min(f.ymin, f.ty(s.y[i])), f.ymax = std::max(f.ymax, f.ty(s.y[i]));
    }
  if (!std::isfinite(f.xmin)) f.xmin = 0, f.xmax = 1, f.ymin = 0, f.ymax = 1;
  if (f.xmax == f.xmin) f.xmax = f.xmin + 1;
  if (f.ymax == f.ymin) f.ymax = f.ymin + 1;
  const double pad = (f.ymax - f.ymin) * 0.05;
  f.ymin -= pad, f.ymax += pad;
  return f;
}

// Title, plot box, grid lines with tick labels, axis labels.
std::string axes(const SvgChart& c, const Frame& f) {
  const double left = Frame::kLeft, top = Frame::kTop;
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n",
      c.width, c.height, c.width, c.height);
  o += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">{}</text>\n",
                   left + f.pw / 2, xml_escape(c.title));
  o += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", left,
      top, f.pw, f.ph);
  for (double t : ticks(f.xmin, f.xmax)) {
    double x = left + (t - f.xmin) / (f.xmax - f.xmin) * f.pw;
    o += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x, top, top + f.ph, top + f.ph + 16, tick_label(c.log_x ? std::pow(10.0, t) : t));
  }
  for (double t : ticks(f.ymin, f.ymax)) {
    double y = top + (1 - (t - f.ymin) / (f.ymax - f.ymin)) * f.ph;
    std::string label = c.log_y ? tick_label(std::pow(10.0, t)) : tick_label(t);
    o += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        left, y, left + f.pw, left - 6, y + 4, label);
  }
  o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + f.pw / 2,
                   c.height - 12, xml_escape(c.x_label + (c.log_x ? " (log)" : "")));
  o += fmt::format(
      "<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n",
      top + f.ph / 2, top + f.ph / 2, xml_escape(c.y_label + (c.log_y ? " (log)" : "")));
  return o;
}

// One series: a path (or markers) and its legend entry, row `si`.
std::string series_svg(const SvgSeries& s, size_t si, const Frame& f) {
  const char* colour = kColours[si % std::size(kColours)];
  std::string o, path;
  bool pen_down = false;
  for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
    const double y = s.y[i];
    if (f.skip(s.x[i], y)) {
      pen_down = false;
      continue;
    }
    if (s.points) {
      o += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\" fill-opacity=\"0.8\">"
          "<title>{}: {:g}, {:g}</title></circle>\n",
          f.px(s.x[i]), f.py(y), colour, xml_escape(s.name), s.x[i], y);
      continue;
    }
    path += fmt::format("{}{:.1f},{:.1f} ", pen_down ? "L" : "M", f.px(s.x[i]), f.py(y));
    pen_down = true;
  }
  if (!s.points)
    o += fmt::format(
        "<path d=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"1.3\"{}><title>{}</title></path>\n",
        path, colour, s.dashed ? " stroke-dasharray=\"6 4\"" : "", xml_escape(s.name));
  const double lx = Frame::kLeft + f.pw, ly = Frame::kTop + 10 + static_cast<double>(si) * 16;
  const std::string label = xml_escape(s.name.size() > 26 ? utf8_prefix(s.name, 25) + "…" : s.name);
  if (s.points)
    return o + fmt::format(
                   "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/><text x=\"{}\" "
                   "y=\"{:.1f}\">{}</text>\n",
                   lx + 20, ly, colour, lx + 35, ly + 4, label);
  return o + fmt::format(
                 "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
                 "stroke-width=\"2\"{4}/>"
                 "<text x=\"{5}\" y=\"{6:.1f}\">{7}</text>\n",
                 lx + 10, ly, lx + 30, colour, s.dashed ? " stroke-dasharray=\"6 4\"" : "", lx + 35,
                 ly + 4, label);
}

}  // namespace

std::string SvgChart::render() const {
  const Frame f = frame_of(*this);
  std::string o = axes(*this, f);
  for (size_t si = 0; si < series.size(); ++si) o += series_svg(series[si], si, f);
  return o + "</svg>\n";
}

}  // namespace trainscope::core
