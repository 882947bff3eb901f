#include "server/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace kiln::server {

namespace {

struct Family {
  const char* name;
  const char* type;
  const char* help;
};

void header(std::ostringstream& out, const Family& f) {
  out << "# HELP " << f.name << " " << f.help << "\n# TYPE " << f.name << " " << f.type << "\n";
}

std::string labels(const ModelState& m, const std::string& extra = "") {
  std::string l = "{model=\"" + m.name + "\",version=\"" + std::to_string(m.version) + "\"";
  if (!extra.empty()) l += "," + extra;
  return l + "}";
}

// The shortest text that reads back as `v` ("0.42", not "0.41999999999999998").
std::string number(double v) {
  char text[32];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  return text;
}

// A label's number, as short as it reads: "0.99".
std::string label_number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// Triton's GPU gauges, one line per GPU (labelled by UUID) and reading; a reading the GPU
// cannot give (NaN) is left out.
void gpu_metrics(std::ostringstream& out, const ModelServer& server) {
  if (server.gpus().empty()) return;
  std::vector<std::pair<std::string, GpuSample>> readings;
  for (const auto& g : server.gpus())
    readings.emplace_back(g->uuid().empty() ? "GPU-" + std::to_string(g->index()) : g->uuid(),
                          g->read());
  const struct {
    Family f;
    double scale;
    double GpuSample::*field;
  } gauges[] = {
      {{"nv_gpu_utilization", "gauge", "GPU utilization rate [0.0 - 1.0)"},
       1 / 100.0,
       &GpuSample::util_pct},
      {{"nv_gpu_memory_total_bytes", "gauge", "GPU total memory, in bytes"},
       1048576.0,
       &GpuSample::mem_total_mib},
      {{"nv_gpu_memory_used_bytes", "gauge", "GPU used memory, in bytes"},
       1048576.0,
       &GpuSample::mem_used_mib},
      {{"nv_gpu_power_usage", "gauge", "GPU power usage in watts"}, 1.0, &GpuSample::power_w},
  };
  for (const auto& g : gauges) {
    header(out, g.f);
    for (const auto& [uuid, s] : readings)
      if (!std::isnan(s.*g.field))
        out << g.f.name << "{gpu_uuid=\"" << uuid << "\"} " << number(s.*g.field * g.scale) << "\n";
  }
}

}  // namespace

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string prometheus_metrics(const ModelServer& server) {
  struct Row {
    ModelState model;
    InferStats stats;
    LatencyWindow window;
    BatcherStats batches;
    std::vector<int64_t> sizes;
    int64_t plan_builds = 0;
  };
  std::vector<Row> rows;
  for (const ModelState& m : server.index(true)) {
    auto served = server.find(m.name, std::to_string(m.version));
    if (!served.is_ok()) continue;
    rows.push_back({m, server.stats(m.name, m.version), server.latencies(m.name, m.version),
                    (*served)->batcher().stats(), batch_sizes((*served)->batcher().options()),
                    (*served)->pipeline_stats().plan_builds});
  }
  std::ostringstream out;
  auto counter = [&](const Family& f, auto value) {
    header(out, f);
    for (const Row& r : rows) out << f.name << labels(r.model) << " " << number(value(r)) << "\n";
  };
  counter({"nv_inference_request_success", "counter", "Number of successful inference requests"},
          [](const Row& r) { return double(r.stats.success_count); });
  header(out, {"nv_inference_request_failure", "counter", "Number of failed inference requests"});
  for (const Row& r : rows)
    for (const char* reason : {"REJECTED", "CANCELED", "BACKEND", "OTHER"}) {
      auto it = r.stats.failures.find(reason);
      out << "nv_inference_request_failure"
          << labels(r.model, std::string("reason=\"") + reason + "\"") << " "
          << (it == r.stats.failures.end() ? 0 : it->second) << "\n";
    }
  counter({"nv_inference_count", "counter", "Number of inferences performed (rows)"},
          [](const Row& r) { return double(r.stats.inference_count); });
  counter({"nv_inference_exec_count", "counter", "Number of model executions (batches)"},
          [](const Row& r) { return double(r.batches.batches); });
  counter({"nv_inference_pending_request_count", "gauge", "Requests waiting in the queue"},
          [](const Row& r) { return double(r.batches.queued); });
  counter({"nv_inference_request_duration_us", "counter", "Cumulative request duration (us)"},
          [](const Row& r) { return (r.stats.success_ns + r.stats.fail_ns) / 1e3; });
  counter(
      {"nv_inference_queue_duration_us", "counter", "Cumulative time requests spent queued (us)"},
      [](const Row& r) { return r.stats.queue_ns / 1e3; });
  counter({"nv_inference_compute_input_duration_us", "counter",
           "Cumulative compute input duration (us)"},
          [](const Row& r) { return r.stats.compute_input_ns / 1e3; });
  counter({"nv_inference_compute_infer_duration_us", "counter",
           "Cumulative compute inference duration (us)"},
          [](const Row& r) { return r.stats.compute_infer_ns / 1e3; });
  counter({"nv_inference_compute_output_duration_us", "counter",
           "Cumulative compute output duration (us)"},
          [](const Row& r) { return r.stats.compute_output_ns / 1e3; });
  counter({"kiln_plan_builds", "counter",
           "Plans the model's instances built: each batch size's at load, then any built while "
           "serving (a request waited for it)"},
          [](const Row& r) { return double(r.plan_builds); });
  // kiln's own split of the runs, summed nanoseconds of InferStats shown in microseconds.
  const struct {
    Family f;
    uint64_t InferStats::*ns;
  } durations[] = {
      {{"kiln_device_compute_duration_us", "counter",
        "Cumulative device compute of the requests' batches, from the device's timing (us)"},
       &InferStats::device_compute_ns},
      {{"kiln_device_order_wait_duration_us", "counter",
        "Cumulative wait of the batches' compute for another instance's (us)"},
       &InferStats::device_wait_ns},
      {{"kiln_input_join_duration_us", "counter",
        "Of compute input: the batches' rows joined into one tensor (us)"},
       &InferStats::input_join_ns},
      {{"kiln_input_staging_wait_duration_us", "counter",
        "Of compute input: the wait for the instance's staging buffers to be free (us)"},
       &InferStats::input_staging_wait_ns},
      {{"kiln_input_staging_copy_duration_us", "counter",
        "Of compute input: the host copy into the staging buffers (us)"},
       &InferStats::input_staging_copy_ns},
      {{"kiln_input_h2d_duration_us", "counter",
        "Of compute input: the copy to the device, from the device's timing (us)"},
       &InferStats::input_h2d_ns},
  };
  for (const auto& d : durations) counter(d.f, [&](const Row& r) { return r.stats.*d.ns / 1e3; });
  const struct {
    Family f;
    std::vector<double> LatencyWindow::*values;
  } summaries[] = {
      {{"nv_inference_request_summary_us", "summary", "Request duration (us)"},
       &LatencyWindow::request_us},
      {{"nv_inference_queue_summary_us", "summary", "Queue duration (us)"},
       &LatencyWindow::queue_us},
      {{"nv_inference_compute_infer_summary_us", "summary", "Compute inference duration (us)"},
       &LatencyWindow::compute_us},
  };
  for (const auto& s : summaries) {
    header(out, s.f);
    for (const Row& r : rows) {
      const std::vector<double>& v = r.window.*s.values;
      for (double q : {0.5, 0.9, 0.95, 0.99})
        out << s.f.name << labels(r.model, "quantile=\"" + label_number(q) + "\"") << " "
            << number(quantile(v, q)) << "\n";
      double sum = 0;
      for (double x : v) sum += x;
      out << s.f.name << "_sum" << labels(r.model) << " " << number(sum) << "\n";
      out << s.f.name << "_count" << labels(r.model) << " " << v.size() << "\n";
    }
  }
  header(out, {"kiln_batch_size", "histogram", "Rows of the batches that ran, before padding"});
  for (const Row& r : rows) {
    int64_t sum = 0;
    const std::vector<int64_t> bounds = r.sizes.empty() ? std::vector<int64_t>{1} : r.sizes;
    for (int64_t b : bounds) {
      int64_t cumulative = 0;  // batches of at most b rows
      for (const auto& [batch_rows, n] : r.batches.batch_rows_histogram)
        if (batch_rows <= b) cumulative += n;
      out << "kiln_batch_size_bucket" << labels(r.model, "le=\"" + std::to_string(b) + "\"") << " "
          << cumulative << "\n";
    }
    for (const auto& [batch_rows, n] : r.batches.batch_rows_histogram) sum += batch_rows * n;
    out << "kiln_batch_size_bucket" << labels(r.model, "le=\"+Inf\"") << " " << r.batches.batches
        << "\n";
    out << "kiln_batch_size_sum" << labels(r.model) << " " << sum << "\n";
    out << "kiln_batch_size_count" << labels(r.model) << " " << r.batches.batches << "\n";
  }
  gpu_metrics(out, server);
  return out.str();
}

}  // namespace kiln::server
