/*
 * crash_vfs.c — the power-loss simulating rift_vfs (tests layer); the
 * model is described in crash_vfs.h.
 */
#include "crash_vfs.h"

#include "test_rng.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 64
#define MAX_FDS      256
#define FD_BASE      100
#define SECTOR       512

typedef enum op_kind {
    OP_WRITE,
    OP_TRUNCATE
} op_kind;

/* A change to a file's data since its last sync. */
typedef struct data_op {
    op_kind kind;
    uint64_t off; /* write offset, or the new length */
    size_t len;
    uint8_t *data;
} data_op;

typedef enum dir_op_kind {
    DOP_ADD,
    DOP_DEL,
    DOP_RENAME
} dir_op_kind;

/* A change to a directory's entries since its last fsync. */
typedef struct dir_op {
    dir_op_kind kind;
    char name[NAME_MAX_LEN];
    char to[NAME_MAX_LEN];
    int ino;
} dir_op;

typedef struct entry {
    char name[NAME_MAX_LEN];
    int ino;
} entry;

typedef struct entries {
    entry *v;
    size_t n;
    size_t cap;
} entries;

typedef struct inode {
    bool used;
    bool dir;
    /* Files: what a read sees, what survives for sure, what may. */
    uint8_t *data;
    size_t size;
    size_t cap;
    uint8_t *ddata;
    size_t dsize;
    data_op *ops;
    size_t nops;
    size_t opcap;
    /* Directories: the same for entries. */
    entries cur;
    entries dur;
    dir_op *dops;
    size_t ndops;
    size_t dopcap;
    int lock_fd; /* descriptor holding the flock, -1 */
    bool mark;
} inode;

struct crash_vfs {
    rift_vfs vfs;
    pthread_mutex_t mu;
    inode *inodes;
    size_t ninodes;
    int fds[MAX_FDS]; /* inode + 1, 0 = free */
    uint64_t mutations;
    uint64_t arm_at; /* absolute mutation number, 0 = none */
    bool off;
    uint64_t now_ms;
    rng tear_rng; /* for the write that meets the cut */
};

/* ---- Small helpers ---- */

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (q == NULL) {
        abort(); /* a test helper: out of memory ends the test */
    }
    return q;
}

static crash_vfs *of(void *ud) {
    return ud;
}

static int new_inode(crash_vfs *c, bool dir) {
    size_t i = 0;
    while (i < c->ninodes && c->inodes[i].used) {
        i++;
    }
    if (i == c->ninodes) {
        c->inodes = xrealloc(c->inodes, (c->ninodes + 1) * sizeof(inode));
        c->ninodes++;
    }
    inode *n = &c->inodes[i];
    memset(n, 0, sizeof(*n));
    n->used = true;
    n->dir = dir;
    n->lock_fd = -1;
    return (int)i;
}

static void free_inode(inode *n) {
    free(n->data);
    free(n->ddata);
    for (size_t i = 0; i < n->nops; i++) {
        free(n->ops[i].data);
    }
    free(n->ops);
    free(n->cur.v);
    free(n->dur.v);
    free(n->dops);
    memset(n, 0, sizeof(*n));
}

static entry *ent_find(entries *e, const char *name) {
    for (size_t i = 0; i < e->n; i++) {
        if (strcmp(e->v[i].name, name) == 0) {
            return &e->v[i];
        }
    }
    return NULL;
}

static void ent_del(entries *e, const char *name) {
    entry *x = ent_find(e, name);
    if (x != NULL) {
        *x = e->v[--e->n];
    }
}

static void ent_set(entries *e, const char *name, int ino) {
    entry *x = ent_find(e, name);
    if (x == NULL) {
        if (e->n == e->cap) {
            e->cap = e->cap ? e->cap * 2 : 8;
            e->v = xrealloc(e->v, e->cap * sizeof(entry));
        }
        x = &e->v[e->n++];
        snprintf(x->name, sizeof(x->name), "%s", name);
    }
    x->ino = ino;
}

static void ent_copy(entries *to, const entries *from) {
    if (to->cap < from->n) {
        to->cap = from->n;
        to->v = xrealloc(to->v, to->cap * sizeof(entry));
    }
    if (from->n > 0) {
        memcpy(to->v, from->v, from->n * sizeof(entry));
    }
    to->n = from->n;
}

