/*
 * phoenix-lsp sandbox helper: the mechanism half of the kernel sandbox.
 *
 * What to enforce (which Landlock rights, which seccomp filter, which rlimits) is computed in Python
 * (phoenix_lsp/sandbox/launch_options.py) and handed to this program on its command line; this program only
 * applies it, which keeps the security decisions in one reviewed, tested place and keeps this file small.
 *
 * Why a compiled helper: the server is a multi-threaded asyncio process, so it cannot restrict a forked
 * child itself (preexec_fn is unsafe with threads), and a Python launcher costs 30-48 ms per command.
 * This helper costs one extra exec (well under a millisecond).
 *
 * Process layout:
 *   server --exec--> helper (H: child subreaper, stays outside the sandbox)
 *                      `--fork--> command (C: setsid, limits, Landlock, seccomp, then exec bash -c ...)
 * With -O, H makes the mount namespace (the overlay) before the fork and holds it, so C's exit does not wait for its
 * teardown; H closes its pipes once it has told the end, before its own exit tears the namespace down.
 * H kills the whole tree of C (every descendant: setsid'd, double-forked, re-grouped) when C exits, when
 * it receives SIGTERM/SIGINT/SIGHUP, when its stdin (the "lifeline" pipe held by the server) reaches EOF
 * because the server went away, or when the tree grows beyond the process limit (-m).
 *
 * The process limit: with -g, H creates the pids cgroup <dir>/phoenix-<H's pid> with pids.max = the limit
 * and C joins it before anything else, so the kernel refuses the fork past the limit (for root too, whom
 * RLIMIT_NPROC does not bind) and H stops the tree 100 ms after pids.events counts the first refusal.
 * Without a cgroup, H counts the tree itself every 10 ms (a real-time watchdog when allowed), freezing the
 * command's process group while it counts.
 *
 * With -G/-u, H also makes a memory cgroup <dir>/phoenix-<H's pid> whose limit counts the whole tree's memory,
 * shared memory included (memfd, tmpfs pages), which RLIMIT_AS does not. If it cannot be made, C installs
 * the -F filter as well (refuses memfd_create). -Q bytes:dir is a disk quota: every 100 ms (less often when
 * the walk is slow) H adds up the blocks under dir and of its own stdout when that is a regular file (a
 * background job's log); past the quota it kills the tree. -t seconds is a wall-clock limit.
 *
 * Protocol (stderr of H, one line each, for the server):
 *   clock <ns>                    (with -w) the coarse clock's reading the command started after
 *   started <pid>                 the command was exec'd
 *   error <stage> <errno>         set-up failed before exec; nothing ran
 *   exit <code> | signal <num>    how the command ended
 *   killed <reason>               the tree was killed (terminate | lifeline | process-limit | time-limit |
 *                                 disk-quota)
 *   maxrss <kilobytes>            largest resident set among the reaped processes
 *   memlimit <count>              the memory cgroup's limit was reached <count> times
 *   note cgroup <errno>           no pids cgroup could be made for this command; the watchdog keeps the limit
 *   note memcg <errno>            no memory cgroup could be made; memfd_create is refused instead
 * stdout of H is the command's stdout and stderr (combined). With -B, H appends a completion line to it.
 *
 * Usage: helper [-C dir] [-r res:soft:hard]... [-n] [-k] [-l fs:net:scope [-p|-P access:path]...]
 *               [-f seccomp-hex] [-m max-processes [-g pids-cgroup-dir]] [-G memory-cgroup-dir -u bytes
 *               [-F fallback-seccomp-hex]] [-Q bytes:dir] [-t seconds] [-T keep-dir]... [-O dir -U upper -W work]
 *               [-w clock-ns] [-B] -- program args...
 * -p grants a rule (failure to open the path fails the command); -P is an optional read grant: skipped
 * when the path is gone, never followed through a symlink, and limited to file rights on a non-directory.
 * -T gives the command a private /tmp (its own mount namespace, an empty tmpfs) in which only the -T
 * directories are in sight, bound where they were; failing to make it fails the command (error private-tmp-*).
 * -O/-U/-W capture the command's changes to folder -O (REQ-BASH-028): an overlay mounted on -O itself, the real
 * folder below, -U and -W (the server's) above, in the same namespace step as the private /tmp; the command, its
 * children and the working directory see the merged folder, and Landlock's rules (with -O) are opened after the
 * mount so that they name the merged folder. Failing to mount fails the command (error overlay-*).
 * -w ns: the command is exec'd only once the coarse clock reads later than ns (the layer's conflict rule); the
 * reading is reported on the "clock" line.
 *
 * A spare (REQ-BASH-047, spare.py): helper -R fd [-m n [-g dir]] [-G dir -u bytes] [-Q bytes:dir] starts before its
 * command is known. H makes the cgroups and forks C, which joins them, starts its session, writes one byte ("R",
 * ready) on the socket fd and waits there for one request (read_request): the other options, "--", the command and
 * its environment, bounded and read whole before they are parsed. C then goes on as any C does; H watches and ends it
 * as any command. Until the request, a stop (SIGTERM) or the lifeline's end ends the spare, its child killed.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Defined here rather than taken from kernel headers so the helper builds on any libc/header vintage. */
#define P_PR_SET_NO_NEW_PRIVS 38
#define P_PR_SET_CHILD_SUBREAPER 36
#define P_PR_CAPBSET_DROP 24
#define P_PR_CAP_AMBIENT 47
#define P_PR_CAP_AMBIENT_CLEAR_ALL 4
#define P_PR_SET_SECCOMP 22
#define P_PR_SET_PDEATHSIG 1
#define P_SECCOMP_MODE_FILTER 2
#define P_SYS_landlock_create_ruleset 444
#define P_SYS_landlock_add_rule 445
#define P_SYS_landlock_restrict_self 446
#define P_LANDLOCK_RULE_PATH_BENEATH 1
#define P_CLOSE_RANGE_CLOEXEC (1U << 2)
#define P_SYS_close_range 436
#define P_CAP_VERSION_3 0x20080522
#define P_SCHED_RESET_ON_FORK 0x40000000

#define P_CLONE_NEWNS 0x00020000
#define P_CLONE_NEWUSER 0x10000000
#define MAX_KEEP 8

#define MAX_RLIMITS 16
#define MAX_RULES 8192
/* Landlock rights that a rule on a non-directory may carry (execute, write, read, truncate, ioctl_dev). */
#define P_FILE_RIGHTS ((1ULL << 0) | (1ULL << 1) | (1ULL << 2) | (1ULL << 14) | (1ULL << 15))
#define MAX_PROCS_SCAN 65536

