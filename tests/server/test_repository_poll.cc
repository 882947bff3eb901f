// --model-control poll (ModelServer::poll): a model added to the repository loads, one whose
// config changes reloads with the new config, one removed unloads, a broken one is reported and
// not retried until it changes; nothing happens where nothing changed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/model_server.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;

class RepositoryPoll : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kiln_poll_" + std::to_string(getpid()));
    fs::remove_all(root_);
    add("a", 8);
  }
  void TearDown() override { fs::remove_all(root_); }
  void add(const std::string& name, int max_batch) {
    fs::create_directories(root_ / name / "1");
    fs::copy_file(std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx",
                  root_ / name / "1" / "model.onnx", fs::copy_options::overwrite_existing);
    std::ofstream(root_ / name / "config.pbtxt")
        << "max_batch_size: " << max_batch << "\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n";
  }
  std::vector<std::string> poll(ModelServer& s) {
    auto r = s.poll();
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? *r : std::vector<std::string>{};
  }
  fs::path root_;
};

TEST_F(RepositoryPoll, FollowsTheRepository) {
  ServerOptions o;
  o.repository = root_.string();
  o.model_control = "poll";
  o.nvml_library = "";
  auto server = ModelServer::start(o);
  ASSERT_TRUE(server.is_ok()) << server.status().to_string();
  ModelServer& s = **server;
  ASSERT_TRUE(s.find("a").is_ok());
  EXPECT_TRUE(poll(s).empty());  // nothing changed

  add("b", 4);
  EXPECT_EQ(poll(s), std::vector<std::string>{"loaded b"});
  ASSERT_TRUE(s.find("b").is_ok());

  std::ofstream(root_ / "a" / "config.pbtxt")
      << "max_batch_size: 2\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n";
  EXPECT_EQ(poll(s), std::vector<std::string>{"reloaded a"});
  auto a = s.find("a");
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ((*a)->config().max_batch_size(), 2);

  fs::remove_all(root_ / "b");
  EXPECT_EQ(poll(s), std::vector<std::string>{"unloaded b"});
  EXPECT_FALSE(s.find("b").is_ok());

  fs::create_directories(root_ / "c" / "1");
  std::ofstream(root_ / "c" / "config.pbtxt") << "sequence_batching { }";
  std::ofstream(root_ / "c" / "1" / "model.onnx") << "x";
  auto changed = poll(s);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].rfind("failed c: ", 0), 0u) << changed[0];
  EXPECT_TRUE(poll(s).empty());  // not retried until it changes
  EXPECT_TRUE(s.find("a").is_ok());
}

TEST_F(RepositoryPoll, OnlyUnderPollModelControl) {
  ServerOptions o;
  o.repository = root_.string();
  o.nvml_library = "";
  auto server = ModelServer::start(o);
  ASSERT_TRUE(server.is_ok()) << server.status().to_string();
  auto r = (*server)->poll();
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("--model-control poll"), std::string::npos);
}

}  // namespace
}  // namespace kiln::server
