// kiln bench --ladder's output forms (tools/kiln/ladder_report.h): the table, markdown, JSON
// and SVG carry every row, mark the rows that did not run, and never print NaN.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/ladder_report.h"

namespace kiln::cli {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

LadderReport sample_report() {
  LadderReport r;
  r.model = "res<net>&50.onnx";
  r.device = "cuda:0 (NVIDIA H200)";
  r.command = "kiln bench m.onnx --ladder";
  r.kiln_version = "0.0.0";
  r.batch = 16;
  r.rounds = 3;
  r.duration_s = 2;
  LadderRow a;
  a.name = "framework-like: fp32";
  a.config = "precision=fp32 optimize=off";
  a.round_ips = {90, 100, 110};
  a.ips = 100;
  a.p50_ms = 160;
  a.p99_ms = 170;
  a.own_mib = 3000;
  a.used_mib = 3600;
  LadderRow b = a;
  b.name = "fp16 | fused";
  b.ips = 250;
  b.own_mib = 1200;
  b.used_mib = NAN;  // NVML gave nothing for this one
  LadderRow c;
  c.name = "+ CUDA graph";
  c.skipped = "CUDA graphs are for CUDA engines";
  LadderRow d;
  d.name = "+ uint8";
  d.failed = "input 'x': not an image";
  LadderRow e = a;
  e.name = "+ 4 streams";
  e.ips = 400;
  e.own_mib = 2000;
  e.used_mib = 2500;
  r.rows = {a, b, c, d, e};
  return r;
}

TEST(LadderReport, SpeedUpsAreOverTheFirstRowThatRan) {
  LadderReport r = sample_report();
  std::vector<double> up = ladder_speedups(r);
  ASSERT_EQ(up.size(), 5u);
  EXPECT_DOUBLE_EQ(up[0], 1.0);
  EXPECT_DOUBLE_EQ(up[1], 2.5);
  EXPECT_TRUE(std::isnan(up[2]));
  EXPECT_TRUE(std::isnan(up[3]));
  EXPECT_DOUBLE_EQ(up[4], 4.0);
  r.rows[0].skipped = "no";
  up = ladder_speedups(r);
  EXPECT_DOUBLE_EQ(up[1], 1.0);
  EXPECT_DOUBLE_EQ(up[4], 1.6);
  for (LadderRow& row : r.rows) row.failed = "x";
  for (double v : ladder_speedups(r)) EXPECT_TRUE(std::isnan(v));
}

TEST(LadderReport, TableAndMarkdownHoldEveryRow) {
  const LadderReport r = sample_report();
  const std::string t = ladder_table(r);
  EXPECT_NE(t.find("batch 16, 3 rounds of 2 s a row"), std::string::npos) << t;
  EXPECT_NE(t.find("2.50x"), std::string::npos) << t;
  EXPECT_NE(t.find("4.00x"), std::string::npos) << t;
  EXPECT_NE(t.find("skipped: CUDA graphs are for CUDA engines"), std::string::npos) << t;
  EXPECT_NE(t.find("failed: input 'x': not an image"), std::string::npos) << t;
  EXPECT_NE(t.find("n/a"), std::string::npos) << t;  // row 2's NVML figure
  EXPECT_EQ(t.find("nan"), std::string::npos) << t;

  const std::string md = ladder_markdown(r);
  EXPECT_NE(md.find("- command: `kiln bench m.onnx --ladder`"), std::string::npos) << md;
  // The header, its rule and one line a row; a '|' in a name is escaped.
  EXPECT_EQ(count(md, "\n| "), 1u + 5u) << md;
  EXPECT_NE(md.find("fp16 \\| fused"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | fp16 \\| fused | 250.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2.50× |"), std::string::npos) << md;
  EXPECT_EQ(md.find("nan"), std::string::npos) << md;
}

TEST(LadderReport, JsonHasNullsWhereNothingWasMeasured) {
  const auto j = nlohmann::json::parse(ladder_json(sample_report()));
  EXPECT_EQ(j["batch"], 16);
  EXPECT_EQ(j["device"], "cuda:0 (NVIDIA H200)");
  ASSERT_EQ(j["rows"].size(), 5u);
  const auto& a = j["rows"][0];
  EXPECT_EQ(a["index"], 1);
  EXPECT_EQ(a["ran"], true);
  EXPECT_DOUBLE_EQ(a["images_per_s"].get<double>(), 100);
  EXPECT_EQ(a["round_images_per_s"].size(), 3u);
  EXPECT_DOUBLE_EQ(a["latency_ms"]["p99"].get<double>(), 170);
  EXPECT_DOUBLE_EQ(a["used_mib"].get<double>(), 3600);
  EXPECT_TRUE(j["rows"][1]["used_mib"].is_null());
  EXPECT_DOUBLE_EQ(j["rows"][1]["speedup"].get<double>(), 2.5);
  EXPECT_EQ(j["rows"][2]["ran"], false);
  EXPECT_EQ(j["rows"][2]["skipped"], "CUDA graphs are for CUDA engines");
  EXPECT_TRUE(j["rows"][2]["images_per_s"].is_null());
  EXPECT_EQ(j["rows"][3]["failed"], "input 'x': not an image");
}

TEST(LadderReport, SvgHasABarPerRowThatRanAndMemoryLines) {
  const std::string svg = ladder_svg(sample_report());
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << svg;
  EXPECT_NE(svg.find("</svg>\n"), std::string::npos);
  EXPECT_EQ(count(svg, "fill=\"#2e86c1\""), 3u) << svg;  // rows 1, 2 and 5
  EXPECT_EQ(count(svg, ">skipped</text>"), 1u) << svg;
  EXPECT_EQ(count(svg, ">failed</text>"), 1u) << svg;
  // The model's name is escaped; no raw '&' or '<' from it.
  EXPECT_NE(svg.find("res&lt;net&gt;&amp;50.onnx"), std::string::npos) << svg;
  // kiln's memory: rows 1 and 2 joined, row 5 alone after the rows that did not run; NVML's:
  // row 1 alone, row 5 alone. Five points in all.
  EXPECT_EQ(count(svg, "<circle "), 5u) << svg;
  EXPECT_EQ(count(svg, "<polyline "), 4u) << svg;
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  // Without any memory figure there is no second axis.
  LadderReport cpu = sample_report();
  for (LadderRow& row : cpu.rows) row.own_mib = row.used_mib = NAN;
  const std::string plain = ladder_svg(cpu);
  EXPECT_EQ(plain.find("<circle "), std::string::npos);
  EXPECT_EQ(plain.find("device memory, MiB</text>"), std::string::npos);
}

TEST(LadderReport, WritesThreeFilesOrNamesThePath) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln_ladder_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string prefix = (dir / "r50").string();
  ASSERT_TRUE(write_ladder(sample_report(), prefix).is_ok());
  for (const char* ext : {".json", ".md", ".svg"}) {
    std::ifstream f(prefix + ext);
    std::stringstream ss;
    ss << f.rdbuf();
    EXPECT_GT(ss.str().size(), 100u) << ext;
  }
  const Status st = write_ladder(sample_report(), (dir / "no" / "such" / "dir").string());
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("no/such/dir.json"), std::string::npos) << st.message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::cli