struct p_sock_filter { uint16_t code; uint8_t jt; uint8_t jf; uint32_t k; };
struct p_sock_fprog { unsigned short len; struct p_sock_filter *filter; };
struct p_ruleset_attr { uint64_t fs; uint64_t net; uint64_t scoped; };
struct p_path_beneath { uint64_t allowed; int32_t parent_fd; } __attribute__((packed));
struct p_cap_header { uint32_t version; int pid; };
struct p_cap_data { uint32_t effective; uint32_t permitted; uint32_t inheritable; };

struct rlim_opt { int resource; rlim_t soft; rlim_t hard; };
struct rule_opt { uint64_t access; const char *path; int optional; };

static const char *opt_dir;
static struct rlim_opt opt_rlimits[MAX_RLIMITS];
static int n_rlimits;
static int opt_nnp, opt_dropcaps, opt_background;
static int opt_landlock;
static struct p_ruleset_attr opt_ruleset;
static struct rule_opt opt_rules[MAX_RULES];
static int n_rules;
static struct p_sock_filter *opt_filter, *opt_fallback_filter;
static unsigned short opt_filter_len, opt_fallback_filter_len;
static long opt_max_procs;
static const char *opt_cgroup_parent, *opt_memcg_parent, *opt_quota_dir;
static long long opt_memory, opt_quota;
static double opt_time_limit;
static const char *opt_keep[MAX_KEEP]; /* -T: a private /tmp that shows only these paths (bound in place) */
static int n_keep;
static const char *opt_overlay, *opt_upper, *opt_work; /* -O/-U/-W: the folder captured in an overlay */
static long long opt_tick_after = -1; /* -w: the command starts in a later tick of the coarse clock than this */
static int opt_request_fd = -1; /* -R fd: a spare; its command comes later, on this socket (read_request) */
static char cgroup_dir[4096]; /* empty when no pids cgroup is used */
static char memcg_dir[4096];  /* empty when no separate memory cgroup is used */
static int memcg_ok;          /* the tree's memory is counted by a cgroup (memcg_dir, or cgroup_dir on v2) */

/* The lines of the end (killed, memlimit, maxrss, exit) are held and written at once (status_flush): one write,
   so that the server's event loop wakes once for them, together with the helper's exit. */
static char held[1024];
static size_t held_len;
static int holding;

static void status_flush(void) {
    if (held_len > 0) {
        ssize_t ignored = write(2, held, held_len);
        (void)ignored;
    }
    held_len = 0;
    holding = 0;
}

static void status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void status(const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n <= 0) return;
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    if (holding && held_len + len <= sizeof held) {
        memcpy(held + held_len, buf, len);
        held_len += len;
        return;
    }
    ssize_t ignored = write(2, buf, len);
    (void)ignored;
}

static int err_fd = -1; /* C's set-up pipe to H; -1 in H itself (which makes a captured command's namespace) */

static void usage_fail(const char *what) {
    if (err_fd >= 0) { /* in C, reading a spare's request: H reports the failure */
        char buf[160];
        int n = snprintf(buf, sizeof buf, "usage %d %s", EINVAL, what);
        if (n > 0) {
            ssize_t ignored = write(err_fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
            (void)ignored;
        }
        _exit(127);
    }
    status("error usage %d %s\n", EINVAL, what);
    _exit(125);
}

static uint64_t parse_hex(const char *s, char **end) {
    errno = 0;
    unsigned long long v = strtoull(s, end, 16);
    if (errno) usage_fail("bad hex number");
    return (uint64_t)v;
}

static rlim_t parse_rlim(const char *s, char **end) {
    if (strncmp(s, "inf", 3) == 0) { *end = (char *)s + 3; return RLIM_INFINITY; }
    errno = 0;
    unsigned long long v = strtoull(s, end, 10);
    if (errno) usage_fail("bad rlimit");
    return (rlim_t)v;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static void parse_filter(const char *hex, struct p_sock_filter **out, unsigned short *out_len) {
    size_t n = strlen(hex);
    if (n == 0 || n % 16 != 0 || n / 16 > 4096) usage_fail("bad seccomp program length");
    size_t count = n / 16;
    unsigned char *bytes = malloc(n / 2);
    if (!bytes) usage_fail("out of memory");
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) usage_fail("bad seccomp program hex");
        bytes[i] = (unsigned char)(hi << 4 | lo);
    }
    /* Raw struct sock_filter bytes in native byte order, produced by seccomp.py for this machine. */
    *out = (struct p_sock_filter *)bytes;
    *out_len = (unsigned short)count;
}

/* Parses options argv[i..] into the opt_ globals, up to "--" (returns the index after it) or the end (returns argc).
   `allowed`: the option letters taken (NULL: all). */
