// The model repository (src/server/model_repository.h): Triton's layout, version policies, and
// one bad model refused with its reason while the others load.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/model_repository.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;

class Repository : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kiln_repo_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text = "x") {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel, std::ios::binary) << text;
  }
  const RepositoryModel& find(const std::vector<RepositoryModel>& ms, const std::string& name) {
    for (const RepositoryModel& m : ms)
      if (m.name == name) return m;
    ADD_FAILURE() << name << " not listed";
    return ms.front();
  }
  std::vector<int64_t> versions(const RepositoryModel& m) {
    std::vector<int64_t> v;
    for (const ModelVersion& mv : m.versions) v.push_back(mv.version);
    return v;
  }
  fs::path root_;
};

TEST_F(Repository, TritonsLayoutAndVersionPolicies) {
  // latest 1 by default; non-numeric and zero-led folders ignored; no config is fine.
  write("plain/1/model.onnx");
  write("plain/3/model.onnx");
  write("plain/02/model.onnx");
  write("plain/latest/model.onnx");
  write("plain/README.md");
  // a plan beside the ONNX file wins; latest 2
  write("latest2/config.pbtxt", "version_policy { latest { num_versions: 2 } }");
  for (const char* v : {"1", "2", "5"}) write(std::string("latest2/") + v + "/model.onnx");
  write("latest2/5/model.kiln");
  write("all/config.pbtxt", "name: \"all\" version_policy { all { } }");
  for (const char* v : {"1", "2"}) write(std::string("all/") + v + "/model.onnx");
  write("specific/config.pbtxt", "version_policy { specific { versions: [ 1 ] } }");
  for (const char* v : {"1", "2"}) write(std::string("specific/") + v + "/model.onnx");
  write("named/config.pbtxt", "default_model_filename: \"net.onnx\"");
  write("named/1/net.onnx");
  write(".hidden/1/model.onnx");
  write("stray.txt");

  auto repo = read_model_repository(root_.string());
  ASSERT_TRUE(repo.is_ok()) << repo.status().to_string();
  ASSERT_EQ(repo->size(), 5u);
  for (const RepositoryModel& m : *repo) EXPECT_TRUE(m.status.is_ok()) << m.status.to_string();
  EXPECT_EQ(versions(find(*repo, "plain")), (std::vector<int64_t>{3}));
  EXPECT_FALSE(find(*repo, "plain").has_config);
  const RepositoryModel& l2 = find(*repo, "latest2");
  EXPECT_EQ(versions(l2), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(fs::path(l2.versions[1].model_file).filename(), "model.kiln");
  EXPECT_EQ(versions(find(*repo, "all")), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(versions(find(*repo, "specific")), (std::vector<int64_t>{1}));
  EXPECT_EQ(fs::path(find(*repo, "named").versions[0].model_file).filename(), "net.onnx");
}

// A bad model is refused with its reason; the others load.
TEST_F(Repository, BadModelsAreRefusedWithTheReason) {
  write("good/1/model.onnx");
  write("syntax/config.pbtxt", "max_batch_size: [");
  write("syntax/1/model.onnx");
  write("sequence/config.pbtxt", "sequence_batching { }");
  write("sequence/1/model.onnx");
  write("misnamed/config.pbtxt", "name: \"other\"");
  write("misnamed/1/model.onnx");
  write("empty/config.pbtxt", "");
  write("missing/config.pbtxt", "version_policy { specific { versions: [ 4 ] } }");
  write("missing/1/model.onnx");
  write("nofile/1/weights.bin");
  auto repo = read_model_repository(root_.string());
  ASSERT_TRUE(repo.is_ok());
  EXPECT_TRUE(find(*repo, "good").status.is_ok());
  const std::pair<const char*, const char*> refused[] = {
      {"syntax", "config.pbtxt:1:"}, {"sequence", "sequence_batching"},
      {"misnamed", "'other'"},       {"empty", "no version folder"},
      {"missing", "version 4"},      {"nofile", "no version folder"},
  };
  for (const auto& [name, needle] : refused) {
    const RepositoryModel& m = find(*repo, name);
    ASSERT_FALSE(m.status.is_ok()) << name;
    EXPECT_NE(m.status.message().find(needle), std::string::npos) << m.status.message();
    EXPECT_NE(m.status.message().find(std::string("model '") + name + "'"), std::string::npos)
        << m.status.message();
  }
  EXPECT_FALSE(find(*repo, "nofile").warnings.empty());
  EXPECT_FALSE(read_model_repository((root_ / "nowhere").string()).is_ok());
}

}  // namespace
}  // namespace kiln::server