static void dop_apply(entries *e, const dir_op *d) {
    switch (d->kind) {
    case DOP_ADD:
        ent_set(e, d->name, d->ino);
        break;
    case DOP_DEL:
        ent_del(e, d->name);
        break;
    case DOP_RENAME:
        ent_del(e, d->name);
        ent_set(e, d->to, d->ino);
        break;
    }
}

static void dop_push(inode *dir, dir_op_kind kind, const char *name,
                     const char *to, int ino) {
    if (dir->ndops == dir->dopcap) {
        dir->dopcap = dir->dopcap ? dir->dopcap * 2 : 8;
        dir->dops = xrealloc(dir->dops, dir->dopcap * sizeof(dir_op));
    }
    dir_op *d = &dir->dops[dir->ndops++];
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    snprintf(d->name, sizeof(d->name), "%s", name);
    if (to != NULL) {
        snprintf(d->to, sizeof(d->to), "%s", to);
    }
    d->ino = ino;
    dop_apply(&dir->cur, d);
}

static void ensure(uint8_t **buf, size_t *cap, size_t need) {
    if (need > *cap) {
        size_t n = *cap ? *cap : 4096;
        while (n < need) {
            n *= 2;
        }
        *buf = xrealloc(*buf, n);
        *cap = n;
    }
}

/* Writes |len| bytes at |off| of a data image, zero-filling a gap. */
static void image_write(uint8_t **buf, size_t *size, size_t *cap, uint64_t off,
                        const uint8_t *p, size_t len) {
    size_t end = (size_t)off + len;
    ensure(buf, cap, end);
    if (off > *size) {
        memset(*buf + *size, 0, (size_t)off - *size);
    }
    memcpy(*buf + off, p, len);
    if (end > *size) {
        *size = end;
    }
}

static void image_truncate(uint8_t **buf, size_t *size, size_t *cap,
                           uint64_t len) {
    ensure(buf, cap, (size_t)len);
    if (len > *size) {
        memset(*buf + *size, 0, (size_t)len - *size);
    }
    *size = (size_t)len;
}

static void op_push(inode *f, op_kind kind, uint64_t off, const void *p,
                    size_t len) {
    if (f->nops == f->opcap) {
        f->opcap = f->opcap ? f->opcap * 2 : 8;
        f->ops = xrealloc(f->ops, f->opcap * sizeof(data_op));
    }
    data_op *o = &f->ops[f->nops++];
    o->kind = kind;
    o->off = off;
    o->len = len;
    o->data = NULL;
    if (kind == OP_WRITE) {
        o->data = xrealloc(NULL, len);
        memcpy(o->data, p, len);
        image_write(&f->data, &f->size, &f->cap, off, p, len);
    } else {
        image_truncate(&f->data, &f->size, &f->cap, off);
    }
}

/* Makes a file's current data durable (fdatasync). */
static void file_sync(inode *f) {
    size_t dcap = f->dsize;
    ensure(&f->ddata, &dcap, f->size);
    if (f->size > 0) {
        memcpy(f->ddata, f->data, f->size);
    }
    f->dsize = f->size;
    for (size_t i = 0; i < f->nops; i++) {
        free(f->ops[i].data);
    }
    f->nops = 0;
}

static void dir_sync(inode *d) {
    ent_copy(&d->dur, &d->cur);
    d->ndops = 0;
}

/* ---- Paths ---- */

/* Splits |path| into the directory inode holding its last component and
 * that component ("" for the root). -ENOENT / -ENOTDIR / -ENAMETOOLONG. */
static int walk(crash_vfs *c, const char *path, int *dir, char *leaf) {
    int cur = 0;
    leaf[0] = '\0';
    const char *p = path;
    for (;;) {
        while (*p == '/') {
            p++;
        }
        const char *e = p;
        while (*e != '\0' && *e != '/') {
            e++;
        }
        size_t n = (size_t)(e - p);
        if (n == 0) {
            break;
        }
        if (n >= NAME_MAX_LEN) {
            return -ENAMETOOLONG;
        }
        const char *rest = e;
        while (*rest == '/') {
            rest++;
        }
        if (leaf[0] != '\0') {
            /* The previous component is a directory on the way. */
            entry *x = ent_find(&c->inodes[cur].cur, leaf);
            if (x == NULL) {
                return -ENOENT;
            }
            if (!c->inodes[x->ino].dir) {
                return -ENOTDIR;
            }
            cur = x->ino;
        }
        memcpy(leaf, p, n);
        leaf[n] = '\0';
        if (n == 1 && p[0] == '.') {
            leaf[0] = '\0';
        }
        p = rest;
    }
    *dir = cur;
    return 0;
}

