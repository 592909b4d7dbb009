// JSON reading helpers shared by the simdjson-based readers (io_json.cc, hf_tokenizer.cc). Only for
// translation units of kplab_core: simdjson's layout depends on its compile definitions.
#pragma once

#include <simdjson.h>

namespace kplab::json_internal {

// "an array", "a number", ... for error messages.
inline const char* TypeName(const simdjson::dom::element& e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return "a number";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "a value";
}

}  // namespace kplab::json_internal
