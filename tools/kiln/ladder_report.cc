// kiln bench --ladder's output forms (see ladder_report.h).
#include "ladder_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kiln::cli {

namespace {

std::string fmt(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

// "n/a" for NaN, else the value in `spec`.
std::string fmt_or_na(const char* spec, double v) { return std::isnan(v) ? "n/a" : fmt(spec, v); }

std::string status_of(const LadderRow& row) {
  if (!row.skipped.empty()) return "skipped: " + row.skipped;
  if (!row.failed.empty()) return "failed: " + row.failed;
  return "";
}

std::string xml_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      default: r += c;
    }
  }
  return r;
}

// Markdown table cells may not hold '|' or newlines.
std::string md_cell(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '|')
      r += "\\|";
    else if (c == '\n')
      r += ' ';
    else
      r += c;
  }
  return r;
}

// The smallest of 1, 2, 5 × 10^k at least `raw` (raw > 0).
double nice_step(double raw) {
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

}  // namespace

std::vector<double> ladder_speedups(const LadderReport& r) {
  std::vector<double> s(r.rows.size(), NAN);
  double base = 0;
  for (const LadderRow& row : r.rows)
    if (row.ran() && row.ips > 0 && row.source == "kiln") {
      base = row.ips;
      break;
    }
  if (base <= 0) return s;
  for (size_t i = 0; i < r.rows.size(); ++i)
    if (r.rows[i].ran()) s[i] = r.rows[i].ips / base;
  return s;
}

std::string ladder_table(const LadderReport& r) {
  std::ostringstream o;
  const std::vector<double> up = ladder_speedups(r);
  o << "ladder: " << r.model << ", " << r.device << ", batch " << r.batch << ", " << r.rounds
    << (r.rounds == 1 ? " round" : " rounds") << " of " << fmt("%.3g", r.duration_s)
    << " s a row\n";
  char line[512];
  std::snprintf(line, sizeof line, "%2s  %-44s %11s %9s %9s %10s %10s %8s\n", "#", "configuration",
                "images/s", "p50 ms", "p99 ms", "own MiB", "used MiB", "speed-up");
  o << line;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const LadderRow& row = r.rows[i];
    const std::string name = row.name.size() > 44 ? row.name.substr(0, 41) + "..." : row.name;
    if (!row.ran()) {
      std::snprintf(line, sizeof line, "%2zu  %-44s %s\n", i + 1, name.c_str(),
                    status_of(row).c_str());
    } else {
      std::snprintf(line, sizeof line, "%2zu  %-44s %11.1f %9.4g %9.4g %10s %10s %7.2fx\n", i + 1,
                    name.c_str(), row.ips, row.p50_ms, row.p99_ms,
                    fmt_or_na("%.1f", row.own_mib).c_str(), fmt_or_na("%.1f", row.used_mib).c_str(),
                    up[i]);
    }
    o << line;
  }
  return o.str();
}

std::string ladder_markdown(const LadderReport& r) {
  std::ostringstream o;
  const std::vector<double> up = ladder_speedups(r);
  o << "# Optimization ladder: " << md_cell(r.model) << "\n\n";
  o << "- device: " << r.device << "\n- batch: " << r.batch << "\n- rounds: " << r.rounds << " of "
    << fmt("%.3g", r.duration_s) << " s timed per row (images/s: the median round)\n";
  if (!r.command.empty()) o << "- command: `" << r.command << "`\n";
  if (!r.kiln_version.empty()) o << "- kiln " << r.kiln_version << "\n";
  if (!r.date.empty()) o << "- date: " << r.date << "\n";
  o << "\n| # | configuration | images/s | p50 ms | p99 ms | own MiB | used MiB (NVML) | "
       "speed-up | options |\n";
  o << "|---:|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const LadderRow& row = r.rows[i];
    o << "| " << i + 1 << " | " << md_cell(row.name) << " | ";
    if (!row.ran()) {
      o << md_cell(status_of(row)) << " | | | | | | " << md_cell(row.config) << " |\n";
      continue;
    }
    o << fmt("%.1f", row.ips) << " | " << fmt("%.4g", row.p50_ms) << " | "
      << fmt("%.4g", row.p99_ms) << " | " << fmt_or_na("%.1f", row.own_mib) << " | "
      << fmt_or_na("%.1f", row.used_mib) << " | " << fmt("%.2f", up[i]) << "× | `"
      << md_cell(row.config) << "` |\n";
  }
  o << "\nown MiB: the engine's own figure: kiln's device memory (activation arena, workspace, "
       "weights; on the CPU the arena and weights), PyTorch's peak allocated memory. used MiB: "
       "the GPU's used memory above what it was before the row's process started on it, as "
       "nvidia-smi shows it (kiln: the largest over the row's timed phases).\n";
  return o.str();
}

