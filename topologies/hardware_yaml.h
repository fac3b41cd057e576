#pragma once
/// Internal to topologies/: the pieces the GPU-profile and topology YAML readers and writers share. Not a public
/// interface; use topologies/hardware.h.

#include <cstdint>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "common/units.h"
#include "common/yaml_reader.h"
#include "topologies/hardware.h"

namespace fsdpsim::hardware_yaml {

/// Reads one GPU-profile mapping strictly (unknown keys first, then every value; calls finish()).
GpuProfile read_gpu_profile(YamlMap& map);
/// Writes the profile's keys, in field order, into a mapping the caller has opened.
void emit_gpu_profile_keys(YAML::Emitter& out, const GpuProfile& profile);
/// The built-in profile called `name`, or nullopt when there is none.
std::optional<GpuProfile> find_gpu_profile_preset(const std::string& name);

/// Text forms that parse back to exactly the same value (parse(format(x)) == x, bit for bit).
std::string exact_flops_text(double flops_per_s);
/// `prefer_bits`: write Gb/s-style units when they are exact (NIC line rates are quoted in bits).
std::string exact_bandwidth_text(double bytes_per_s, bool prefer_bits);
std::string exact_bytes_text(int64_t bytes);
std::string exact_time_text(TimeNs ns);
std::string exact_number_text(double value);

}  // namespace fsdpsim::hardware_yaml