static int parse_options(int argc, char **argv, int i, const char *allowed) {
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) { i++; break; }
        if (a[0] != '-' || a[1] == 0 || a[2] != 0) usage_fail("unknown option");
        char o = a[1];
        if (allowed && !strchr(allowed, o)) usage_fail("option not taken here");
        if (o == 'n') { opt_nnp = 1; continue; }
        if (o == 'k') { opt_dropcaps = 1; continue; }
        if (o == 'B') { opt_background = 1; continue; }
        if (i + 1 >= argc) usage_fail("option needs a value");
        const char *v = argv[++i];
        char *end;
        switch (o) {
        case 'C': opt_dir = v; break;
        case 'r': {
            if (n_rlimits >= MAX_RLIMITS) usage_fail("too many rlimits");
            struct rlim_opt *r = &opt_rlimits[n_rlimits++];
            r->resource = (int)strtol(v, &end, 10);
            if (*end != ':') usage_fail("bad rlimit");
            r->soft = parse_rlim(end + 1, &end);
            if (*end != ':') usage_fail("bad rlimit");
            r->hard = parse_rlim(end + 1, &end);
            break;
        }
        case 'l':
            opt_landlock = 1;
            opt_ruleset.fs = parse_hex(v, &end);
            if (*end != ':') usage_fail("bad ruleset");
            opt_ruleset.net = parse_hex(end + 1, &end);
            if (*end != ':') usage_fail("bad ruleset");
            opt_ruleset.scoped = parse_hex(end + 1, &end);
            break;
        case 'p':
        case 'P':
            if (n_rules >= MAX_RULES) usage_fail("too many rules");
            opt_rules[n_rules].access = parse_hex(v, &end);
            if (*end != ':') usage_fail("bad rule");
            opt_rules[n_rules].path = end + 1;
            opt_rules[n_rules].optional = o == 'P';
            n_rules++;
            break;
        case 'f': parse_filter(v, &opt_filter, &opt_filter_len); break;
        case 'F': parse_filter(v, &opt_fallback_filter, &opt_fallback_filter_len); break;
        case 'm': opt_max_procs = strtol(v, &end, 10); break;
        case 'g': opt_cgroup_parent = v; break;
        case 'G': opt_memcg_parent = v; break;
        case 'u': opt_memory = strtoll(v, &end, 10); break;
        case 'Q':
            opt_quota = strtoll(v, &end, 10);
            if (*end != ':' || !end[1]) usage_fail("bad quota");
            opt_quota_dir = end + 1;
            break;
        case 't': opt_time_limit = strtod(v, &end); break;
        case 'T':
            if (n_keep >= MAX_KEEP || v[0] != '/') usage_fail("bad private /tmp path");
            opt_keep[n_keep++] = v;
            break;
        case 'O': opt_overlay = v; break;
        case 'R':
            errno = 0;
            opt_request_fd = (int)strtol(v, &end, 10);
            if (errno || *end || opt_request_fd < 3) usage_fail("bad request descriptor");
            break;
        case 'U': opt_upper = v; break;
        case 'W': opt_work = v; break;
        case 'w':
            errno = 0;
            opt_tick_after = strtoll(v, &end, 10);
            if (errno || *end || opt_tick_after < 0) usage_fail("bad clock reading");
            break;
        default: usage_fail("unknown option");
        }
    }
    return i;
}

/* ---------------------------------------------------------------- the child: restrict, then exec -- */

static int ns_made; /* H made the mount namespace before the fork (-O): C is in it already */
static int ns_held = -1; /* H's hold on the command's mount namespace (the private /tmp), -1 when none */
static void remove_cgroup(void);

static void child_fail(const char *stage) {
    int e = errno;
    if (err_fd < 0) { /* in H, before the fork: nothing ran */
        status("error %s %d\n", stage, e);
        remove_cgroup();
        _exit(125);
    }
    char buf[96];
    int n = snprintf(buf, sizeof buf, "%s %d", stage, e);
    if (n > 0) {
        ssize_t ignored = write(err_fd, buf, (size_t)n);
        (void)ignored;
    }
    _exit(127);
}

static void cloexec_fds_from_3(void) {
    if (syscall(P_SYS_close_range, 3U, ~0U, P_CLOSE_RANGE_CLOEXEC) == 0) return;
    /* Kernels before 5.11: mark each open descriptor close-on-exec. */
    DIR *d = opendir("/proc/self/fd");
    if (!d) child_fail("close-fds");
    int dfd = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (fd > 2 && fd != dfd) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    closedir(d);
}

static void drop_capabilities(void) {
    /* Root in the sandbox must not keep CAP_SYS_ADMIN, CAP_NET_RAW, CAP_KILL...: empty the bounding set
       (so exec can grant nothing, even to uid 0), the ambient set, then the current sets. */
    struct p_cap_header hdr = {P_CAP_VERSION_3, 0};
    struct p_cap_data data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &hdr, data) != 0) child_fail("capget");
    int have_caps = data[0].permitted || data[1].permitted;
    for (int cap = 0; cap < 64; cap++) {
        if (prctl(P_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
            if (errno == EINVAL) break; /* past the last capability this kernel knows */
            if (errno == EPERM && !have_caps) break; /* unprivileged: nothing to drop */
            child_fail("capbset-drop");
        }
    }
    if (prctl(P_PR_CAP_AMBIENT, P_PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        child_fail("cap-ambient");
    if (have_caps) {
        memset(data, 0, sizeof data);
        if (syscall(SYS_capset, &hdr, data) != 0) child_fail("capset");
    }
}

/* The ruleset, built from paths as the server sees them (before /tmp is replaced): restricted later. */
static int build_landlock(void) {
    size_t attr_size = opt_ruleset.scoped ? 24 : (opt_ruleset.net ? 16 : 8);
    int rfd = (int)syscall(P_SYS_landlock_create_ruleset, &opt_ruleset, attr_size, 0);
    if (rfd < 0) child_fail("landlock-create-ruleset");
    for (int i = 0; i < n_rules; i++) {
        uint64_t access = opt_rules[i].access;
        int pfd;
        if (opt_rules[i].optional) {
            /* A read grant computed a moment ago: skip it if it vanished or turned into something that is
               neither a file nor a directory; never follow a symlink (it could lead into a denied path).
               Skipping only ever grants less. */
            pfd = open(opt_rules[i].path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
            if (pfd < 0) continue;
            struct stat st;
            if (fstat(pfd, &st) != 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) { close(pfd); continue; }
            if (!S_ISDIR(st.st_mode)) access &= P_FILE_RIGHTS;
        } else {
            pfd = open(opt_rules[i].path, O_PATH | O_CLOEXEC);
            if (pfd < 0) child_fail("landlock-open-rule-path");
        }
        struct p_path_beneath pb = {access, pfd};
        if (syscall(P_SYS_landlock_add_rule, rfd, P_LANDLOCK_RULE_PATH_BENEATH, &pb, 0) != 0) {
            if (!opt_rules[i].optional) child_fail("landlock-add-rule");
        }
        close(pfd);
    }
    return rfd;
}

static void write_proc_self(const char *name, const char *text) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/%s", name);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) child_fail("private-tmp-userns");
    if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) child_fail("private-tmp-userns");
    close(fd);
}

static void mkdirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(path, 0755) != 0 && errno != EEXIST) child_fail("private-tmp-mkdir");
        *p = '/';
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) child_fail("private-tmp-mkdir");
}

/* A private /tmp (-T): an empty tmpfs on /tmp, and in it only the kept paths (the scratch directory, the top
   folder of a working directory under /tmp), bound where they were. Other programs' files in /tmp, their
   FIFOs and sockets included, are out of sight. */
/* Appends `path` to the overlay mount data, escaping the characters the kernel's option parser splits on. */
static size_t overlay_data(char *out, size_t at, size_t size, const char *key, const char *path) {
    size_t klen = strlen(key);
    if (at + klen >= size) child_fail("overlay-data");
    memcpy(out + at, key, klen);
    at += klen;
    for (const char *p = path; *p; p++) {
        if (at + 3 >= size) child_fail("overlay-data");
        if (*p == ',' || *p == ':' || *p == '\\') out[at++] = '\\';
        out[at++] = *p;
    }
    out[at] = 0;
    return at;
}