std::string ladder_json(const LadderReport& r) {
  const std::vector<double> up = ladder_speedups(r);
  auto num = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
  auto text = [](const std::string& v) { return v.empty() ? nlohmann::json() : nlohmann::json(v); };
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const LadderRow& row = r.rows[i];
    rows.push_back(
        {{"index", i + 1},
         {"name", row.name},
         {"config", row.config},
         {"source", row.source},
         {"ran", row.ran()},
         {"skipped", text(row.skipped)},
         {"failed", text(row.failed)},
         {"images_per_s", row.ran() ? nlohmann::json(row.ips) : nlohmann::json()},
         {"round_images_per_s", row.round_ips},
         {"latency_ms",
          row.ran() ? nlohmann::json{{"p50", row.p50_ms}, {"p99", row.p99_ms}} : nlohmann::json()},
         {"own_mib", num(row.own_mib)},
         {"used_mib", num(row.used_mib)},
         {"speedup", num(up[i])}});
  }
  nlohmann::json j = {{"model", r.model},
                      {"device", r.device},
                      {"batch", r.batch},
                      {"rounds", r.rounds},
                      {"duration_s", r.duration_s},
                      {"command", r.command},
                      {"kiln_version", r.kiln_version},
                      {"date", r.date},
                      {"rows", rows}};
  return j.dump(2) + "\n";
}

