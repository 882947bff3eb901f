// Prometheus text metrics of a ModelServer, with Triton's names and labels (model, version):
//
//   nv_inference_request_success, nv_inference_request_failure{reason}, nv_inference_count,
//   nv_inference_exec_count, nv_inference_pending_request_count,
//   nv_inference_request_duration_us, nv_inference_queue_duration_us,
//   nv_inference_compute_input_duration_us, nv_inference_compute_infer_duration_us,
//   nv_inference_compute_output_duration_us (cumulative counters), and the summaries
//   nv_inference_request_summary_us, nv_inference_queue_summary_us,
//   nv_inference_compute_infer_summary_us (quantiles 0.5, 0.9, 0.95, 0.99 over the last requests);
//
// kiln's own histogram of the batch sizes that ran, kiln_batch_size (rows before padding); and
// Triton's GPU gauges nv_gpu_utilization, nv_gpu_memory_total_bytes, nv_gpu_memory_used_bytes and
// nv_gpu_power_usage{gpu_uuid} of the GPUs the server can use (read through NVML at each scrape).
#pragma once

#include <string>
#include <vector>

#include "server/model_server.h"

namespace kiln::server {

std::string prometheus_metrics(const ModelServer& server);

// The q-quantile (0..1) of `values` (nearest rank); 0 for none.
double quantile(std::vector<double> values, double q);

}  // namespace kiln::server
