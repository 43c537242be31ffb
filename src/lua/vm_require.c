/*
 * vm_require.c — the files of a Lua plugin (lua layer): reading a source
 * file confined to the plugin's folder, and `require`, confined to the
 * plugin's lua/ folder. Split from vm.c, which builds and runs the state.
 */
#include "lua/host_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Files ---- */

int rift_lua_read_file(const rift_mem *mem, const char *path, const char *root,
                       char **pbuf, size_t *plen) {
    if (root != NULL) {
        /* Resolve symbolic links first: a link inside the folder must not
         * lead out of it. */
        char *real = realpath(path, NULL);
        if (real == NULL) {
            return -errno;
        }
        size_t rl = strlen(root);
        bool inside = strncmp(real, root, rl) == 0 && real[rl] == '/';
        free(real);
        if (!inside) {
            return RIFT_ERR_PERMISSION;
        }
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        return -errno;
    }
    int rc = 0;
    char *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EISDIR;
        goto done;
    }
    if (st.st_size > RIFT_LUA_MAX_SOURCE) {
        rc = RIFT_ERR_LIMIT;
        goto done;
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    buf = rift_malloc(mem, cap);
    if (buf == NULL) {
        rc = RIFT_ERR_NOMEM;
        goto done;
    }
    for (;;) {
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            rc = -errno;
            goto done;
        }
        if (r == 0) {
            break;
        }
        len += (size_t)r;
        if (len == cap) {
            /* The file grew while we read it. */
            rc = RIFT_ERR_LIMIT;
            goto done;
        }
    }
    *pbuf = buf;
    *plen = len;
    buf = NULL;
done:
    rift_free(mem, buf);
    close(fd);
    return rc;
}

/* Describes a rift_lua_read_file failure. */
static const char *read_error(int rc) {
    switch (rc) {
    case RIFT_ERR_LIMIT:
        return "file exceeds 1 MiB";
    case RIFT_ERR_PERMISSION:
        return "file lies outside the plugin folder";
    case RIFT_ERR_NOMEM:
        return "out of memory";
    default:
        return strerror(-rc);
    }
}

/* ---- require, confined to <plugin>/lua/ ---- */

/* Module names: dot-separated tokens of letters, digits, '_' or '-'. */
static bool module_name_valid(const char *s, size_t len) {
    if (len == 0 || len > 128) {
        return false;
    }
    size_t tok = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '.') {
            if (tok == 0) {
                return false;
            }
            tok = 0;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-')) {
            return false;
        }
        tok++;
    }
    return tok > 0;
}

/* The address of this byte marks a module being loaded (cycle guard). */
static const char loading_mark = 0;

/* Reads module |name| (valid) into |buf|: <dir>/lua/a/b.lua, then
 * <dir>/lua/a/b/init.lua. Returns 0 with the file's |path|, or a negative
 * errno. */
static int module_read(rift_lua_vm *vm, const char *name, size_t len,
                       char *path, size_t path_size, char **buf, size_t *blen) {
    const rift_lua_conf *p = vm->conf;
    char rel[160];
    memcpy(rel, name, len);
    rel[len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if (rel[i] == '.') {
            rel[i] = '/';
        }
    }
    int rc = -ENOENT;
    for (int form = 0; form < 2 && rc == -ENOENT; form++) {
        int w = snprintf(path, path_size, "%s/lua/%s%s", p->dir, rel,
                         form == 0 ? ".lua" : "/init.lua");
        if (w < 0 || (size_t)w >= path_size) {
            return -ENAMETOOLONG;
        }
        rc = rift_lua_read_file(vm->mem, path, p->dir_real, buf, blen);
    }
    return rc;
}

/* Compiles the module read with result |rc| from |path| (|buf| is freed),
 * naming it |chunk|; returns LUA_OK with the function pushed, or another
 * status with the error message pushed.
 *
 * Lua's messages and tracebacks name the chunk, and they travel (the
 * plugin status, rift.events.plugin, a reload's answer): name the file
 * relative to the plugin, "<plugin>/lua/a/b.lua", never by its path. */
static int module_compile(lua_State *L, rift_lua_vm *vm, const char *name,
                          int rc, const char *path, char *buf, size_t blen,
                          char *chunk, size_t chunk_size) {
    const rift_lua_conf *p = vm->conf;
    const char *pname = vm->plugin->name;
    if (rc != 0) {
        rift_log(RIFT_LOG_DEBUG, "%s: require '%s': %s/lua: %s", pname, name,
                 p->dir, rc == -ENOENT ? "no such file" : read_error(rc));
        lua_pushfstring(L, "module '%s' not found in %s/lua: %s", name, pname,
                        rc == -ENOENT ? "no such file" : read_error(rc));
        return LUA_ERRFILE;
    }
    snprintf(chunk, chunk_size, "@%s%s", pname, path + strlen(p->dir));
    rc = luaL_loadbufferx(L, buf, blen, chunk, "t");
    rift_free(vm->mem, buf);
    return rc;
}

int rift_lua_require(lua_State *L) {
    size_t len;
    const char *name = luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    lua_pushvalue(L, 1);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) {
        if (lua_touserdata(L, -1) == &loading_mark) {
            return luaL_error(L, "module '%s': require loop", name);
        }
        return 1;
    }
    lua_pop(L, 1);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    if (!module_name_valid(name, len)) {
        return luaL_error(L,
                          "module '%s' not found: module names are "
                          "dot-separated letters, digits, '_' or '-'",
                          name);
    }
    if (vm->conf->dir_real == NULL) {
        return luaL_error(L, "module '%s' not found: no plugin folder", name);
    }
    /* Mark first: this may raise, and nothing is held yet. */
    lua_pushvalue(L, 1);
    lua_pushlightuserdata(L, (void *)&loading_mark);
    lua_rawset(L, lua_upvalueindex(1));

    char path[PATH_MAX], chunk[PATH_MAX + 2];
    char *buf = NULL;
    size_t blen = 0;
    int rc = module_read(vm, name, len, path, sizeof(path), &buf, &blen);
    if (module_compile(L, vm, name, rc, path, buf, blen, chunk,
                       sizeof(chunk)) != LUA_OK) {
        goto fail_lua;
    }
    lua_pushvalue(L, 1);
    lua_pushstring(L, chunk + 1);
    if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
        goto fail_lua;
    }
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, 1);
    lua_pushvalue(L, -2);
    lua_rawset(L, lua_upvalueindex(1));
    return 1;

fail_lua:
    /* Forget the mark so a later require may try again, then rethrow. */
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    lua_rawset(L, lua_upvalueindex(1));
    return lua_error(L);
}
