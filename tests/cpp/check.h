// Minimal test helpers for the C++ unit tests (no framework needed).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>

static int g_failures = 0;

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                        \
    }                                                                      \
  } while (0)

#define CHECK_EQ(a, b) CHECK((a) == (b))

template <typename E, typename F>
bool Throws(F f) {
  try {
    f();
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

inline int Finish(const char* name) {
  if (g_failures) {
    std::fprintf(stderr, "%s: %d failure(s)\n", name, g_failures);
    return 1;
  }
  std::printf("%s: ok\n", name);
  return 0;
}