/* One mount namespace for what the command sees differently (REQ-BASH-027, REQ-BASH-028): a mount namespace
   of its own (root), or a user namespace then a mount namespace (anyone else, mapping only its own uid and
   gid); then the overlay on the captured folder (-O), then a private /tmp (-T). One unshare, one propagation
   change, whatever is asked for. */
static void mount_namespace(void) {
    if (unshare(P_CLONE_NEWNS) != 0) {
        uid_t uid = geteuid();
        gid_t gid = getegid();
        if (unshare(P_CLONE_NEWUSER | P_CLONE_NEWNS) != 0) child_fail("private-tmp-unshare");
        char map[64];
        write_proc_self("setgroups", "deny");
        snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
        write_proc_self("uid_map", map);
        snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
        write_proc_self("gid_map", map);
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) child_fail("private-tmp-private");
    if (opt_overlay) {
        /* userxattr: the only way in a user namespace (and it turns redirect_dir and metacopy off, so the
           upper layer is plain files, whiteouts and opaque marks that the server can read). volatile: no
           sync of the upper file system at unmount (~2 ms per command here); a layer is never reused after
           a crash, and what is accepted is moved into the folder like any command's writes. */
        char data[3 * 4096 * 2 + 64];
        size_t at = overlay_data(data, 0, sizeof data, "lowerdir=", opt_overlay);
        at = overlay_data(data, at, sizeof data, ",upperdir=", opt_upper);
        at = overlay_data(data, at, sizeof data, ",workdir=", opt_work);
        overlay_data(data, at, sizeof data, ",userxattr,volatile", "");
        if (mount("overlay", opt_overlay, "overlay", 0, data) != 0) child_fail("overlay-mount");
    }
    if (n_keep > 0) {
        /* The kept directories, opened in the new namespace (a bind's source must be one of its mounts)
           before the tmpfs hides them. */
        int keep_fd[MAX_KEEP];
        for (int i = 0; i < n_keep; i++) {
            keep_fd[i] = open(opt_keep[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (keep_fd[i] < 0) child_fail("private-tmp-keep");
        }
        if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1m") != 0)
            child_fail("private-tmp-mount");
        for (int i = 0; i < n_keep; i++) {
            char path[4096], source[64];
            snprintf(path, sizeof path, "%s", opt_keep[i]);
            mkdirs(path);
            snprintf(source, sizeof source, "/proc/self/fd/%d", keep_fd[i]);
            if (mount(source, opt_keep[i], NULL, MS_BIND | MS_REC, NULL) != 0) child_fail("private-tmp-bind");
            close(keep_fd[i]);
        }
    }
    /* The working directory again, so that it is the one in sight (it was entered before the mounts). */
    if (opt_dir && chdir(opt_dir) != 0) child_fail("chdir");
}

static long long coarse_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* -w: wait until the coarse clock (the one file times are stamped from) reads later than the server's reading, then
   tell H that reading ("clock <ns>" on the set-up pipe). Every file the command changes from then on has a time at or
   above it; every file changed before the server's reading has one below it (REQ-BASH-031's conflict rule). Done
   last before exec, so that the wait (half a tick on average) overlaps the launcher's own start and set-up instead
   of adding to them. Bounded: a clock set back waits 50 ms at most, and the reading then is what H is told. */
static void wait_for_tick(void) {
    long long now = coarse_now_ns();
    for (int i = 0; i < 250 && now <= opt_tick_after; i++) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        now = coarse_now_ns();
    }
    char buf[48];
    int n = snprintf(buf, sizeof buf, "clock %lld\n", now);
    if (n <= 0 || write(err_fd, buf, (size_t)n) != n) child_fail("clock");
}

/* A spare's request (-R): "<args> <env> <bytes>\n" (each number of 10 digits), then <bytes> bytes holding <args>
   NUL-terminated options and command words (the options of REQUEST_OPTIONS, "--", the command) and <env>
   NUL-terminated environment entries.
   Read whole and bounded before anything in it is looked at; parsed by the same parse_options as a command line. */
#define REQUEST_MAX (4 << 20)
#define REQUEST_OPTIONS "nklpPfFrTC"
#define SPARE_OPTIONS "RmgGuQ"
static char **request_env;

