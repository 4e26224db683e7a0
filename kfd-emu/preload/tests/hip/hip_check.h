// Shared by the HIP test programs: every HIP call is checked, every result compared, and the
// first failure ends the program with a message and a non-zero status.
#pragma once
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        hipError_t check_err_ = (call);                                                  \
        if (check_err_ != hipSuccess) {                                                  \
            fprintf(stderr, "FAIL %s:%d: %s: %s (%d)\n", __FILE__, __LINE__, #call,      \
                    hipGetErrorString(check_err_), (int)check_err_);                     \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

#define EXPECT(cond, ...)                                                                \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

// Prints a step as done; stdout is unbuffered so that a crash leaves the steps before it.
static inline void ok(const char* step) { printf("ok %s\n", step); }

static inline void unbuffered(void) { setvbuf(stdout, NULL, _IONBF, 0); }

// A byte pattern that differs per position and per seed, so a copy from the wrong offset shows.
static inline unsigned char pattern(size_t i, unsigned seed) {
    return (unsigned char)((i * 2654435761u + seed * 97u) >> 13);
}

static inline void fill_pattern(void* p, size_t n, unsigned seed) {
    unsigned char* b = (unsigned char*)p;
    for (size_t i = 0; i < n; i++) b[i] = pattern(i, seed);
}

// Returns the first index where `p` differs from the pattern, or n when it matches.
static inline size_t check_pattern(const void* p, size_t n, unsigned seed) {
    const unsigned char* b = (const unsigned char*)p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != pattern(i, seed)) return i;
    return n;
}

#define EXPECT_PATTERN(p, n, seed, what)                                                 \
    do {                                                                                 \
        size_t at_ = check_pattern((p), (n), (seed));                                    \
        EXPECT(at_ == (size_t)(n), "%s: byte %zu of %zu is %#x, expected %#x", (what),   \
               at_, (size_t)(n), ((const unsigned char*)(p))[at_], pattern(at_, (seed)));  \
    } while (0)
