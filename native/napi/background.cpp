#include "napi/background.h"

namespace spanguard {

BackgroundCounters& Background() {
  static BackgroundCounters counters;
  return counters;
}

}  // namespace spanguard
