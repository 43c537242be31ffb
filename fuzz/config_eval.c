/*
 * config_eval.c — fuzz target (fuzz layer): arbitrary bytes as a riftd Lua
 * configuration. Evaluation and validation must never crash, leak or hang
 * whatever the source, and a failure must leave one line of text.
 */
#include "lua/config_eval.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rift_config_options opts;
    rift_config_options_default(&opts);
    /* Small budgets keep every input fast. */
    opts.max_memory = 8u * 1024 * 1024;
    opts.max_instructions = 200000;
    rift_config cfg;
    rift_error err = {0};
    int rc = rift_config_load_string(&cfg, (const char *)data, size, "fuzz.lua",
                                     true, &opts, &err);
    if (rc != 0 && err.text[0] == '\0') {
        __builtin_trap();
    }
    rift_config_free(&cfg);
    return 0;
}
