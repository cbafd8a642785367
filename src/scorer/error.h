// The one exception type of the standalone scorer: a message meant for the user.
#pragma once
#include <stdexcept>

namespace cwm {

class ScorerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace cwm
