#pragma once
/// The Megatron-LM flags fsdpsim models, each with its rule: what it sets in the configuration (through the key
/// table, so values are checked there) or in the model spec. megatron_args.cpp reads a command line and applies them.

#include <functional>
#include <map>
#include <string>

#include "common/error.h"
#include "config/fsdp_config.h"
#include "model/model.h"

namespace fsdpsim::megatron {

/// Where an error in the Megatron-LM arguments points: a pasted command line has no file or line.
inline const SourceLocation kWhere{"<megatron-args>", 0, 0};

/// One flag as given, and its value.
struct ParsedFlag {
  std::string name;
  std::string value;  // empty for switches
};

using ConfigRule = std::function<void(FsdpConfig&, const ParsedFlag&)>;
using ModelRule = std::function<void(ModelSpec&, const ParsedFlag&)>;
using ConfigRules = std::map<std::string, ConfigRule>;
using ModelRules = std::map<std::string, ModelRule>;

/// The flags of Megatron-LM's parser that set configuration keys, by name.
const ConfigRules& config_rules();
/// Flags older Megatron-LM parsers had that launch scripts still carry (not flags of today's parser).
const ConfigRules& legacy_config_rules();
/// The flags that set the model's shape.
const ModelRules& model_rules();

/// Sets a configuration key from a flag's value through the one declared key table.
void set_key(FsdpConfig& config, const std::string& key, const std::string& value, const std::string& flag);
/// The flag's value as a whole number in [min, max]; throws ConfigError naming the flag otherwise.
long long int_value(const ParsedFlag& f, long long min, long long max);
/// N model chunks per pipeline rank, and the schedule that runs them.
void set_virtual_stages(FsdpConfig& c, const ParsedFlag& f);

}  // namespace fsdpsim::megatron
