#include "server/model_repository.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "server/model_config.h"

namespace kiln::server {

namespace {

namespace fs = std::filesystem;

// A version folder's number: digits only, no leading zero (Triton's rule); else 0.
int64_t version_of(const std::string& folder) {
  if (folder.empty() || folder.size() > 18 || folder[0] == '0') return 0;
  if (!std::all_of(folder.begin(), folder.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return 0;
  return std::stoll(folder);
}

// The model file of a version folder: the config's default_model_filename, else model.kiln (a
// built plan), else model.onnx. Empty where there is none.
std::string model_file(const fs::path& version_dir, const inference::ModelConfig& c) {
  std::vector<std::string> names;
  if (!c.default_model_filename().empty())
    names.push_back(c.default_model_filename());
  else
    names = {"model.kiln", "model.onnx"};
  for (const std::string& n : names)
    if (fs::is_regular_file(version_dir / n)) return (version_dir / n).string();
  return "";
}

// The versions the policy serves among the ones found (ascending), or an error naming the
// versions it asks for that are not there.
Result<std::vector<int64_t>> served(const inference::ModelVersionPolicy& p,
                                    std::vector<int64_t> found) {
  std::sort(found.begin(), found.end());
  if (p.has_all()) return found;
  if (p.has_specific()) {
    std::vector<int64_t> want(p.specific().versions().begin(), p.specific().versions().end());
    std::sort(want.begin(), want.end());
    for (int64_t v : want)
      if (!std::binary_search(found.begin(), found.end(), v))
        return invalid_argument("version_policy names version " + std::to_string(v) +
                                ", which has no folder with a model file");
    return want;
  }
  const size_t n = p.has_latest() ? p.latest().num_versions() : 1;
  if (found.size() > n) found.erase(found.begin(), found.end() - static_cast<std::ptrdiff_t>(n));
  return found;
}

Status read_config(const fs::path& file, RepositoryModel& m) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return invalid_argument(file.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  KILN_ASSIGN_OR_RETURN(ParsedConfig parsed, parse_model_config(text.str(), file.string()));
  m.config = std::move(parsed.config);
  m.warnings = std::move(parsed.warnings);
  m.has_config = true;
  if (!m.config.name().empty() && m.config.name() != m.name)
    return invalid_argument(file.string() + ": name '" + m.config.name() +
                            "' where the model's folder is '" + m.name + "'");
  return check_model_config(m.config, &m.warnings);
}

Status read_versions(RepositoryModel& m) {
  std::map<int64_t, std::string> files;
  std::vector<int64_t> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(m.dir, ec)) {
    const int64_t v = e.is_directory() ? version_of(e.path().filename().string()) : 0;
    if (v == 0) continue;
    std::string file = model_file(e.path(), m.config);
    if (file.empty()) {
      m.warnings.push_back("version " + std::to_string(v) + ": no " +
                           (m.config.default_model_filename().empty()
                                ? std::string("model.onnx or model.kiln")
                                : m.config.default_model_filename()) +
                           " in " + e.path().string() + " (not served)");
      continue;
    }
    files[v] = std::move(file);
    found.push_back(v);
  }
  if (ec) return invalid_argument(m.dir + ": " + ec.message());
  if (found.empty())
    return invalid_argument(m.dir + ": no version folder (1/, 2/...) holding a model file");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> versions, served(m.config.version_policy(), found));
  for (int64_t v : versions) m.versions.push_back({v, files[v]});
  return Status::ok();
}

}  // namespace

RepositoryModel read_repository_model(const std::string& dir, const std::string& name) {
  RepositoryModel m;
  m.name = name;
  m.dir = (fs::path(dir) / name).string();
  const fs::path config = fs::path(m.dir) / "config.pbtxt";
  if (fs::exists(config)) m.status = read_config(config, m);
  if (m.status.is_ok()) m.status = read_versions(m);
  if (!m.status.is_ok()) m.status = m.status.with_context("model '" + name + "'");
  return m;
}

Result<std::vector<RepositoryModel>> read_model_repository(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return invalid_argument("model repository '" + dir + "' is not a directory");
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (e.is_directory() && !n.empty() && n[0] != '.') names.push_back(n);
  }
  if (ec) return invalid_argument("model repository '" + dir + "': " + ec.message());
  std::sort(names.begin(), names.end());
  std::vector<RepositoryModel> models;
  for (const std::string& n : names) models.push_back(read_repository_model(dir, n));
  return models;
}

std::string model_fingerprint(const std::string& dir, const std::string& name) {
  const fs::path root = fs::path(dir) / name;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return "";
  std::vector<std::string> entries;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() >= 3) it.disable_recursion_pending();
    if (!it->is_regular_file(ec)) continue;
    const fs::path& p = it->path();
    std::ostringstream e;
    e << fs::relative(p, root, ec).string() << ' ' << it->file_size(ec) << ' '
      << it->last_write_time(ec).time_since_epoch().count();
    if (p.extension() == ".pbtxt" || p.extension() == ".txt") {
      std::ifstream f(p);
      e << '\n' << f.rdbuf();
    }
    entries.push_back(e.str());
  }
  std::sort(entries.begin(), entries.end());
  std::string all;
  for (const std::string& e : entries) all += e + '\0';
  return all.empty() ? std::string(1, '\0') : all;  // an empty folder is still there
}

}  // namespace kiln::server
