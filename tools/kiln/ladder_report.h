// The results of `kiln bench --ladder` (bench_ladder.cc) and the forms they are written in:
// a table on the terminal, JSON, markdown and an SVG chart (throughput bars, memory lines).
// Only formatting lives here; the measuring is in bench_ladder.cc.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln::cli {

// One rung: a real configuration, measured (or skipped, saying why; or failed, with the error).
struct LadderRow {
  std::string name;     // "fp16, fused epilogues"
  std::string config;   // the options that make it: "precision=fp16 optimize=on reuse_memory=off"
  std::string skipped;  // why the row was not run on this device ("" when it ran)
  std::string failed;   // the error that stopped it ("" when it ran)
  std::string source = "kiln";    // who ran it: "kiln", or "pytorch" for --peer-torch rows
  std::vector<double> round_ips;  // images/s of each round
  double ips = 0;                 // the median of round_ips
  double p50_ms = 0, p99_ms = 0;  // per request (one batch), all rounds pooled
  // The engine's own figure: kiln's arena + workspace + weights, PyTorch's peak allocated.
  double own_mib = NAN;
  // The GPU's used memory above what it was before the ladder started, the largest over the
  // row's timed phases (NVML; what nvidia-smi shows for this process when nothing else runs
  // there). NaN without NVML and on the CPU.
  double used_mib = NAN;
  bool ran() const { return skipped.empty() && failed.empty(); }
};

struct LadderReport {
  std::string model, device, command, kiln_version, date;
  int64_t batch = 1;
  int rounds = 1;
  double duration_s = 0;  // timed seconds per row and round
  std::vector<LadderRow> rows;
};

// Each row's speed-up over the first row that ran (NaN for rows that did not run, and all NaN
// when none did).
std::vector<double> ladder_speedups(const LadderReport& r);

std::string ladder_table(const LadderReport& r);     // fixed-width, for the terminal
std::string ladder_markdown(const LadderReport& r);  // a heading, the run's facts, a table
std::string ladder_json(const LadderReport& r);      // pretty-printed
// Throughput bars (one per row that ran, labelled with its number and images/s) and device
// memory as points joined by lines on a second axis (kiln's figure solid, NVML's dashed).
std::string ladder_svg(const LadderReport& r);

// Writes PREFIX.json, PREFIX.md and PREFIX.svg; an error names the file it could not write.
Status write_ladder(const LadderReport& r, const std::string& prefix);

}  // namespace kiln::cli
