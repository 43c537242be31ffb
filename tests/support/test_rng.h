/*
 * test_rng.h — a small seeded generator (xorshift64*) for tests that throw
 * random input at a peer: the seed is printed by the test, so a failure
 * replays exactly. Not for anything that needs unpredictability.
 */
#ifndef RIFT_TESTS_TEST_RNG_H
#define RIFT_TESTS_TEST_RNG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rng {
    uint64_t s; /* never 0 */
} rng;

static inline uint64_t rnd(rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

/* Uniform enough in [0, n), n > 0. */
static inline uint32_t below(rng *r, uint32_t n) {
    return (uint32_t)(rnd(r) % n);
}

static inline bool chance(rng *r, unsigned percent) {
    return below(r, 100) < percent;
}

#endif /* RIFT_TESTS_TEST_RNG_H */