std::string ladder_svg(const LadderReport& r) {
  const double W = 820, H = 460, left = 80, right = 80, top = 56, bottom = 150;
  const double pw = W - left - right, ph = H - top - bottom;
  const size_t n = std::max<size_t>(1, r.rows.size());
  double max_ips = 0, max_mib = 0;
  for (const LadderRow& row : r.rows) {
    if (!row.ran()) continue;
    max_ips = std::max(max_ips, row.ips);
    if (!std::isnan(row.own_mib)) max_mib = std::max(max_mib, row.own_mib);
    if (!std::isnan(row.used_mib)) max_mib = std::max(max_mib, row.used_mib);
  }
  const double ips_step = nice_step(max_ips > 0 ? max_ips / 5 : 1);
  const double ips_top = ips_step * std::ceil(std::max(max_ips, 1e-9) / ips_step);
  const double mib_step = nice_step(max_mib > 0 ? max_mib / 5 : 1);
  const double mib_top = mib_step * std::ceil(std::max(max_mib, 1e-9) / mib_step);
  auto y_ips = [&](double v) { return top + ph - ph * v / ips_top; };
  auto y_mib = [&](double v) { return top + ph - ph * v / mib_top; };
  const double slot = pw / static_cast<double>(n);
  auto x_mid = [&](size_t i) { return left + slot * (static_cast<double>(i) + 0.5); };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
    << xml_escape("kiln ladder: " + r.model + ", " + r.device + ", batch " +
                  std::to_string(r.batch))
    << "</text>\n";
  o << "<text x=\"" << W / 2
    << "\" y=\"40\" text-anchor=\"middle\" fill=\"#555\">bars: images/s (left axis); "
       "lines: device memory MiB (right axis; solid: own figure, dashed: NVML used); grey bars: "
       "PyTorch</text>\n";
  // Axes and grid.
  for (double v = 0; v <= ips_top * 1.0001; v += ips_step) {
    const double y = y_ips(v);
    o << "<line x1=\"" << left << "\" y1=\"" << y << "\" x2=\"" << left + pw << "\" y2=\"" << y
      << "\" stroke=\"#e4e4e4\"/>\n";
    o << "<text x=\"" << left - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
      << fmt("%.6g", v) << "</text>\n";
  }
  if (max_mib > 0)
    for (double v = 0; v <= mib_top * 1.0001; v += mib_step)
      o << "<text x=\"" << left + pw + 6 << "\" y=\"" << y_mib(v) + 4 << "\" fill=\"#b03a2e\">"
        << fmt("%.6g", v) << "</text>\n";
  o << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << top + ph
    << "\" stroke=\"black\"/>\n";
  o << "<line x1=\"" << left << "\" y1=\"" << top + ph << "\" x2=\"" << left + pw << "\" y2=\""
    << top + ph << "\" stroke=\"black\"/>\n";
  o << "<text transform=\"translate(18," << top + ph / 2
    << ") rotate(-90)\" text-anchor=\"middle\">images/s</text>\n";
  if (max_mib > 0)
    o << "<text transform=\"translate(" << W - 14 << "," << top + ph / 2
      << ") rotate(90)\" text-anchor=\"middle\" fill=\"#b03a2e\">device memory, MiB</text>\n";
  // Bars, with each row's number and name under it.
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const LadderRow& row = r.rows[i];
    const double x = x_mid(i), bw = slot * 0.6;
    const std::string label = row.name.size() > 36 ? row.name.substr(0, 34) + "..." : row.name;
    if (row.ran()) {
      const double y = y_ips(row.ips);
      o << "<rect x=\"" << x - bw / 2 << "\" y=\"" << y << "\" width=\"" << bw << "\" height=\""
        << top + ph - y << "\" fill=\"" << (row.source == "kiln" ? "#2e86c1" : "#999999")
        << "\"><title>" << xml_escape(row.name) << ": " << fmt("%.1f", row.ips)
        << " images/s</title></rect>\n";
      o << "<text x=\"" << x << "\" y=\"" << y - 4 << "\" text-anchor=\"middle\">"
        << fmt(row.ips >= 100 ? "%.0f" : "%.3g", row.ips) << "</text>\n";
    } else {
      o << "<text x=\"" << x << "\" y=\"" << top + ph - 6
        << "\" text-anchor=\"middle\" fill=\"#888\">"
        << (row.skipped.empty() ? "failed" : "skipped") << "</text>\n";
    }
    o << "<text transform=\"translate(" << x << "," << top + ph + 14
      << ") rotate(30)\" font-size=\"11\">" << xml_escape(std::to_string(i + 1) + ". " + label)
      << "</text>\n";
  }
  // Memory: points joined by lines where consecutive rows have them.
  auto line_of = [&](double LadderRow::*field, const char* dash) {
    std::string points;
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const LadderRow& row = r.rows[i];
      const double v = row.*field;
      // A line joins the rows of one source (kiln's, then PyTorch's), never across.
      if (!row.ran() || std::isnan(v) || (i > 0 && r.rows[i - 1].source != row.source)) {
        if (!points.empty())
          o << "<polyline points=\"" << points << "\" fill=\"none\" stroke=\"#b03a2e\"" << dash
            << "/>\n";
        points.clear();
        if (!row.ran() || std::isnan(v)) continue;
      }
      points += fmt("%.1f", x_mid(i)) + "," + fmt("%.1f", y_mib(v)) + " ";
      o << "<circle cx=\"" << x_mid(i) << "\" cy=\"" << y_mib(v)
        << "\" r=\"3.5\" fill=\"#b03a2e\"><title>" << fmt("%.1f", v) << " MiB</title></circle>\n";
    }
    if (!points.empty())
      o << "<polyline points=\"" << points << "\" fill=\"none\" stroke=\"#b03a2e\"" << dash
        << "/>\n";
  };
  if (max_mib > 0) {
    line_of(&LadderRow::own_mib, "");
    line_of(&LadderRow::used_mib, " stroke-dasharray=\"5,4\"");
  }
  o << "</svg>\n";
  return o.str();
}

Status write_ladder(const LadderReport& r, const std::string& prefix) {
  const std::pair<const char*, std::string> files[] = {
      {".json", ladder_json(r)}, {".md", ladder_markdown(r)}, {".svg", ladder_svg(r)}};
  for (const auto& [ext, text] : files) {
    const std::string path = prefix + ext;
    std::ofstream f(path, std::ios::binary);
    f << text;
    f.close();
    if (!f) return not_found("--ladder-out: cannot write '" + path + "'");
  }
  return Status::ok();
}

}  // namespace kiln::cli