static char **read_request(void) {
    /* The header has a fixed size (three numbers of 10 digits, spaces, a newline): one read, nothing of the body. */
    char head[34];
    for (size_t got = 0; got < 33;) {
        ssize_t r = read(opt_request_fd, head + got, 33 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { errno = r == 0 ? EPIPE : errno; child_fail("request"); }
        got += (size_t)r;
    }
    head[33] = 0;
    if (head[10] != ' ' || head[21] != ' ' || head[32] != '\n') usage_fail("bad request header");
    head[10] = head[21] = head[32] = 0;
    long num[3];
    for (int k = 0; k < 3; k++) {
        char *end;
        errno = 0;
        num[k] = strtol(head + 11 * k, &end, 10);
        if (errno || *end || !isdigit((unsigned char)head[11 * k])) usage_fail("bad request header");
    }
    long nargs = num[0], nenv = num[1], nbytes = num[2];
    if (nargs < 2 || nargs > 65536 || nenv > 65536 || nbytes < nargs + nenv || nbytes > REQUEST_MAX)
        usage_fail("bad request header");
    char *body = malloc((size_t)nbytes);
    char **words = calloc((size_t)(nargs + nenv + 2), sizeof *words);
    if (!body || !words) usage_fail("out of memory");
    for (size_t got = 0; got < (size_t)nbytes;) {
        ssize_t r = read(opt_request_fd, body + got, (size_t)nbytes - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { errno = r == 0 ? EPIPE : errno; child_fail("request"); }
        got += (size_t)r;
    }
    close(opt_request_fd);
    /* Exactly nargs + nenv strings, the last one ending the body. */
    long n = 0;
    for (char *p = body; p < body + nbytes; p += strlen(p) + 1) {
        if (n == nargs + nenv || !memchr(p, 0, (size_t)(body + nbytes - p))) usage_fail("bad request body");
        words[n + (n >= nargs)] = p; /* words: the args, NULL, the environment, NULL */
        n++;
    }
    if (n != nargs + nenv) usage_fail("bad request body");
    int i = parse_options((int)nargs, words, 0, REQUEST_OPTIONS);
    if (i >= nargs) usage_fail("no command");
    request_env = words + nargs + 1;
    return words + i;
}

static void run_child(pid_t helper_pid, char **argv) {
    /* Undo what H set up for itself: blocked signals and ignored SIGPIPE are inherited across exec. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);

    /* Join the command's cgroups before anything else: everything it starts is counted there. */
    const char *dirs[2] = {cgroup_dir, memcg_dir};
    for (int d = 0; d < 2; d++) {
        if (!dirs[d][0]) continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/cgroup.procs", dirs[d]);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) child_fail("cgroup-join");
        if (write(fd, "0", 1) != 1) child_fail("cgroup-join");
        close(fd);
    }

    /* New session: no controlling terminal (REQ-BASH-004), its own process group for the tree kill, and its own
       scheduler autogroup. The autogroup is the most of what a spawn costs on a loaded machine (a fresh group waits
       its turn: +3 to +4 ms here), and it is kept on purpose: a CPU-heavy command in the server's group starved the
       server (its wake-ups 3x later) and slowed the tree's kill (issue 36, specs/bash.md REQ-BASH-004).
       Joining the cgroups above costs an RCU grace period after a pause (cgroup v1, or v2 without favordynmods):
       the kernel's lock for moving a process between cgroups falls back to its fast mode when unused. */
    if (setsid() < 0) child_fail("setsid");
    if (prctl(P_PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) child_fail("pdeathsig");
    if (getppid() != helper_pid) _exit(127);
    /* A spare (-R) was made before its command was known: everything above is done, ahead of time, the rest comes
       with the command. */
    if (opt_request_fd >= 0) {
        /* Ready: one byte on the request socket tells the server so. It may have handed the command over and closed
           its end before: the request is read all the same, and the byte is lost without a SIGPIPE. */
        ssize_t told = send(opt_request_fd, "R", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)told;
        argv = read_request();
    }

    if (opt_dir && chdir(opt_dir) != 0) child_fail("chdir");

    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) child_fail("stdin");
    if (dup2(devnull, 0) < 0) child_fail("stdin");
    if (dup2(1, 2) < 0) child_fail("stderr");

    for (int i = 0; i < n_rlimits; i++) {
        struct rlimit rl = {opt_rlimits[i].soft, opt_rlimits[i].hard};
        if (setrlimit(opt_rlimits[i].resource, &rl) != 0) child_fail("setrlimit");
    }

    cloexec_fds_from_3();

    /* Landlock's rules are taken from the paths as the server sees them, then /tmp is made private (it
       needs the capabilities that are dropped next), then the rules are enforced. With an overlay (-O) the
       rules are opened after the mount: a rule opened before it would name the hidden folder beneath. */
    int rfd = opt_landlock && !opt_overlay ? build_landlock() : -1;
    if ((n_keep > 0 || opt_overlay) && !ns_made) mount_namespace();
    if (opt_landlock && opt_overlay) rfd = build_landlock();
    if (opt_nnp && prctl(P_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail("no-new-privs");
    if (opt_dropcaps) drop_capabilities();
    if (rfd >= 0) {
        if (syscall(P_SYS_landlock_restrict_self, rfd, 0) != 0) child_fail("landlock-restrict-self");
        close(rfd);
    }
    if (opt_filter) {
        struct p_sock_fprog prog = {opt_filter_len, opt_filter};
        if (prctl(P_PR_SET_SECCOMP, P_SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) child_fail("seccomp");
    }
    if (opt_fallback_filter && !memcg_ok) {
        struct p_sock_fprog prog = {opt_fallback_filter_len, opt_fallback_filter};
        if (prctl(P_PR_SET_SECCOMP, P_SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) child_fail("seccomp");
    }
    if (opt_tick_after >= 0) wait_for_tick();
    if (request_env) environ = request_env; /* a spare's command runs with its request's environment, never H's */
    execvp(argv[0], argv);
    child_fail("exec");
}

/* ------------------------------------------------------------ the helper: watch, then kill the tree -- */

static pid_t scan_pids[MAX_PROCS_SCAN];
static pid_t scan_ppids[MAX_PROCS_SCAN];

/* Every live descendant of this process. No CONFIG_PROC_CHILDREN is assumed: read each /proc/<pid>/stat
   once and follow parent links. Because H is a child subreaper, an orphan is re-parented to H, never to
   init, so "descendant of H" is exactly "started by this command". */
static int descendants(pid_t self, pid_t *out, int cap) {
    int n = 0;
    DIR *d = opendir("/proc");
    if (!d) return 0;
    struct dirent *e;
    char path[300], buf[512];
    while ((e = readdir(d)) != NULL && n < MAX_PROCS_SCAN) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t len = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (len <= 0) continue;
        buf[len] = 0;
        char *rp = strrchr(buf, ')'); /* the command name may contain spaces and parentheses */
        if (!rp) continue;
        char state;
        int ppid;
        if (sscanf(rp + 1, " %c %d", &state, &ppid) != 2) continue;
        scan_pids[n] = (pid_t)atoi(e->d_name);
        scan_ppids[n] = (pid_t)ppid;
        n++;
    }
    closedir(d);
    /* Breadth-first from self over the parent links. */
    int count = 0;
    int head = 0;
    if (cap <= 0) return 0;
    out[count++] = self;
    while (head < count) {
        pid_t parent = out[head++];
        for (int i = 0; i < n && count < cap; i++)
            if (scan_ppids[i] == parent && scan_pids[i] != self) out[count++] = scan_pids[i];
    }
    /* Drop self from the front. */
    memmove(out, out + 1, (size_t)(count - 1) * sizeof *out);
    return count - 1;
}

static pid_t tree[MAX_PROCS_SCAN];

/* Threads alive on the whole machine, from one read of /proc/loadavg: a cheap test run on every watchdog
   tick, so the full /proc walk only happens when the machine's task count actually jumped. */
static long machine_threads(void) {
    char buf[128];
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *slash = strchr(buf, '/');
    return slash ? strtol(slash + 1, NULL, 10) : -1;
}

static int reap_nohang(pid_t child, int *child_status, int *child_done) {
    int reaped = 0, st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
        reaped++;
        if (p == child && !*child_done) { *child_status = st; *child_done = 1; }
    }
    if (p < 0 && errno == ECHILD) return -1;
    return reaped;
}

/* Reads a small file of cgroup `dir` into buf (NUL-terminated); -1 on failure. */
static ssize_t read_dir_file(const char *dir, const char *name, char *buf, size_t size) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n < 0) return -1;
    buf[n] = 0;
    return n;
}

/* True once the kernel has refused a fork in the command's cgroup ("max N" in pids.events, N > 0). */
static int cgroup_limit_hit(void) {
    char buf[256];
    if (read_dir_file(cgroup_dir, "pids.events", buf, sizeof buf) < 0) return 0;
    char *m = strstr(buf, "max ");
    return m && strtol(m + 4, NULL, 10) > 0;
}

/* SIGKILL every process listed in the command's cgroups (no /proc walk needed). */
static void kill_cgroup_dir(const char *dir) {
    static char buf[65536];
    if (!dir[0]) return;
    for (int round = 0; round < 64; round++) {
        ssize_t n = read_dir_file(dir, "cgroup.procs", buf, sizeof buf);
        if (n <= 0) return;
        for (char *p = buf; *p;) {
            char *end;
            long pid = strtol(p, &end, 10);
            if (end == p) break;
            if (pid > 0) kill((pid_t)pid, SIGKILL);
            p = end;
            while (*p == '\n') p++;
        }
    }
}

static void kill_cgroup(void) {
    kill_cgroup_dir(cgroup_dir);
    kill_cgroup_dir(memcg_dir);
}

/* Writes `value` to <dir>/<name>; 0 on success, -1 (errno set) otherwise. */
static int write_dir_file(const char *dir, const char *name, const char *value) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t len = strlen(value);
    ssize_t w = write(fd, value, len);
    int e = errno;
    close(fd);
    errno = e;
    return w == (ssize_t)len ? 0 : -1;
}

static int file_exists_in(const char *dir, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static int make_cgroup(pid_t self) {
    snprintf(cgroup_dir, sizeof cgroup_dir, "%s/phoenix-%d", opt_cgroup_parent, (int)self);
    if (mkdir(cgroup_dir, 0700) != 0 && errno != EEXIST) return -1;
    char value[32];
    snprintf(value, sizeof value, "%ld", opt_max_procs);
    return write_dir_file(cgroup_dir, "pids.max", value);
}

/* The memory limit in `dir` (cgroup v1 or v2 file names); swap is limited too so shared memory cannot
   escape the count by being swapped out. */
static int set_memory_limit(const char *dir) {
    char value[32];
    snprintf(value, sizeof value, "%lld", opt_memory);
    if (file_exists_in(dir, "memory.limit_in_bytes")) {
        if (write_dir_file(dir, "memory.limit_in_bytes", value) != 0) return -1;
        if (file_exists_in(dir, "memory.memsw.limit_in_bytes") &&
            write_dir_file(dir, "memory.memsw.limit_in_bytes", value) != 0) return -1;
        return 0;
    }
    if (write_dir_file(dir, "memory.max", value) != 0) return -1;
    if (file_exists_in(dir, "memory.swap.max")) write_dir_file(dir, "memory.swap.max", "0");
    return 0;
}

static int make_memcg(pid_t self) {
    char path[4096];
    snprintf(path, sizeof path, "%s/phoenix-%d", opt_memcg_parent, (int)self);
    if (cgroup_dir[0] && strcmp(path, cgroup_dir) == 0) return set_memory_limit(cgroup_dir); /* cgroup v2 */
    snprintf(memcg_dir, sizeof memcg_dir, "%s", path);
    if (mkdir(memcg_dir, 0700) != 0 && errno != EEXIST) return -1;
    return set_memory_limit(memcg_dir);
}

/* How often the memory cgroup's limit was reached (v1 memory.failcnt, v2 "max" in memory.events). */
static long memory_limit_hits(void) {
    const char *dir = memcg_dir[0] ? memcg_dir : cgroup_dir;
    char buf[1024];
    if (!memcg_ok || !dir[0]) return 0;
    if (read_dir_file(dir, "memory.failcnt", buf, sizeof buf) > 0) {
        long hits = strtol(buf, NULL, 10);
        if (read_dir_file(dir, "memory.memsw.failcnt", buf, sizeof buf) > 0) hits += strtol(buf, NULL, 10);
        return hits;
    }
    if (read_dir_file(dir, "memory.events", buf, sizeof buf) > 0) {
        char *m = strstr(buf, "\nmax ");
        if (!m && strncmp(buf, "max ", 4) == 0) m = buf - 1;
        return m ? strtol(m + 5, NULL, 10) : 0;
    }
    return 0;
}

static void remove_dir_retrying(char *dir) {
    if (!dir[0]) return;
    /* The last task leaves the cgroup a moment after it is reaped: retry briefly. */
    for (int i = 0; i < 200 && rmdir(dir) != 0 && errno == EBUSY; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void remove_cgroup(void) {
    remove_dir_retrying(cgroup_dir);
    remove_dir_retrying(memcg_dir);
}

/* ------------------------------------------------------------------------------- the disk quota -- */

#define QUOTA_MAX_ENTRIES 1000000L

/* Bytes allocated under `root` (every entry, never following symlinks), walked without recursion and
   with one directory open at a time (a 100,000-level tree neither overflows a stack nor runs out of
   descriptors). Returns -1 when the tree has more than QUOTA_MAX_ENTRIES entries (counted as over). */
static long long tree_bytes(const char *root) {
    size_t cap = 64, n = 0;
    char **stack = malloc(cap * sizeof *stack);
    if (!stack) return 0;
    stack[n++] = strdup(root);
    long long total = 0;
    long entries = 0;
    while (n > 0) {
        char *dir = stack[--n];
        if (!dir) continue;
        DIR *d = opendir(dir);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
                struct stat st;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
                total += (long long)st.st_blocks * 512;
                if (++entries > QUOTA_MAX_ENTRIES) { total = -1; break; }
                if (S_ISDIR(st.st_mode)) {
                    size_t len = strlen(dir) + strlen(e->d_name) + 2;
                    char *child = malloc(len);
                    if (!child) continue;
                    snprintf(child, len, "%s/%s", dir, e->d_name);
                    if (n == cap) {
                        char **bigger = realloc(stack, 2 * cap * sizeof *stack);
                        if (!bigger) { free(child); continue; }
                        stack = bigger;
                        cap *= 2;
                    }
                    stack[n++] = child;
                }
            }
            closedir(d);
        }
        free(dir);
        if (total < 0) break;
    }
    while (n > 0) free(stack[--n]);
    free(stack);
    return total;
}

/* The scratch directory plus our stdout when it is a regular file (a background job's log). */
static long long disk_usage(void) {
    long long used = tree_bytes(opt_quota_dir);
    if (used < 0) return -1;
    struct stat st;
    if (fstat(1, &st) == 0 && S_ISREG(st.st_mode)) used += (long long)st.st_blocks * 512;
    return used;
}

static double monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void kill_tree(pid_t self, pid_t child, int *child_status, int *child_done) {
    if (!*child_done) kill(-child, SIGKILL); /* fast path: the command's own process group */
    if (cgroup_dir[0] || memcg_dir[0]) kill_cgroup();
    for (;;) {
        /* H is a subreaper: while any descendant lives, H has a child (live or zombie). So "no child
           left" (ECHILD) proves the whole tree is gone, and the /proc walk is only needed otherwise. */
        int r = reap_nohang(child, child_status, child_done);
        if (r < 0) return;
        int n = descendants(self, tree, MAX_PROCS_SCAN);
        for (int i = 0; i < n; i++) kill(tree[i], SIGKILL);
        if (n == 0 && r == 0) {
            /* Only processes we cannot see any more (exiting): wait for one of them. */
            int st;
            pid_t p = waitpid(-1, &st, __WALL);
            if (p < 0 && errno == ECHILD) return;
            if (p == child && !*child_done) { *child_status = st; *child_done = 1; }
        } else if (n > 0) {
            struct timespec ts = {0, 100000}; /* SIGKILL is asynchronous: give it 0.1 ms */
            nanosleep(&ts, NULL);
        }
    }
}

int main(int argc, char **argv) {
    /* Block the signals we handle through a signalfd first, so a SIGTERM that arrives before the command
       exists simply waits for us (no window where it would leave an orphan behind). */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* A spare (-R first) takes only the options of what it makes ahead of time; the rest comes with its command. */
    int spare = argc > 1 && strcmp(argv[1], "-R") == 0;
    int i = parse_options(argc, argv, 1, spare ? SPARE_OPTIONS : NULL);
    if (spare ? i < argc : i >= argc) usage_fail(spare ? "a spare takes its command from its request" : "no command");
    if (!spare && opt_request_fd >= 0) usage_fail("-R comes first");
    if ((opt_overlay || opt_upper || opt_work) &&
        !(opt_overlay && opt_upper && opt_work && opt_overlay[0] == '/' && opt_upper[0] == '/' && opt_work[0] == '/'))
        usage_fail("overlay needs -O, -U and -W, absolute paths");
    char **cmd = spare ? NULL : argv + i;

    pid_t self = getpid();
    /* A fork bomb run as root is not held back by RLIMIT_NPROC (the kernel exempts uid 0), and thousands
       of runnable bomb processes would starve a normal-priority watchdog. So the watchdog asks for a
       real-time slot when allowed (root); the command itself is reset to normal scheduling at fork. */
    if (opt_max_procs > 0) {
        struct sched_param sp = {.sched_priority = 1};
        sched_setscheduler(0, SCHED_RR | P_SCHED_RESET_ON_FORK, &sp); /* best effort */
    }
    if (opt_cgroup_parent && opt_max_procs > 0 && make_cgroup(self) != 0) {
        /* No cgroup this time (say, the parent hit its own limits): the watchdog keeps the limit. */
        int e = errno;
        remove_cgroup();
        cgroup_dir[0] = 0;
        status("note cgroup %d\n", e);
    }
    if (opt_memcg_parent && opt_memory > 0) {
        if (make_memcg(self) == 0) {
            memcg_ok = 1;
        } else {
            /* No memory cgroup this time: C refuses memfd_create instead (the -F filter). */
            int e = errno;
            remove_dir_retrying(memcg_dir);
            memcg_dir[0] = 0;
            status("note memcg %d\n", e);
        }
    }
    if (cgroup_dir[0] || memcg_dir[0]) atexit(remove_cgroup);
    if (prctl(P_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        status("error subreaper %d\n", errno);
        return 125;
    }
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        status("error signalfd %d\n", errno);
        return 125;
    }
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        status("error pipe %d\n", errno);
        return 125;
    }

    /* A captured command's namespace (the overlay) is made here, before the fork, so that H holds it too: when the
       command ends, its exit does not tear the overlay down (the last exit in a namespace holding an overlay took 3.7
       ms more at the median, 15 ms at p90, on the loaded 2-core machine; the unmount waits for RCU). H reports the end first and closes its output and
       status pipes; the teardown then comes with H's own exit, after the server has the result. H stays out of
       the sandbox (an Unrestricted command's overlay is all there is of it); it sees the merged folder, and the
       layer's upper directory, which the disk quota walks, lies outside it. */
    if (opt_overlay) {
        mount_namespace();
        ns_made = 1;
    }

    pid_t child = fork();
    if (child < 0) {
        status("error fork %d\n", errno);
        return 125;
    }
    if (child == 0) {
        close(pipefd[0]);
        err_fd = pipefd[1];
        run_child(self, cmd);
    }
    close(pipefd[1]);

    int child_status = 0, child_done = 0;
    const char *killed = NULL;
    /* The lifeline is our stdin when it is a pipe (the server keeps the write end); anything else
       (a terminal, /dev/null) would read as EOF at once, so it is then not watched. */
    struct stat st0;
    int lifeline_open = fstat(0, &st0) == 0 && (S_ISFIFO(st0.st_mode) || S_ISSOCK(st0.st_mode));
    if (spare) {
        /* A spare waits for its command for as long as the server keeps it: until then a stop (SIGTERM) or the
           server's end (the lifeline) ends it like a running command, its child killed before it ran anything. */
        close(opt_request_fd);
        while (!killed) {
            struct pollfd pfds[3] = {{pipefd[0], POLLIN, 0}, {sfd, POLLIN, 0}, {0, POLLIN, 0}};
            int pr = poll(pfds, lifeline_open ? 3 : 2, -1);
            if (pr < 0 && errno == EINTR) continue;
            if (pr < 0 || pfds[0].revents) break;
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP) killed = "terminate";
            }
            if (lifeline_open && pfds[2].revents) {
                char junk[256];
                ssize_t r = read(0, junk, sizeof junk);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) killed = "lifeline";
            }
        }
        if (killed) {
            close(pipefd[0]);
            goto end;
        }
    }
    /* Until exec closes it: the clock line of -w, then a failure's "<stage> <errno>" if there is one. */
    char ebuf[160];
    size_t elen = 0;
    for (;;) {
        ssize_t r = read(pipefd[0], ebuf + elen, sizeof ebuf - 1 - elen);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        elen += (size_t)r;
        if (elen == sizeof ebuf - 1) break;
    }
    close(pipefd[0]);
    ebuf[elen] = 0;
    char *failure = ebuf;
    if (strncmp(ebuf, "clock ", 6) == 0 && strchr(ebuf, '\n')) {
        char *nl = strchr(ebuf, '\n');
        *nl = 0;
        status("clock %s\n", ebuf + 6);
        failure = nl + 1;
    }
    if (*failure) {
        kill_tree(self, child, &child_status, &child_done);
        status("error %s\n", failure);
        return 125;
    }
    if (!ns_made) {
        /* A command with a private /tmp made its mount namespace (after its Landlock rules were opened; a spare's H
           does not know whether it did): H holds it from here, as it holds a captured command's, so that the
           command's exit does not wait for its teardown (the unmounts wait for an RCU grace period). Holding H's
           own namespace changes nothing. Best effort: a command that already ended tore it down itself. */
        char ns_path[64];
        snprintf(ns_path, sizeof ns_path, "/proc/%d/ns/mnt", (int)child);
        ns_held = open(ns_path, O_RDONLY | O_CLOEXEC);
    }
    status("started %d\n", (int)child);
    /* The output pipe stays open here until the end (H never writes to it but with -B): its end then comes with
       H's own, once the tree is gone, and the server wakes once for both. */

    long threads_baseline = opt_max_procs > 0 ? machine_threads() : -1;
    double limit_hit_at = -1;
    double started_at = monotonic_s();
    double quota_next = started_at + 0.1;
    while (!child_done && !killed) {
        struct pollfd pfds[2] = {{sfd, POLLIN, 0}, {0, POLLIN, 0}};
        int nfds = lifeline_open ? 2 : 1;
        /* The watchdog counts the tree every 10 ms; with a pids cgroup the kernel keeps the limit and a look
           at pids.events every 100 ms is enough (waking every 10 ms took CPU from the command). */
        int timeout = opt_max_procs > 0 ? (cgroup_dir[0] ? 100 : 10) : -1;
        double now_s = monotonic_s();
        if (opt_quota > 0) {
            int wait_ms = (int)((quota_next - now_s) * 1000) + 1;
            if (wait_ms < 1) wait_ms = 1;
            if (timeout < 0 || wait_ms < timeout) timeout = wait_ms;
        }
        if (opt_time_limit > 0) {
            int wait_ms = (int)((started_at + opt_time_limit - now_s) * 1000) + 1;
            if (wait_ms < 1) wait_ms = 1;
            if (timeout < 0 || wait_ms < timeout) timeout = wait_ms;
        }
        int pr = poll(pfds, (nfds_t)nfds, timeout);
        if (pr < 0 && errno != EINTR) break;
        if (pr > 0 && (pfds[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP)
                    killed = "terminate";
            }
            if (reap_nohang(child, &child_status, &child_done) < 0) break;
        }
        if (pr > 0 && lifeline_open && pfds[1].revents) {
            char junk[256];
            ssize_t r = read(0, junk, sizeof junk);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                lifeline_open = 0;
                killed = "lifeline";
            }
        }
        now_s = monotonic_s();
        if (!killed && !child_done && opt_time_limit > 0 && now_s - started_at >= opt_time_limit)
            killed = "time-limit";
        if (!killed && !child_done && opt_quota > 0 && now_s >= quota_next) {
            long long used = disk_usage();
            double took = monotonic_s() - now_s;
            if (used < 0 || used > opt_quota) killed = "disk-quota";
            /* A big tree is walked less often, so the walk never takes more than ~5% of a core. */
            quota_next = monotonic_s() + (took * 20 > 0.1 ? took * 20 : 0.1);
        }
        if (!killed && !child_done && cgroup_dir[0]) {
            /* The kernel refused a fork: the tree cannot grow, so give the command 100 ms to report the
               refusal in its own words (EAGAIN), then stop it. */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            double now_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
            if (limit_hit_at < 0 && cgroup_limit_hit()) limit_hit_at = now_s;
            if (limit_hit_at >= 0 && now_s - limit_hit_at >= 0.1) killed = "process-limit";
        } else if (!killed && !child_done && opt_max_procs > 0) {
            long now = machine_threads();
            if (now < 0 || threads_baseline < 0 || now > threads_baseline + opt_max_procs) {
                /* Freeze the command's process group first (one syscall), so a fork bomb cannot outrun
                   the /proc walk even when this watchdog gets no real-time slot; resume it if the count
                   was someone else's threads. */
                kill(-child, SIGSTOP);
                int n = descendants(self, tree, MAX_PROCS_SCAN);
                if (n > opt_max_procs) killed = "process-limit";
                else kill(-child, SIGCONT);
            }
        }
    }