/* The inode |path| names, or -errno. */
static int lookup(crash_vfs *c, const char *path) {
    int dir;
    char leaf[NAME_MAX_LEN];
    int rc = walk(c, path, &dir, leaf);
    if (rc != 0) {
        return rc;
    }
    if (leaf[0] == '\0') {
        return dir;
    }
    entry *x = ent_find(&c->inodes[dir].cur, leaf);
    return x ? x->ino : -ENOENT;
}

static int fd_inode(crash_vfs *c, int fd) {
    int i = fd - FD_BASE;
    if (i < 0 || i >= MAX_FDS || c->fds[i] == 0) {
        return -EBADF;
    }
    return c->fds[i] - 1;
}

static int fd_new(crash_vfs *c, int ino) {
    for (int i = 0; i < MAX_FDS; i++) {
        if (c->fds[i] == 0) {
            c->fds[i] = ino + 1;
            return FD_BASE + i;
        }
    }
    return -EMFILE;
}

/*
 * Counts a mutating call; true when it meets the armed cut or the power
 * is already off (the call then fails with EIO). Under mu.
 */
static bool cut_here(crash_vfs *c) {
    if (c->off) {
        return true;
    }
    c->mutations++;
    if (c->arm_at != 0 && c->mutations >= c->arm_at) {
        c->off = true;
        c->arm_at = 0;
        return true;
    }
    return false;
}

/* ---- The table ---- */

static int cv_open(void *ud, const char *path, int flags, unsigned mode) {
    (void)mode;
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    int rc;
    if (c->off) {
        rc = -EIO;
        goto out;
    }
    int dir;
    char leaf[NAME_MAX_LEN];
    if ((rc = walk(c, path, &dir, leaf)) != 0) {
        goto out;
    }
    int ino = dir;
    if (leaf[0] != '\0') {
        entry *x = ent_find(&c->inodes[dir].cur, leaf);
        ino = x ? x->ino : -1;
    }
    if (flags & O_DIRECTORY) {
        rc = ino < 0 ? -ENOENT : !c->inodes[ino].dir ? -ENOTDIR : 0;
    } else if (ino < 0 && !(flags & O_CREAT)) {
        rc = -ENOENT;
    } else if (ino >= 0 && (flags & O_CREAT) && (flags & O_EXCL)) {
        rc = -EEXIST;
    } else if (ino >= 0 && c->inodes[ino].dir) {
        rc = -EISDIR;
    } else if (ino < 0 || (flags & O_TRUNC)) {
        if (cut_here(c)) {
            rc = -EIO;
            goto out;
        }
        if (ino < 0) {
            ino = new_inode(c, false);
            dop_push(&c->inodes[dir], DOP_ADD, leaf, NULL, ino);
        } else if (c->inodes[ino].size > 0) {
            op_push(&c->inodes[ino], OP_TRUNCATE, 0, NULL, 0);
        }
    }
    if (rc == 0) {
        rc = fd_new(c, ino);
    }
out:
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int cv_close(void *ud, int fd) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    int ino = fd_inode(c, fd);
    if (ino >= 0) {
        if (c->inodes[ino].lock_fd == fd) {
            c->inodes[ino].lock_fd = -1;
        }
        c->fds[fd - FD_BASE] = 0;
    }
    pthread_mutex_unlock(&c->mu);
    return ino < 0 ? ino : 0;
}

