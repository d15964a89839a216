/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd hold [OPTIONS] [nvmeX...] -- COMMAND [ARG...]`: run COMMAND with the
 * drives held to a wake-up latency (doc/holds.md). One HoldLatency call per
 * controller named (one for "" when none is), each answered once the table is
 * written and verified; COMMAND starts only when every one has answered, and
 * its exit status is ours. The holds live as long as our bus connection: the
 * daemon follows it, so they end however this process ends; on COMMAND's exit
 * they are also released explicitly. When the daemon restarts while COMMAND
 * runs, the holds are taken again as soon as its name is back on the bus.
 *
 * The client is an sd-event loop of its own: the bus, COMMAND as a child
 * source, and SIGINT, SIGTERM and SIGHUP, which are passed on to COMMAND. The
 * daemon is the authority on controller names and latencies: they are passed
 * on unchecked, and its errors are shown as it words them. The exit statuses
 * follow env(1) and timeout(1), so a caller can tell our failure from
 * COMMAND's: 125 the hold (or our command line) failed, 126 COMMAND could not
 * be run, 127 it was not found; otherwise COMMAND's own status, or its death
 * by a signal passed on as the same death.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-api.h"
#include "cli.h"
#include "log.h"
#include "util.h"
#include "verbs.h"

/* The exit statuses env(1) and timeout(1) use (GNU coreutils; POSIX's `command` says 126 and 127 too). */
#define HOLD_EXIT_FAILED     125     /* the hold, or our own command line, failed: COMMAND did not run */
#define HOLD_EXIT_CANNOT_RUN 126     /* COMMAND was found but could not be run */
#define HOLD_EXIT_NOT_FOUND  127     /* COMMAND was not found */
/* After a restart the daemon owns its name before it has identified the controllers, and refuses a hold
 * on one it does not know yet: the hold is asked for again this often, for as long as the daemon gives a
 * controller to answer by default ([daemon] unresponsive_after_sec = 10 s). */
#define HOLD_RETAKE_INTERVAL_USEC 250000u
#define HOLD_RETAKE_TRIES         40u
/* A shell reports a death by signal N as 128 + N; ours when re-raising the signal did not end us. */
#define HOLD_EXIT_SIGNAL_BASE 128

typedef struct HoldArgs {
        uint64_t max_latency_usec;
        const char *reason;
        const char *app_id;
        char **ctrls;                /* the names given (pointers into argv); none: one hold on "" */
        size_t n_ctrls;
        char **command;              /* argv after "--", NULL-terminated */
} HoldArgs;

typedef struct HoldClient HoldClient;

/* One HoldLatency: a controller name (or "" for every one) and the cookie the daemon gave it. */
typedef struct HoldSlot {
        HoldClient *client;
        const char *ctrl;
        uint32_t cookie;             /* 0: not in force */
        sd_bus_slot *call;           /* the HoldLatency call while it is pending */
        sd_event_source *retry;      /* after a restart of the daemon: the next try, while one is due */
        unsigned tries;
} HoldSlot;

struct HoldClient {
        const HoldArgs *args;
        sd_event *event;
        sd_bus *bus;
        HoldSlot *slots;
        size_t n_slots;
        size_t n_pending;
        bool interactive;            /* stdin is a terminal: polkit may ask for a password */
        pid_t child;                 /* COMMAND while it runs; 0 before it starts and after it exited */
        bool started;
        sigset_t caller_mask;        /* the signal mask we were started with: COMMAND's */
        siginfo_t child_exit;        /* how COMMAND ended (si_code CLD_EXITED, CLD_KILLED, CLD_DUMPED) */
};

static const char *slot_name(const HoldSlot *s) {
        return s->ctrl[0] ? s->ctrl : "every controller";
}

/* ---- the command line ---- */

static void help(void) {
        printf("Usage: nvme-apstd hold [OPTIONS] [nvmeX...] -- COMMAND [ARG...]\n\n"
               "Run COMMAND with the NVMe drives kept quick to wake: no idle power state whose wake-up\n"
               "takes longer than --max-latency while it runs. The daemon caps each controller's latency\n"
               "budget by the hold (it never loosens it) and writes the table before COMMAND starts; the\n"
               "hold ends when COMMAND exits. Without controller names it applies to every controller the\n"
               "daemon manages. Asked of the running daemon over D-Bus and authorised by polkit\n"
               "(io.github.nvme_apstd.hold-latency).\n\n"
               "  -l --max-latency TIME   the longest wake-up allowed: microseconds, or a number with\n"
               "                          us, ms or s (1.5ms); 0 (the default) keeps the drives awake\n"
               "  -r --reason TEXT        why, for `nvme-apstd status` and the journal\n"
               "  -a --app-id ID          who, for the same (default: COMMAND's name)\n"
               "  -h --help               show this help\n"
               "     --version            show the version\n\n"
               "SIGINT, SIGTERM and SIGHUP are passed on to COMMAND. Exit status: COMMAND's; 125 when\n"
               "the hold failed (COMMAND did not run), 126 when COMMAND could not be run, 127 when it was\n"
               "not found.\n");
}

/* COMMAND's file name, when the daemon would take it as an application id (printable ASCII, at most 255
 * bytes, its limit); else none. The default must not be what makes the hold fail. */
static const char *default_app_id(const char *command) {
        const char *base = strrchr(command, '/') ? strrchr(command, '/') + 1 : command;
        size_t n = strlen(base);

        if (n > 255)
                return "";
        for (size_t i = 0; i < n; i++)
                if (base[i] < 0x20 || base[i] > 0x7e)
                        return "";
        return base;
}

/* The options end at the first "--": what follows is COMMAND's, options and all.
 * Return: 0, CLI_GETOPT_EXIT after --help or --version, or -EINVAL (said). */
static int parse_argv(int argc, char *argv[], HoldArgs *ret) {
        static const struct option options[] = {
                { "max-latency", required_argument, NULL, 'l' },
                { "reason", required_argument, NULL, 'r' },
                { "app-id", required_argument, NULL, 'a' },
                CLI_COMMON_OPTIONS,
                {},
        };
        HoldArgs a = {};
        int dashes, c, r;

        for (dashes = 1; dashes < argc && strcmp(argv[dashes], "--") != 0; dashes++)
                ;
        optind = 0;
        /* getopt sees only what comes before "--" (it may reorder that part: names and options mix) */
        while ((c = cli_getopt(dashes, argv, "l:r:a:h", options, help)) >= 0) {
                switch (c) {
                case 'l':
                        r = parse_time_span_usec(optarg, &a.max_latency_usec);
                        if (r < 0) {
                                log_error("hold: --max-latency '%s': %s; give microseconds, or a number with us, "
                                          "ms or s, such as 1500, 1.5ms or 2s.", optarg,
                                          r == -ERANGE ? "too large" : "not a time span");
                                return -EINVAL;
                        }
                        break;
                case 'r':
                        a.reason = optarg;
                        break;
                case 'a':
                        a.app_id = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        }
        if (c == CLI_GETOPT_EXIT)
                return CLI_GETOPT_EXIT;
        if (dashes >= argc - 1) {
                log_error("hold: %s; usage: nvme-apstd hold [OPTIONS] [nvmeX...] -- COMMAND [ARG...]",
                          dashes < argc ? "no command after --" :
                          optind < argc ? "put -- before the command" : "no command");
                return -EINVAL;
        }
        a.ctrls = argv + optind;
        a.n_ctrls = (size_t) (dashes - optind);
        a.command = argv + dashes + 1;
        if (!a.reason)
                a.reason = "";
        if (!a.app_id)
                a.app_id = default_app_id(a.command[0]);
        *ret = a;
        return 0;
}

/* ---- the holds ---- */

static bool is_not_running(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER);
}

static int hold_start_command(HoldClient *c);
static int hold_exit(HoldClient *c, int code);

/* Every slot has had its answer: start COMMAND, or (after a restart of the daemon) say the hold is back. */
static void hold_all_answered(HoldClient *c) {
        size_t held = 0;

        if (!c->started) {
                (void) hold_start_command(c);
                return;
        }
        for (size_t i = 0; i < c->n_slots; i++)
                held += c->slots[i].cookie != 0;
        if (held == c->n_slots)
                log_warning("hold: the daemon is back; the hold (max latency %" PRIu64 " us) is in force again.",
                            c->args->max_latency_usec);
}

static int hold_send(HoldClient *c, HoldSlot *s);

static int on_retry(sd_event_source *source, uint64_t usec, void *userdata) {
        HoldSlot *s = userdata;
        HoldClient *c = s->client;

        s->retry = sd_event_source_unref(s->retry);
        if (hold_send(c, s) < 0 && --c->n_pending == 0)
                hold_all_answered(c);
        return 0;
}

/* A hold refused while COMMAND runs (so after a restart of the daemon): try again in a while, a few times.
 * Return: true when a try is due (the slot stays pending). */
static bool hold_retry_later(HoldClient *c, HoldSlot *s) {
        if (s->tries >= HOLD_RETAKE_TRIES ||
            sd_event_add_time_relative(c->event, &s->retry, CLOCK_MONOTONIC, HOLD_RETAKE_INTERVAL_USEC, 0, on_retry,
                                       s) < 0)
                return false;
        c->n_pending++;
        return true;
}

static void hold_said_no(HoldClient *c, HoldSlot *s, const sd_bus_error *e, int r) {
        if (e && is_not_running(e))
                log_error("hold: %s: nvme-apstd is not running (%s is not on the system bus).", slot_name(s),
                          BUS_API_NAME);
        else if (e)
                log_error("hold: %s: %s (%s)", slot_name(s), e->message ? e->message : strerror(-r), e->name);
        else
                log_error_errno(r, "hold: %s: the daemon's reply makes no sense: %m", slot_name(s));
}

static int on_hold_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        HoldSlot *s = userdata;
        HoldClient *c = s->client;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t cookie = 0;
        int r;

        s->call = sd_bus_slot_unref(s->call);
        c->n_pending--;
        r = e ? -sd_bus_error_get_errno(e) : sd_bus_message_read(reply, "u", &cookie);
        if (r < 0 && !c->started) {
                hold_said_no(c, s, e, r);
                return hold_exit(c, HOLD_EXIT_FAILED);
        }
        if (r < 0 && hold_retry_later(c, s)) {
                log_debug("hold: %s: refused after the restart (%s); trying again.", slot_name(s),
                          e && e->message ? e->message : strerror(-r));
                return 0;
        }
        if (r < 0) {
                hold_said_no(c, s, e, r);
                log_warning("hold: %s: the hold could not be taken again; the command runs on without it.",
                            slot_name(s));
        } else {
                s->cookie = cookie;
                log_debug("hold: %s held to %" PRIu64 " us, cookie %" PRIu32 ".", slot_name(s),
                          c->args->max_latency_usec, cookie);
        }
        if (c->n_pending == 0)
                hold_all_answered(c);
        return 0;
}

/* Send @s's HoldLatency; the reply comes to on_hold_reply(). Return: 0 or negative errno (said). */
static int hold_send(HoldClient *c, HoldSlot *s) {
        sd_bus_message *m = NULL;
        int r;

        s->tries++;
        r = sd_bus_message_new_method_call(c->bus, &m, BUS_API_NAME, BUS_API_PATH, BUS_API_IFACE_MANAGER,
                                           "HoldLatency");
        if (r >= 0)
                r = sd_bus_message_append(m, "stss", s->ctrl, c->args->max_latency_usec, c->args->reason,
                                          c->args->app_id);
        if (r >= 0)
                r = sd_bus_message_set_allow_interactive_authorization(m, c->interactive);
        /* no timeout of ours: the daemon bounds the call (its unresponsive_after_sec, its wait for
         * polkit), a person typing a password takes what it takes, and a daemon that hangs is
         * restarted by its watchdog, which ends the call with an error */
        if (r >= 0)
                r = sd_bus_call_async(c->bus, &s->call, m, on_hold_reply, s, UINT64_MAX);
        sd_bus_message_unref(m);
        if (r < 0)
                return log_error_errno(r, "hold: %s: cannot send HoldLatency: %m", slot_name(s));
        return 0;
}

/* One HoldLatency per slot, from the start. Return: 0 or negative errno (said). */
static int hold_take_all(HoldClient *c) {
        for (size_t i = 0; i < c->n_slots; i++) {
                HoldSlot *s = &c->slots[i];
                int r;

                s->cookie = 0;
                s->tries = 0;
                r = hold_send(c, s);
                if (r < 0)
                        return r;
                c->n_pending++;
        }
        return 0;
}

/* The daemon is gone: its holds went with it, and a pending call will never be answered. */
static void hold_forget_all(HoldClient *c) {
        for (size_t i = 0; i < c->n_slots; i++) {
                HoldSlot *s = &c->slots[i];

                if (s->call || s->retry)
                        c->n_pending--;
                s->call = sd_bus_slot_unref(s->call);
                s->retry = sd_event_source_unref(s->retry);
                s->cookie = 0;
        }
}

/* Tell the daemon we are done, without waiting: the release is a courtesy (closing the connection
 * ends the holds too), and an answer is not worth keeping COMMAND's status from our caller. */
static void hold_release_all(HoldClient *c) {
        for (size_t i = 0; i < c->n_slots; i++) {
                sd_bus_message *m = NULL;
                int r;

                if (c->slots[i].cookie == 0)
                        continue;
                r = sd_bus_message_new_method_call(c->bus, &m, BUS_API_NAME, BUS_API_PATH, BUS_API_IFACE_MANAGER,
                                                   "ReleaseLatency");
                if (r >= 0)
                        r = sd_bus_message_append(m, "u", c->slots[i].cookie);
                if (r >= 0)
                        r = sd_bus_message_set_expect_reply(m, 0);
                if (r >= 0)
                        r = sd_bus_send(c->bus, m, NULL);
                if (r < 0)
                        log_debug_errno(r, "hold: cannot send ReleaseLatency(%" PRIu32 "): %m", c->slots[i].cookie);
                sd_bus_message_unref(m);
                c->slots[i].cookie = 0;
        }
        (void) sd_bus_flush(c->bus);
}

/* End the loop with @code, the holds released first (sd-bus closes the connection when the loop exits). */
static int hold_exit(HoldClient *c, int code) {
        hold_release_all(c);
        return sd_event_exit(c->event, code);
}

/* ---- the bus's news ---- */

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        HoldClient *c = userdata;
        const char *name, *old_owner, *new_owner;
        int r;

        r = sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner);
        if (r < 0 || strcmp(name, BUS_API_NAME) != 0)
                return 0;
        if (old_owner[0]) {
                hold_forget_all(c);
                if (!c->started) {
                        /* the calls it had will never be answered */
                        log_error("hold: the daemon left the bus before the hold was in force.");
                        return hold_exit(c, HOLD_EXIT_FAILED);
                }
                log_warning("hold: the daemon left the bus; the hold is gone until it is back.");
        }
        if (new_owner[0] && c->started && c->child > 0) {
                log_warning("hold: the daemon is on the bus again; taking the hold again.");
                if (hold_take_all(c) < 0)
                        log_warning("hold: the command runs on without the hold.");
        }
        return 0;
}

static int on_latency_released(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        HoldClient *c = userdata;
        const char *why;
        uint32_t cookie;

        if (sd_bus_message_read(m, "us", &cookie, &why) < 0 || cookie == 0)
                return 0;
        for (size_t i = 0; i < c->n_slots; i++)
                if (c->slots[i].cookie == cookie) {
                        c->slots[i].cookie = 0;
                        log_warning("hold: the daemon ended the hold on %s (%s); the command runs on without it.",
                                    slot_name(&c->slots[i]), why);
                }
        return 0;
}

static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        HoldClient *c = userdata;

        hold_forget_all(c);
        if (!c->started) {
                log_error("hold: lost the connection to the system bus before the hold was in force.");
                return hold_exit(c, HOLD_EXIT_FAILED);
        }
        log_warning("hold: lost the connection to the system bus; the hold is gone, the command runs on.");
        return 0;
}

/* ---- COMMAND ---- */

static int on_child(sd_event_source *s, const siginfo_t *si, void *userdata) {
        HoldClient *c = userdata;

        c->child_exit = *si;
        c->child = 0;
        return hold_exit(c, 0);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        HoldClient *c = userdata;
        int sig = (int) si->ssi_signo;

        if (!c->started) {
                log_error("hold: %s before the hold was in force; the command was not started.", strsignal(sig));
                return hold_exit(c, HOLD_EXIT_SIGNAL_BASE + sig);
        }
        if (c->child <= 0)
                return 0;
        /* The terminal (^C, a hangup) signals its whole foreground process group, COMMAND with us:
         * passing it on would deliver it twice, and many programs read a second ^C as "quit now". */
        if (si->ssi_code == SI_KERNEL) {
                log_debug("hold: %s from the terminal: the command has it already.", strsignal(sig));
                return 0;
        }
        if (kill(c->child, sig) < 0 && errno != ESRCH)
                log_warning("hold: cannot pass %s on to the command: %m", strsignal(sig));
        return 0;
}

static int hold_start_command(HoldClient *c) {
        _cleanup_(posix_spawnattr_destroy) posix_spawnattr_t attr;
        pid_t pid;
        int r;

        (void) posix_spawnattr_init(&attr);
        /* COMMAND gets the signal mask we were given (ours blocks the loop's signals for its signalfd),
         * and what our caller ignored stays ignored: what env(1) would pass on */
        (void) posix_spawnattr_setsigmask(&attr, &c->caller_mask);
        (void) posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
        (void) fflush(NULL);
        r = posix_spawnp(&pid, c->args->command[0], NULL, &attr, c->args->command, environ);
        if (r != 0) {
                log_error("hold: cannot run %s: %s", c->args->command[0], strerror(r));
                return hold_exit(c, r == ENOENT ? HOLD_EXIT_NOT_FOUND : HOLD_EXIT_CANNOT_RUN);
        }
        c->child = pid;
        c->started = true;
        r = sd_event_add_child(c->event, NULL, pid, WEXITED, on_child, c);
        if (r < 0) {
                /* cannot follow it: do not leave it running without its hold */
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                c->child = 0;
                log_error_errno(r, "hold: cannot watch the command: %m");
                return hold_exit(c, HOLD_EXIT_FAILED);
        }
        return 0;
}

/* COMMAND's end as ours: its exit status, or the same signal (without a core of ours). */
static int hold_exit_status(const siginfo_t *si) {
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        struct rlimit no_core = {};
        sigset_t one;

        if (si->si_code == CLD_EXITED)
                return si->si_status;
        (void) setrlimit(RLIMIT_CORE, &no_core);
        (void) sigaction(si->si_status, &dfl, NULL);
        (void) sigemptyset(&one);
        (void) sigaddset(&one, si->si_status);
        (void) sigprocmask(SIG_UNBLOCK, &one, NULL);
        (void) raise(si->si_status);
        return HOLD_EXIT_SIGNAL_BASE + si->si_status;
}

/* ---- the loop ---- */

static int hold_add_sources(HoldClient *c) {
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(sigs); i++) {
                r = sd_event_add_signal(c->event, NULL, sigs[i], on_signal, c);
                if (r < 0)
                        return log_error_errno(r, "hold: cannot watch %s: %m", strsignal(sigs[i]));
        }
        r = sd_bus_open_system(&c->bus);
        if (r < 0)
                return log_error_errno(r, "hold: cannot connect to the system bus: %m");
        r = sd_bus_attach_event(c->bus, c->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "hold: cannot attach to the system bus: %m");
        /* the owner of the daemon's name only: not every client that comes and goes on the system bus */
        r = sd_bus_add_match(c->bus, NULL,
                             "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                             "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" BUS_API_NAME "'",
                             on_name_owner_changed, c);
        if (r >= 0)
                r = sd_bus_match_signal(c->bus, NULL, BUS_API_NAME, BUS_API_PATH, BUS_API_IFACE_MANAGER,
                                        "LatencyReleased", on_latency_released, c);
        if (r >= 0)
                r = sd_bus_match_signal(c->bus, NULL, NULL, "/org/freedesktop/DBus/Local",
                                        "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, c);
        if (r < 0)
                return log_error_errno(r, "hold: cannot subscribe to the bus's signals: %m");
        return 0;
}

static int hold_run(const HoldArgs *args) {
        _cleanup_free_ HoldSlot *slots = NULL;
        HoldClient c = { .args = args, .interactive = isatty(STDIN_FILENO) == 1 };
        sigset_t mask;
        int r;

        c.n_slots = args->n_ctrls > 0 ? args->n_ctrls : 1;
        slots = calloc(c.n_slots, sizeof *slots);
        if (!slots) {
                log_error("Out of memory.");
                return HOLD_EXIT_FAILED;
        }
        for (size_t i = 0; i < c.n_slots; i++)
                slots[i] = (HoldSlot) { .client = &c, .ctrl = args->n_ctrls > 0 ? args->ctrls[i] : "" };
        c.slots = slots;
        /* the loop's signals and the child source's SIGCHLD come through sd-event: blocked here */
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGHUP);
        (void) sigaddset(&mask, SIGCHLD);
        (void) sigprocmask(SIG_BLOCK, &mask, &c.caller_mask);

        r = sd_event_new(&c.event);
        if (r < 0)
                log_error_errno(r, "hold: cannot create the event loop: %m");
        if (r >= 0)
                r = hold_add_sources(&c);
        if (r >= 0)
                r = hold_take_all(&c);
        if (r >= 0)
                r = sd_event_loop(c.event);
        else
                r = HOLD_EXIT_FAILED;
        if (r < 0) {
                log_error_errno(r, "hold: the event loop failed: %m");
                r = HOLD_EXIT_FAILED;
        }
        hold_forget_all(&c);
        if (c.child > 0) {
                /* the loop failed with COMMAND still running: it keeps running, without the hold */
                log_warning("hold: the command (PID %d) runs on without the hold.", (int) c.child);
        }
        c.bus = sd_bus_flush_close_unref(c.bus);
        c.event = sd_event_unref(c.event);
        if (c.started && c.child == 0 && r == 0)
                return hold_exit_status(&c.child_exit);
        return r;
}

int verb_hold(int argc, char *argv[]) {
        HoldArgs args;
        int r;

        r = parse_argv(argc, argv, &args);
        if (r == CLI_GETOPT_EXIT)
                return 0;
        if (r < 0)
                return HOLD_EXIT_FAILED;
        return hold_run(&args);
}
