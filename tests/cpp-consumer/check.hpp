// A tiny test harness for the C++ consumer: CHECK records a failure and carries on;
// main() exits non-zero if anything failed.
#ifndef DEMANDTEX_CPP_CONSUMER_CHECK_HPP
#define DEMANDTEX_CPP_CONSUMER_CHECK_HPP

#include <demandtex.hpp>

#include <atomic>
#include <cstdio>
#include <functional>
#include <string>

namespace harness {

/// Failed checks so far (atomic: checks run on several threads).
inline std::atomic<int>& failures() {
    static std::atomic<int> n{0};
    return n;
}

/// Record a failure.
inline void fail(const char* file, int line, const std::string& what) {
    ++failures();
    std::fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what.c_str());
}

/// Run `body` and report whether it threw a `demandtex::Error` with `status`.
inline bool throwsStatus(DtexStatus status, const std::function<void()>& body, std::string& got) {
    try {
        body();
        got = "no exception";
        return false;
    } catch (const demandtex::Error& e) {
        got = e.what();
        // A library error must explain itself.
        return e.status() == status && std::string(e.message()).size() > 0;
    } catch (const std::exception& e) {
        got = std::string("another exception: ") + e.what();
        return false;
    }
}

}  // namespace harness

#define CHECK(cond)                                                       \
    do {                                                                  \
        if (!(cond)) harness::fail(__FILE__, __LINE__, #cond);            \
    } while (0)

#define CHECK_MSG(cond, msg)                                                           \
    do {                                                                               \
        if (!(cond)) harness::fail(__FILE__, __LINE__, std::string(#cond) + ": " + (msg)); \
    } while (0)

/// `stmt` must throw demandtex::Error with `status` (and a non-empty message).
#define CHECK_THROWS_STATUS(status, ...)                                                   \
    do {                                                                                   \
        std::string got_;                                                                  \
        if (!harness::throwsStatus((status), [&] { __VA_ARGS__; }, got_))                  \
            harness::fail(__FILE__, __LINE__,                                              \
                          std::string(#__VA_ARGS__ " should throw " #status ", got: ") + got_); \
    } while (0)

#endif
