#include "server/model_server.h"

#include <algorithm>

namespace kiln::server {

Result<std::unique_ptr<ModelServer>> ModelServer::start(ServerOptions options) {
  const std::string& mc = options.model_control;
  if (mc != "none" && mc != "explicit" && mc != "poll")
    return invalid_argument("model control '" + mc + "': none, poll or explicit");
  KILN_ASSIGN_OR_RETURN(std::vector<RepositoryModel> repo,
                        read_model_repository(options.repository));
  std::unique_ptr<ModelServer> s(new ModelServer(std::move(options)));
  if (!s->options_.nvml_library.empty()) {
    auto gpus = GpuMonitor::open_all(1000, s->options_.nvml_library);
    if (gpus.is_ok())
      s->gpus_ = std::move(*gpus);
    else
      s->gpus_note_ = "no GPU metrics: " + gpus.status().message();
  }
  std::lock_guard<std::mutex> lock(s->mu_);
  for (const RepositoryModel& m : repo) {
    const bool wanted =
        s->options_.model_control != "explicit" ||
        std::count(s->options_.load_models.begin(), s->options_.load_models.end(), m.name) > 0;
    if (wanted) (void)s->install_locked(m.name, s->load_model(m.name));  // a failure is kept
  }
  for (const std::string& name : s->options_.load_models)
    if (!s->models_.count(name) && !s->failed_.count(name))
      return not_found("--load-model " + name + ": no such model in the repository");
  return s;
}

ModelServer::~ModelServer() { drain(); }

bool ModelServer::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !draining_;
}

ModelServer::Loaded ModelServer::load_model(const std::string& name) const {
  Loaded out;
  out.fingerprint = model_fingerprint(options_.repository, name);
  RepositoryModel m = read_repository_model(options_.repository, name);
  out.status = m.status;
  for (const ModelVersion& v : m.versions) {
    if (!out.status.is_ok()) break;
    auto loaded = ServedModel::load(m, v, options_.serve);
    if (!loaded.is_ok()) {
      out.status = loaded.status();
      break;
    }
    out.versions[v.version] = std::move(*loaded);
  }
  if (!out.status.is_ok()) out.versions.clear();
  return out;
}

Status ModelServer::install_locked(const std::string& name, Loaded loaded) {
  fingerprints_[name] = std::move(loaded.fingerprint);
  if (!loaded.status.is_ok()) {
    models_.erase(name);
    failed_[name] = loaded.status.message();
    return loaded.status;
  }
  failed_.erase(name);
  models_[name] = std::move(loaded.versions);
  return Status::ok();
}

Result<std::shared_ptr<ServedModel>> ModelServer::find(const std::string& name,
                                                       const std::string& version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto failed = failed_.find(name);
  if (failed != failed_.end())
    return unavailable("model '" + name + "' is not available: " + failed->second);
  auto it = models_.find(name);
  if (it == models_.end() || it->second.empty()) return not_found("unknown model '" + name + "'");
  if (version.empty() || version == "-1") return it->second.rbegin()->second;
  int64_t v = 0;
  try {
    size_t used = 0;
    v = std::stoll(version, &used);
    if (used != version.size()) v = 0;
  } catch (const std::exception&) {
    v = 0;
  }
  auto found = it->second.find(v);
  if (found == it->second.end())
    return not_found("model '" + name + "' has no version '" + version + "' being served");
  return found->second;
}

std::vector<ModelState> ModelServer::index(bool ready_only) const {
  std::vector<ModelState> out;
  std::vector<std::string> names;
  // The repository's other models matter only to the full index: metadata and metrics
  // (ready_only) read no files.
  if (!ready_only) {
    auto repo = read_model_repository(options_.repository);
    if (repo.is_ok())
      for (const RepositoryModel& m : *repo) names.push_back(m.name);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, versions] : models_)
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    auto it = models_.find(name);
    if (it != models_.end()) {
      for (const auto& [v, m] : it->second)
        out.push_back({name, v, draining_ ? "UNAVAILABLE" : "READY", draining_ ? "draining" : ""});
      continue;
    }
    if (ready_only) continue;
    auto failed = failed_.find(name);
    out.push_back({name, 0, "UNAVAILABLE", failed != failed_.end() ? failed->second : "unloaded"});
  }
  if (ready_only)
    out.erase(std::remove_if(out.begin(), out.end(),
                             [](const ModelState& s) { return s.state != "READY"; }),
              out.end());
  return out;
}

Status ModelServer::load(const std::string& name) {
  if (options_.model_control == "none")
    return invalid_argument(
        "explicit model load is not allowed with model control 'none' "
        "(start with --model-control explicit)");
  if (!ready()) return unavailable("the server is shutting down");
  auto repo = read_model_repository(options_.repository);
  if (!repo.is_ok()) return repo.status();
  if (std::none_of(repo->begin(), repo->end(),
                   [&](const RepositoryModel& m) { return m.name == name; }))
    return not_found("no model '" + name + "' in the repository");
  Loaded loaded = load_model(name);  // without the lock: the other models serve meanwhile
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return unavailable("the server is shutting down");
  return install_locked(name, std::move(loaded));
}