end:
    kill_tree(self, child, &child_status, &child_done);
    holding = 1;
    long hits = memory_limit_hits();
    remove_cgroup();
    if (killed) status("killed %s\n", killed);
    if (hits > 0) status("memlimit %ld\n", hits);

    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0) status("maxrss %ld\n", ru.ru_maxrss);

    int code;
    char line[128];
    if (child_done && WIFEXITED(child_status)) {
        code = WEXITSTATUS(child_status);
        status("exit %d\n", code);
        snprintf(line, sizeof line, "exit code %d", code);
    } else if (child_done && WIFSIGNALED(child_status)) {
        code = 128 + WTERMSIG(child_status);
        status("signal %d\n", WTERMSIG(child_status));
        snprintf(line, sizeof line, "killed by signal %d (%s)", WTERMSIG(child_status),
                 strsignal(WTERMSIG(child_status)));
    } else {
        code = 137;
        snprintf(line, sizeof line, "killed");
    }
    status_flush();
    if (opt_background) {
        char out[256];
        int n = snprintf(out, sizeof out, "\n[phoenix-lsp: background command finished: %s%s%s]\n", line,
                         killed ? "; tree killed: " : "", killed ? killed : "");
        if (n > 0) {
            ssize_t ignored = write(1, out, (size_t)n);
            (void)ignored;
        }
    }
    /* The end is told: the server has it once these close. Closed here, not by exit, which closes them only after
       it has torn the mount namespace down (a captured command's overlay, held by H). */
    close(0);
    close(1);
    close(2);
    return code;
}
