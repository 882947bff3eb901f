// Node attributes: a name → value map. Getters take a default for absent attributes; an
// attribute of another type than asked is reported as absent by has_*() and falls back
// to the default (the ONNX checker has already validated attribute types on import).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor>;

class Attributes {
 public:
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  void set(const std::string& name, AttrValue v) { map_[name] = std::move(v); }
  void erase(const std::string& name) { map_.erase(name); }

  int64_t get_int(const std::string& name, int64_t def) const { return get<int64_t>(name, def); }
  // Accepts an int attribute too (some exporters write alpha=1 as an int).
  float get_float(const std::string& name, float def) const;
  std::string get_string(const std::string& name, const std::string& def = "") const {
    return get<std::string>(name, def);
  }
  std::vector<int64_t> get_ints(const std::string& name,
                                const std::vector<int64_t>& def = {}) const {
    return get<std::vector<int64_t>>(name, def);
  }
  std::vector<float> get_floats(const std::string& name, const std::vector<float>& def = {}) const {
    return get<std::vector<float>>(name, def);
  }
  const Tensor* get_tensor(const std::string& name) const {
    auto it = map_.find(name);
    if (it == map_.end()) return nullptr;
    return std::get_if<Tensor>(&it->second);
  }
  const std::map<std::string, AttrValue>& all() const { return map_; }

 private:
  template <class T>
  T get(const std::string& name, const T& def) const {
    auto it = map_.find(name);
    if (it == map_.end()) return def;
    if (const T* v = std::get_if<T>(&it->second)) return *v;
    return def;
  }
  std::map<std::string, AttrValue> map_;
};

inline float Attributes::get_float(const std::string& name, float def) const {
  auto it = map_.find(name);
  if (it == map_.end()) return def;
  if (const float* f = std::get_if<float>(&it->second)) return *f;
  if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  return def;
}

}  // namespace kiln