static rift_ssize cv_pread(void *ud, int fd, void *buf, size_t len,
                           uint64_t off) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    rift_ssize rc;
    int ino = fd_inode(c, fd);
    if (c->off) {
        rc = -EIO;
    } else if (ino < 0) {
        rc = ino;
    } else if (c->inodes[ino].dir) {
        rc = -EISDIR;
    } else {
        inode *f = &c->inodes[ino];
        size_t n = off >= f->size ? 0 : f->size - (size_t)off;
        n = n < len ? n : len;
        if (n > 0) {
            memcpy(buf, f->data + off, n);
        }
        rc = (rift_ssize)n;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static rift_ssize cv_pwrite(void *ud, int fd, const void *buf, size_t len,
                            uint64_t off) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    rift_ssize rc;
    int ino = fd_inode(c, fd);
    if (ino < 0) {
        rc = c->off ? -EIO : ino;
    } else if (c->inodes[ino].dir) {
        rc = -EISDIR;
    } else if (c->off) {
        rc = -EIO;
    } else if (cut_here(c)) {
        /* The power failed during this write: its bytes may have reached
         * the page cache (and are then as volatile as any other). */
        if (below(&c->tear_rng, 2) == 0) {
            op_push(&c->inodes[ino], OP_WRITE, off, buf, len);
        }
        rc = -EIO;
    } else {
        op_push(&c->inodes[ino], OP_WRITE, off, buf, len);
        rc = (rift_ssize)len;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int cv_sync(void *ud, int fd) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    int rc = fd_inode(c, fd);
    if (rc >= 0) {
        int ino = rc;
        rc = 0;
        if (cut_here(c)) {
            rc = -EIO;
        } else if (c->inodes[ino].dir) {
            dir_sync(&c->inodes[ino]);
        } else {
            file_sync(&c->inodes[ino]);
        }
    } else if (c->off) {
        rc = -EIO;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int cv_ftruncate(void *ud, int fd, uint64_t len) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    int rc = fd_inode(c, fd);
    if (rc >= 0) {
        int ino = rc;
        rc = 0;
        if (c->inodes[ino].dir) {
            rc = -EISDIR;
        } else if (cut_here(c)) {
            rc = -EIO;
        } else {
            op_push(&c->inodes[ino], OP_TRUNCATE, len, NULL, 0);
        }
    } else if (c->off) {
        rc = -EIO;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int cv_fsize(void *ud, int fd, uint64_t *size) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    int rc = fd_inode(c, fd);
    if (c->off) {
        rc = -EIO;
    } else if (rc >= 0) {
        *size = c->inodes[rc].size;
        rc = 0;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int cv_rename(void *ud, const char *from, const char *to) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    int fdir, tdir, rc;
    char fl[NAME_MAX_LEN], tl[NAME_MAX_LEN];
    if (c->off) {
        rc = -EIO;
    } else if ((rc = walk(c, from, &fdir, fl)) != 0 ||
               (rc = walk(c, to, &tdir, tl)) != 0) {
        /* rc set */
    } else if (fl[0] == '\0' || tl[0] == '\0') {
        rc = -EBUSY;
    } else if (fdir != tdir) {
        rc = -EXDEV; /* the store renames within its directory only */
    } else {
        entry *x = ent_find(&c->inodes[fdir].cur, fl);
        entry *y = ent_find(&c->inodes[fdir].cur, tl);
        if (x == NULL) {
            rc = -ENOENT;
        } else if (y != NULL && c->inodes[y->ino].dir) {
            rc = -EISDIR;
        } else if (cut_here(c)) {
            rc = -EIO;
        } else {
            dop_push(&c->inodes[fdir], DOP_RENAME, fl, tl, x->ino);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int cv_unlink(void *ud, const char *path) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    int dir, rc;
    char leaf[NAME_MAX_LEN];
    if (c->off) {
        rc = -EIO;
    } else if ((rc = walk(c, path, &dir, leaf)) == 0) {
        entry *x = leaf[0] ? ent_find(&c->inodes[dir].cur, leaf) : NULL;
        if (x == NULL) {
            rc = -ENOENT;
        } else if (c->inodes[x->ino].dir) {
            rc = -EISDIR;
        } else if (cut_here(c)) {
            rc = -EIO;
        } else {
            dop_push(&c->inodes[dir], DOP_DEL, leaf, NULL, x->ino);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int cv_mkdir(void *ud, const char *path, unsigned mode) {
    (void)mode;
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    int dir, rc;
    char leaf[NAME_MAX_LEN];
    if (c->off) {
        rc = -EIO;
    } else if ((rc = walk(c, path, &dir, leaf)) == 0) {
        if (leaf[0] == '\0' || ent_find(&c->inodes[dir].cur, leaf) != NULL) {
            rc = -EEXIST;
        } else if (cut_here(c)) {
            rc = -EIO;
        } else {
            int ino = new_inode(c, true);
            dop_push(&c->inodes[dir], DOP_ADD, leaf, NULL, ino);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int cv_lock(void *ud, int fd) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    int rc = fd_inode(c, fd);
    if (c->off) {
        rc = -EIO;
    } else if (rc >= 0) {
        inode *n = &c->inodes[rc];
        rc = 0;
        if (n->lock_fd >= 0 && n->lock_fd != fd) {
            rc = -EWOULDBLOCK;
        } else {
            n->lock_fd = fd;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int cv_list(void *ud, const char *dir,
                   int (*fn)(const char *name, void *arg), void *arg) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    int ino = c->off ? -EIO : lookup(c, dir);
    entries copy = {0};
    if (ino >= 0 && !c->inodes[ino].dir) {
        ino = -ENOTDIR;
    }
    if (ino >= 0) {
        ent_copy(&copy, &c->inodes[ino].cur);
    }
    pthread_mutex_unlock(&c->mu);
    int rc = ino < 0 ? ino : 0;
    for (size_t i = 0; rc == 0 && i < copy.n; i++) {
        rc = fn(copy.v[i].name, arg);
    }
    free(copy.v);
    return rc;
}

static uint64_t cv_wall_ms(void *ud) {
    crash_vfs *c = of(ud);
    pthread_mutex_lock(&c->mu);
    uint64_t v = c->now_ms;
    pthread_mutex_unlock(&c->mu);
    return v;
}

/* ---- The cut ---- */

/* How many of |n| changes survive in order: often all or none, else any
 * count (the interesting cuts are in between, but the ends matter). */
static size_t prefix_len(rng *r, size_t n) {
    uint32_t k = below(r, 4);
    if (n == 0 || k == 0) {
        return n;
    }
    if (k == 1) {
        return 0;
    }
    return below(r, (uint32_t)n + 1);
}

/* Applies the torn write |o| to the image: the bytes before a tear point
 * (at a sector boundary or mid-sector), then, when |fill|, zeros or
 * garbage for the rest. */
static void apply_torn(rng *r, const data_op *o, bool fill, uint8_t **buf,
                       size_t *size, size_t *cap, crash_stats *st) {
    size_t keep;
    uint64_t first_boundary = (o->off / SECTOR + 1) * SECTOR;
    if (o->len < 2) {
        keep = 0;
    } else if (below(r, 2) == 0 && first_boundary < o->off + o->len) {
        uint64_t nb = (o->off + o->len - 1 - first_boundary) / SECTOR + 1;
        keep =
            (size_t)(first_boundary + below(r, (uint32_t)nb) * SECTOR - o->off);
    } else {
        keep = 1 + below(r, (uint32_t)o->len - 1);
    }
    if (keep > 0) {
        image_write(buf, size, cap, o->off, o->data, keep);
    }
    if (fill) {
        uint8_t *junk = xrealloc(NULL, o->len - keep);
        bool zeros = below(r, 2) == 0;
        for (size_t i = 0; i < o->len - keep; i++) {
            junk[i] = zeros ? 0 : (uint8_t)rnd(r);
        }
        image_write(buf, size, cap, o->off + keep, junk, o->len - keep);
        free(junk);
        st->torn_filled++;
    }
    st->torn++;
}

/* Decides which volatile changes of file |f| survive and makes the
 * result its durable and current data. Returns whether any was lost. */
static bool settle_file(rng *r, inode *f, const crash_policy *p,
                        crash_stats *st) {
    uint8_t *img = NULL;
    size_t size = 0, cap = 0;
    ensure(&img, &cap, f->dsize);
    if (f->dsize > 0) {
        memcpy(img, f->ddata, f->dsize);
    }
    size = f->dsize;
    size_t upto = p->subset ? f->nops : prefix_len(r, f->nops);
    bool lost = false;
    st->volatile_writes += f->nops;
    for (size_t i = 0; i < f->nops; i++) {
        const data_op *o = &f->ops[i];
        /* 0 keep, 1 drop, 2 tear. */
        int fate;
        if (p->subset) {
            uint32_t k = below(r, 4);
            fate = k < 2 ? 0 : k == 2 ? 1 : 2;
        } else {
            fate = i < upto ? 0 : i == upto && below(r, 2) == 0 ? 2 : 1;
        }
        if (fate == 2 && o->kind != OP_WRITE) {
            fate = 1;
        }
        if (fate == 0) {
            st->kept++;
            if (o->kind == OP_WRITE) {
                image_write(&img, &size, &cap, o->off, o->data, o->len);
            } else {
                image_truncate(&img, &size, &cap, o->off);
            }
        } else if (fate == 1) {
            st->dropped++;
            lost = true;
        } else {
            apply_torn(r, o, p->fill_torn, &img, &size, &cap, st);
            lost = true;
        }
    }
    free(f->data);
    f->data = img;
    f->size = size;
    f->cap = cap;
    file_sync(f); /* frees the changes too */
    return lost;
}

static void mark_reachable(crash_vfs *c, int ino) {
    inode *n = &c->inodes[ino];
    if (n->mark) {
        return;
    }
    n->mark = true;
    if (n->dir) {
        for (size_t i = 0; i < n->cur.n; i++) {
            mark_reachable(c, n->cur.v[i].ino);
        }
    }
}

void crash_vfs_restart(crash_vfs *c, uint64_t seed, const crash_policy *policy,
                       crash_stats *stats) {
    pthread_mutex_lock(&c->mu);
    c->off = true;
    rng r = {seed ? seed : 1};
    bool lost = false;
    /* Directory entries first: a prefix of each directory's changes. */
    for (size_t i = 0; i < c->ninodes; i++) {
        inode *d = &c->inodes[i];
        if (!d->used || !d->dir) {
            continue;
        }
        size_t k = prefix_len(&r, d->ndops);
        stats->dir_ops += d->ndops;
        stats->dir_ops_lost += d->ndops - k;
        lost |= k < d->ndops;
        ent_copy(&d->cur, &d->dur);
        for (size_t j = 0; j < k; j++) {
            dop_apply(&d->cur, &d->dops[j]);
        }
        dir_sync(d);
    }
    for (size_t i = 0; i < c->ninodes; i++) {
        inode *f = &c->inodes[i];
        if (f->used && !f->dir && f->nops > 0) {
            lost |= settle_file(&r, f, policy, stats);
        }
    }
    /* What no directory names is gone for good. */
    for (size_t i = 0; i < c->ninodes; i++) {
        c->inodes[i].mark = false;
    }
    mark_reachable(c, 0);
    for (size_t i = 0; i < c->ninodes; i++) {
        if (c->inodes[i].used && !c->inodes[i].mark) {
            free_inode(&c->inodes[i]);
        }
        c->inodes[i].lock_fd = -1;
    }
    memset(c->fds, 0, sizeof(c->fds));
    stats->cuts++;
    stats->cuts_losing_data += lost;
    c->arm_at = 0;
    c->tear_rng.s = r.s;
    c->off = false;
    pthread_mutex_unlock(&c->mu);
}

/* ---- Set-up ---- */

crash_vfs *crash_vfs_new(void) {
    crash_vfs *c = xrealloc(NULL, sizeof(*c));
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    new_inode(c, true); /* the root, durable from the start */
    c->now_ms = 1700000000000ull;
    c->tear_rng.s = 0x9E3779B97F4A7C15ull;
    rift_vfs *v = &c->vfs;
    v->user_data = c;
    v->open = cv_open;
    v->close = cv_close;
    v->pread = cv_pread;
    v->pwrite = cv_pwrite;
    v->fdatasync = cv_sync;
    v->fsync = cv_sync;
    v->ftruncate = cv_ftruncate;
    v->fsize = cv_fsize;
    v->rename = cv_rename;
    v->unlink = cv_unlink;
    v->mkdir = cv_mkdir;
    v->lock = cv_lock;
    v->list = cv_list;
    v->wall_ms = cv_wall_ms;
    return c;
}

void crash_vfs_free(crash_vfs *c) {
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->ninodes; i++) {
        if (c->inodes[i].used) {
            free_inode(&c->inodes[i]);
        }
    }
    free(c->inodes);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const rift_vfs *crash_vfs_table(crash_vfs *c) {
    return &c->vfs;
}

void crash_vfs_arm(crash_vfs *c, uint64_t n) {
    pthread_mutex_lock(&c->mu);
    c->arm_at = n ? c->mutations + n : 0;
    pthread_mutex_unlock(&c->mu);
}

void crash_vfs_power_off(crash_vfs *c) {
    pthread_mutex_lock(&c->mu);
    c->off = true;
    pthread_mutex_unlock(&c->mu);
}

bool crash_vfs_is_off(crash_vfs *c) {
    pthread_mutex_lock(&c->mu);
    bool v = c->off;
    pthread_mutex_unlock(&c->mu);
    return v;
}

uint64_t crash_vfs_mutations(crash_vfs *c) {
    pthread_mutex_lock(&c->mu);
    uint64_t v = c->mutations;
    pthread_mutex_unlock(&c->mu);
    return v;
}

void crash_vfs_set_now(crash_vfs *c, uint64_t ms) {
    pthread_mutex_lock(&c->mu);
    c->now_ms = ms;
    pthread_mutex_unlock(&c->mu);
}