Status ModelServer::unload(const std::string& name) {
  if (options_.model_control == "none")
    return invalid_argument(
        "explicit model unload is not allowed with model control 'none' "
        "(start with --model-control explicit)");
  std::map<int64_t, std::shared_ptr<ServedModel>> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(name);
    if (it == models_.end()) {
      if (failed_.erase(name)) return Status::ok();
      return not_found("model '" + name + "' is not loaded");
    }
    gone = std::move(it->second);
    models_.erase(it);
  }
  // Requests already admitted finish: each version's batcher drains as its last holder lets go.
  for (auto& [v, m] : gone) m->batcher().drain();
  return Status::ok();
}

Result<std::vector<std::string>> ModelServer::poll() {
  if (options_.model_control != "poll")
    return invalid_argument("polling the repository needs --model-control poll");
  KILN_ASSIGN_OR_RETURN(std::vector<RepositoryModel> repo,
                        read_model_repository(options_.repository));
  std::map<std::string, std::string> now;  // read before the lock: file reads, not under it
  for (const RepositoryModel& m : repo)
    now[m.name] = model_fingerprint(options_.repository, m.name);
  std::vector<std::string> done, changed, gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_) return done;
    for (const auto& [name, fingerprint] : now) {
      auto known = fingerprints_.find(name);
      if (known == fingerprints_.end() || known->second != fingerprint) changed.push_back(name);
    }
    for (const auto& [name, fingerprint] : fingerprints_)
      if (!now.count(name)) gone.push_back(name);
    for (const std::string& name : gone) fingerprints_.erase(name);
  }
  for (const std::string& name : changed) {
    Loaded loaded = load_model(name);  // without the lock: the other models serve meanwhile
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_) return done;
    const bool was = fingerprints_.count(name) > 0;
    Status s = install_locked(name, std::move(loaded));
    done.push_back(s.is_ok() ? (was ? "reloaded " : "loaded ") + name
                             : "failed " + name + ": " + s.message());
  }
  for (const std::string& name : gone) {
    (void)unload(name);  // not loaded (it had failed): only its failure is forgotten
    done.push_back("unloaded " + name);
  }
  return done;
}

void ModelServer::stop_admitting() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
}

void ModelServer::drain() {
  std::vector<std::shared_ptr<ServedModel>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
    for (const auto& [name, versions] : models_)
      for (const auto& [v, m] : versions) all.push_back(m);
  }
  for (auto& m : all) m->batcher().drain();
}

void ModelServer::record(const std::string& name, int64_t version, const InferStats& one) {
  std::lock_guard<std::mutex> lock(mu_);
  InferStats& s = stats_[{name, version}];
  s.success_count += one.success_count;
  s.success_ns += one.success_ns;
  s.fail_count += one.fail_count;
  s.fail_ns += one.fail_ns;
  s.queue_ns += one.queue_ns;
  s.compute_input_ns += one.compute_input_ns;
  s.compute_infer_ns += one.compute_infer_ns;
  s.compute_output_ns += one.compute_output_ns;
  s.device_compute_ns += one.device_compute_ns;
  s.device_wait_ns += one.device_wait_ns;
  s.input_join_ns += one.input_join_ns;
  s.input_staging_wait_ns += one.input_staging_wait_ns;
  s.input_staging_copy_ns += one.input_staging_copy_ns;
  s.input_h2d_ns += one.input_h2d_ns;
  s.inference_count += one.inference_count;
  s.last_inference_ms = std::max(s.last_inference_ms, one.last_inference_ms);
  for (const auto& [reason, n] : one.failures) s.failures[reason] += n;
  if (one.success_count)
    latencies_[{name, version}].add(one.success_ns / 1e3, one.queue_ns / 1e3,
                                    one.compute_infer_ns / 1e3);
}

void LatencyWindow::add(double request, double queue, double compute) {
  if (request_us.size() < kWindow) {
    request_us.push_back(request);
    queue_us.push_back(queue);
    compute_us.push_back(compute);
    return;
  }
  request_us[next] = request;
  queue_us[next] = queue;
  compute_us[next] = compute;
  next = (next + 1) % kWindow;
}

LatencyWindow ModelServer::latencies(const std::string& name, int64_t version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = latencies_.find({name, version});
  return it == latencies_.end() ? LatencyWindow{} : it->second;
}

InferStats ModelServer::stats(const std::string& name, int64_t version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = stats_.find({name, version});
  return it == stats_.end() ? InferStats{} : it->second;
}

}  // namespace kiln::server
