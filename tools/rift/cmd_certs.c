/*
 * cmd_certs.c — `rift certs init`: a development CA and a server
 * certificate it signed, with GnuTLS through the quic layer's generator
 * (the files riftd's development default makes at its first start), for
 * extra names on demand; `rift certs server`: a new server certificate
 * from the CA already there, so that clients keep trusting it (tools
 * layer).
 */
#include "args.h"
#include "cmd.h"
#include "io.h"

#include "quic/certgen.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_NAMES 64

static void usage(FILE *out) {
    fprintf(out,
            "usage: rift certs init [--dir DIR] [--name NAME ...] [--days N] "
            "[--force]\n"
            "       rift certs server [--dir DIR] [--name NAME ...] [--days "
            "N]\n"
            "Writes a development CA (ca.pem, ca.key) and a server "
            "certificate it signed\n(server.pem, server.key) into DIR, by "
            "default $RIFT_HOME/tls or rift-data/tls\n(riftd's development "
            "default). The server certificate is valid for localhost,\n"
            "127.0.0.1 and ::1 plus every --name (a DNS name or an IP "
            "address). Keys are\nECDSA P-256 with mode 0600; --days sets the "
            "validity (default 825).\nExisting files are kept unless --force "
            "is given. Clients trust DIR/ca.pem.\n"
            "server writes a new server.pem and server.key signed by the CA "
            "in DIR (ca.pem,\nca.key, left as they are), replacing the old "
            "ones: add names without\ndistributing a new CA. Restart riftd "
            "to use it.\n");
}

/* Creates the parent of the default TLS directory (riftd's data
 * directory) privately when missing. */
static int ensure_parent(const char *dir) {
    char parent[4096];
    snprintf(parent, sizeof(parent), "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash == NULL || slash == parent) {
        return 0;
    }
    *slash = '\0';
    if (mkdir(parent, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "rift certs: cannot create %s: %s\n", parent,
                strerror(errno));
        return 1;
    }
    return 0;
}

/* The --name values, each checked as it comes. */
typedef struct cert_names {
    const char *v[MAX_NAMES];
    size_t n;
} cert_names;

static int take_name(void *ud, const char *name) {
    cert_names *names = ud;
    if (names->n == MAX_NAMES) {
        fprintf(stderr, "rift certs: at most %d names\n", MAX_NAMES);
        return 2;
    }
    if (!rift_certgen_name_valid(name)) {
        fprintf(stderr,
                "rift certs: --name '%s' is neither a DNS name "
                "(labels of letters, digits and hyphens, such "
                "as rift.example) nor an IP address\n",
                name);
        return 2;
    }
    names->v[names->n++] = name;
    return -1;
}

static int issue(int argc, char **argv, bool server_only) {
    const char *dir = NULL, *days_s = NULL;
    cert_names names = {.n = 0};
    bool force = false;
    const rift_cli_opt opts[] = {
        {.name = "--dir", .value = &dir},
        {.name = "--days", .value = &days_s},
        {.name = "--name", .take = take_name},
        /* server keeps the CA: nothing to force */
        {.name = server_only ? NULL : "--force", .flag = &force},
        {.name = NULL},
    };
    rift_cli_args args = {
        .cmd = "certs", .usage = usage, .opts = opts, .ud = &names, .first = 2};
    int parsed = rift_cli_parse(&args, argc, argv);
    if (parsed >= 0) {
        return parsed;
    }
    rift_certgen_options o;
    rift_certgen_options_default(&o);
    uint64_t days = o.validity_days;
    if (days_s != NULL &&
        (!rift_cli_parse_u64("certs", "--days", days_s, &days) || days == 0 ||
         days > 36500)) {
        if (days == 0 || days > 36500) {
            fprintf(stderr, "rift certs: --days expects 1..36500\n");
        }
        return 2;
    }
    char def[4096];
    if (dir == NULL) {
        const char *home = getenv("RIFT_HOME");
        snprintf(def, sizeof(def), "%s/tls",
                 home != NULL && *home != '\0' ? home : "rift-data");
        dir = def;
        if (ensure_parent(dir) != 0) {
            return 1;
        }
    }
    o.names = names.v;
    o.n_names = names.n;
    o.validity_days = (unsigned)days;
    o.overwrite = force || server_only;
    rift_error err = {0};
    int rc = server_only ? rift_certgen_server(dir, &o, &err)
                         : rift_certgen_dev(dir, &o, &err);
    if (rc != 0) {
        fprintf(stderr, "rift certs: %s%s\n", err.text,
                err.code == RIFT_ERR_EXISTS
                    ? " (--force replaces it, and the CA; rift certs server "
                      "replaces only the server certificate)"
                    : "");
        return 1;
    }
    if (server_only) {
        printf("wrote %s/%s, %s/%s (server), signed by %s/%s\n", dir,
               RIFT_CERTGEN_SERVER_CERT, dir, RIFT_CERTGEN_SERVER_KEY, dir,
               RIFT_CERTGEN_CA_CERT);
    } else {
        printf("wrote %s/%s, %s/%s (CA) and %s/%s, %s/%s (server)\n", dir,
               RIFT_CERTGEN_CA_CERT, dir, RIFT_CERTGEN_CA_KEY, dir,
               RIFT_CERTGEN_SERVER_CERT, dir, RIFT_CERTGEN_SERVER_KEY);
    }
    printf("server names: localhost, 127.0.0.1, ::1");
    for (size_t i = 0; i < names.n; i++) {
        printf(", %s", names.v[i]);
    }
    printf("\nvalid for %u days; clients trust %s/%s\n", o.validity_days, dir,
           RIFT_CERTGEN_CA_CERT);
    return 0;
}

int rift_cmd_certs(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "init") == 0) {
        return issue(argc, argv, false);
    }
    if (argc >= 2 && strcmp(argv[1], "server") == 0) {
        return issue(argc, argv, true);
    }
    if (argc == 2 &&
        (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2) {
        fprintf(stderr, "rift certs: unknown subcommand '%s'\n", argv[1]);
    }
    usage(stderr);
    return 2;
}
