/*
 * splitdance's spawner: a tiny long-lived helper that runs the `--exec` commands of one
 * slot, one after another, each with a vfork (no copy of the caller's page tables: spawn_command),
 * where Node's spawn forks the whole worker. It holds the slot's queue: the moment a command
 * exits, the next queued one starts, and only then are both reported, so the slot never waits
 * for a round trip to its worker or the coordinator. Each command still gets what a plain
 * spawn gives it: its own session and process group, stdin from /dev/null, stdout and stderr
 * into its log file, the worker's cwd, and the worker's environment plus the task's variables;
 * and the OOM killer takes it before this helper and the coordinator (raise_oom_score).
 *
 * Protocol version 3 (`spawner --check` prints "splitdance-spawner protocol 3"; the worker
 * refuses any other). Requests arrive on stdin as NUL-terminated fields:
 *   R, id, log path, argument count, arguments…, variable count, NAME=value…, fallback
 *       queue a command (an empty log path discards its output: the worker's answer to a log
 *       folder that is full or unusable, where the command's own writes would fail it;
 *       argument 0 is looked up on PATH unless it holds a slash; a non-empty fallback is a
 *       shell line run as `/bin/sh -c fallback` instead when argument 0 cannot be executed,
 *       so a missing command fails as the shell reports it)
 *   D   give back every queued command that has not started
 * Replies go to stdout, one line each:
 *   "<id> S <pid> <ms>"            started at <ms> (CLOCK_MONOTONIC); the pid is also its process group
 *   "<id> F <errno>"               could not start (e.g. ENOENT: no such command)
 *   "<id> L <errno>"               could not create its log file: it runs with its output discarded
 *   "<id> X <status> <bytes> <ms> <left> <err>" ended at <ms>: raw wait status, bytes the command
 *                                  wrote to its log, 1 if processes of its group were left running,
 *                                  and whether it wrote on stderr: 0 no, 1 yes, 2 not known (its
 *                                  output was discarded)
 * (the times are the helper's, so they are true however late its worker reads the replies; the
 * monotonic clock, which Node's hrtime also reads, so a wall clock that jumps changes nothing)
 *   "<id> D"                  given back unstarted (after a D request)
 * A log the command left empty is removed again, so silent tasks leave no files. The worker
 * starts it with its own pid as argument 1 (and, ignored here, a number that tells it from the
 * worker's other helpers: a command being spawned reads as its helper in /proc until its exec,
 * and a worker whose helper died mid-spawn finds it by that command line). When stdin closes or this helper is re-parented
 * (the worker is gone), the running command is killed with its group, nothing queued starts
 * (looked at before every start, not only when the input is read), and the spawner exits: it
 * never leaves orphans behind (also when it was stopped with SIGSTOP as its worker died: the
 * kernel then wakes it with SIGCONT). That includes the groups of commands that have ended
 * but left processes running (`cmd &`): the worker stops those itself, and if it dies first,
 * they are killed here. It runs in its own process group, so a kill aimed at the worker's
 * group leaves it alive to do that. It is a child subreaper (Linux): what its commands orphan
 * is re-parented to it and reaped here, so a group whose processes have all ended is empty,
 * whatever the system's init does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PROTOCOL "splitdance-spawner protocol 3"

/* A queued command: one allocation holding its fields, with pointers into it. */
struct request {
  long long id;
  char *log_path;
  char **argv;
  char **vars;
  long nvars;
  char *fallback;
  char *fields;
  struct request *next;
};

/* The command that runs now: at most one, the slot's. */
struct child {
  pid_t pid;
  long long id;
  int log_fd;
  /* Its stderr: the same log, opened apart (see start), or -1 when that could not be done. */
  int err_fd;
  char *log_path;
};

static struct child *running;
static struct request *queue_head, *queue_tail;
static int sigchld_pipe[2];
/* The worker (the coordinator, for an --exec run) this helper takes orders from. */
static pid_t parent;

/* Replies are gathered here and written once per turn of the loop, after any start. */
static char *out;
static size_t out_len, out_cap;

/* Groups of ended commands that still had live processes when the command was reaped. */
static pid_t *lingering;
static size_t nlingering, caplingering;

/* Forgets lingering groups that are empty now (and so could be reused by an unrelated group). */
static void prune_lingering(void) {
  size_t k = 0;
  for (size_t i = 0; i < nlingering; i++) {
    if (kill(-lingering[i], 0) == 0 || errno != ESRCH) lingering[k++] = lingering[i];
  }
  nlingering = k;
}

static void add_lingering(pid_t pgid) {
  prune_lingering();
  if (nlingering == caplingering) {
    size_t cap = caplingering ? caplingering * 2 : 16;
    pid_t *grown = realloc(lingering, cap * sizeof *grown);
    if (!grown) {
      kill(-pgid, SIGKILL); /* cannot track it: it must not outlive us unnoticed */
      return;
    }
    lingering = grown;
    caplingering = cap;
  }
  lingering[nlingering++] = pgid;
}

/* Kills the running command's process group and every lingering one, and exits: the worker is gone or the input is bad. */
static void quit(int code) {
  if (running) kill(-running->pid, SIGKILL);
  prune_lingering();
  for (size_t i = 0; i < nlingering; i++) kill(-lingering[i], SIGKILL);
  if (running) {
    /* Reaped before this helper goes: once it is gone, so is its command (bounded, since a
     * process in an uninterruptible sleep can take long to die). */
    alarm(2);
    while (waitpid(running->pid, NULL, 0) < 0 && errno == EINTR) {}
  }
  _exit(code);
}

static void on_sigchld(int sig) {
  (void)sig;
  int saved = errno;
  ssize_t ignored = write(sigchld_pipe[1], "", 1);
  (void)ignored;
  errno = saved;
}

/* Now, in milliseconds of the monotonic clock. */
static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One reply line: "<id> <what>" and the numbers given, up to the first negative one. */
static void reply_n(long long id, char what, const long long *nums, int n) {
  if (out_cap - out_len < 256) {
    size_t cap = out_cap ? out_cap * 2 : 4096;
    char *grown = realloc(out, cap);
    if (!grown) quit(1);
    out = grown;
    out_cap = cap;
  }
  out_len += (size_t)snprintf(out + out_len, 32, "%lld %c", id, what);
  for (int k = 0; k < n && nums[k] >= 0; k++) out_len += (size_t)snprintf(out + out_len, 24, " %lld", nums[k]);
  out[out_len++] = '\n';
}

static void reply(long long id, char what, long long a, long long b) {
  long long nums[] = { a, b };
  reply_n(id, what, nums, 2);
}

static void flush(void) {
  for (size_t off = 0; off < out_len;) {
    ssize_t w = write(STDOUT_FILENO, out + off, out_len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) quit(0); /* the worker is gone: nobody would learn of these commands */
    off += (size_t)w;
  }
  out_len = 0;
}

/* Reads one NUL-terminated field at *pos; NULL if the buffer does not hold it yet. */
static char *field(char *buf, size_t len, size_t *pos) {
  if (*pos >= len) return NULL;
  char *start = buf + *pos;
  char *end = memchr(start, '\0', len - *pos);
  if (!end) return NULL;
  *pos = (size_t)(end - buf) + 1;
  return start;
}

/* The worker's environment with the task's variables put over it. */
static char **task_env(char **vars, long nvars) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = malloc((n + (size_t)nvars + 1) * sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t name = strcspn(environ[i], "=");
    int overridden = 0;
    for (long v = 0; v < nvars && !overridden; v++) {
      overridden = strncmp(vars[v], environ[i], name) == 0 && vars[v][name] == '=';
    }
    if (!overridden) env[k++] = environ[i];
  }
  for (long v = 0; v < nvars; v++) env[k++] = vars[v];
  env[k] = NULL;
  return env;
}

static void free_request(struct request *r) {
  free(r->argv);
  free(r->vars);
  free(r->fields);
  free(r);
}

/*
 * What its commands are given as oom_score_adj: the kernel's OOM killer takes them before the
 * coordinator and this helper, which keep theirs (STARTED_OOM_SCORE_ADJ in oom-score.ts).
 * The child writes it for itself in child_exec, before its exec (a vforked child's value is its
 * own: the kernel does not give it to the helper whose memory it shares), so the command never
 * runs with this helper's value. Written by the helper after the spawn returned, it came too
 * late now and then: the command had already run (and what it forked meanwhile kept the old
 * value). Only in a helper whose own value is lower: one started by a forked worker has
 * inherited it.
 */
#define STARTED_OOM_SCORE_ADJ 1000
#define DECIMAL(n) #n
#define DECIMAL_OF(n) DECIMAL(n)
static int oom_score_inherited;

/* Called by the child before its exec: only system calls. */
static void raise_oom_score(void) {
  if (oom_score_inherited) return;
  int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return; /* no /proc: the kernel's own order stays */
  static const char value[] = DECIMAL_OF(STARTED_OOM_SCORE_ADJ);
  if (write(fd, value, sizeof value - 1) < 0) { /* not ours to change: as above */ }
  close(fd);
}

static int own_oom_score(void) {
  char value[16] = { 0 };
  int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return STARTED_OOM_SCORE_ADJ;
  ssize_t n = read(fd, value, sizeof value - 1);
  close(fd);
  return n > 0 ? atoi(value) : STARTED_OOM_SCORE_ADJ;
}

/*
 * How a command is started: vfork, then in the child (which runs in this helper's memory,
 * this helper waiting, until its exec) what posix_spawn with POSIX_SPAWN_SETSIGDEF (every
 * signal), POSIX_SPAWN_SETSID and POSIX_SPAWN_SETSIGMASK (none) and the file actions "stdin
 * from /dev/null, stdout and stderr into the log" would do, in the same order. glibc's
 * posix_spawn maps and unmaps a stack for its child at every call (the unmap costs a TLB
 * flush on every CPU that ran this helper) and resets all 64 signals in the child one
 * sigaction at a time; here the child runs on this helper's stack, and only the signals
 * whose disposition is not the default here are reset (those exec would keep: the ignored
 * ones; and the handled ones, whose handlers must not run in the child before its exec).
 */
static int nondefault[NSIG];
static int nnondefault;

/* Notes the signals whose disposition is not the default; called once this helper has set its own (they never change afterwards). */
static void note_dispositions(void) {
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL) nondefault[nnondefault++] = sig;
  }
}

/* Why the child's exec failed, written by the child (it shares this memory) before it exits. */
static volatile int child_errno;

static _Noreturn void child_failed(int err) {
  child_errno = err;
  _exit(127);
}

/* Makes `fd` the child's descriptor `to` (inherited across exec even if they are the same). */
static void child_dup(int fd, int to) {
  if (fd == to ? fcntl(fd, F_SETFD, 0) < 0 : dup2(fd, to) < 0) child_failed(errno);
}

/*
 * The child, until its exec: only system calls, on this helper's stack (it must not return).
 * `file` is looked up on PATH when `search` is set and it holds no slash, as posix_spawnp
 * does: this helper's PATH ("/bin:/usr/bin" without one), an empty entry naming the current
 * folder, the next entry tried after ENOENT, ENOTDIR, ESTALE, ENODEV or ETIMEDOUT, and EACCES
 * reported if any entry gave it; any other error ends the search.
 */
static _Noreturn void child_exec(const char *file, int search, char **argv, char **env, const int out_fds[2]) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int i = 0; i < nnondefault; i++) sigaction(nondefault[i], &dfl, NULL);
  raise_oom_score();
  if (setsid() < 0) child_failed(errno);
  int in = open("/dev/null", O_RDONLY);
  if (in < 0) child_failed(errno);
  if (in != STDIN_FILENO) {
    child_dup(in, STDIN_FILENO);
    close(in);
  }
  child_dup(out_fds[0], STDOUT_FILENO);
  child_dup(out_fds[1], STDERR_FILENO);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (!search || strchr(file, '/')) {
    execve(file, argv, env);
    child_failed(errno);
  }
  if (file[0] == '\0') child_failed(ENOENT);
  const char *path = getenv("PATH");
  if (!path) path = "/bin:/usr/bin";
  size_t flen = strlen(file);
  char full[4096 + 256];
  int eacces = 0;
  for (const char *p = path;; p++) {
    const char *end = strchr(p, ':');
    if (!end) end = p + strlen(p);
    size_t dlen = (size_t)(end - p);
    if (dlen + 1 + flen + 1 <= sizeof full) {
      memcpy(full, p, dlen);
      size_t at = dlen;
      if (dlen > 0) full[at++] = '/';
      memcpy(full + at, file, flen + 1);
      execve(full, argv, env);
      switch (errno) {
        case EACCES: eacces = 1; break;
        case ENOENT: case ENOTDIR: case ESTALE: case ENODEV: case ETIMEDOUT: break;
        default: child_failed(errno);
      }
    }
    if (*end == '\0') break;
    p = end;
  }
  child_failed(eacces ? EACCES : ENOENT);
}

/* Starts a command (see child_exec) with stdout and stderr on out_fds: 0 and its pid, or an errno (nothing runs then). */
static int spawn_command(pid_t *pid, const char *file, int search, char **argv, char **env, const int out_fds[2]) {
  sigset_t all, old;
  sigfillset(&all);
  /* No handler of this helper may run in the child: they stay blocked until it resets them. */
  sigprocmask(SIG_SETMASK, &all, &old);
  child_errno = 0;
  pid_t child = vfork();
  if (child == 0) child_exec(file, search, argv, env, out_fds);
  int err = child < 0 ? errno : child_errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (child > 0 && err != 0) {
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
  }
  if (err == 0) *pid = child;
  return err;
}

/* Starts one request: `running` on success, else an F or L reply. */
static void start(struct request *r) {
  /* Allocated first: running out of memory after the spawn would leave an untracked command. */
  struct child *c = calloc(1, sizeof *c);
  char *path_copy = strdup(r->log_path);
  if (!c || !path_copy) quit(1);
  /* Created new, 0600, never through a symlink and never appended to: something already at the
   * path (a stale log of a pruned attempt whose id was reused, or a planted symlink) is
   * unlinked, not followed, and the file created again once. */
  const int new_file = O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  const char *log_path = r->log_path;
  int discard = log_path[0] == '\0';
  int fd = discard ? open("/dev/null", O_WRONLY | O_CLOEXEC) : open(log_path, new_file, 0600);
  if (fd < 0 && !discard && errno == EEXIST && unlink(log_path) == 0) fd = open(log_path, new_file, 0600);
  if (fd < 0 && !discard) {
    /* Its log cannot be made (a full disk, a folder gone): it runs with its output discarded,
     * in its turn, and the worker says why. */
    reply(r->id, 'L', errno, -1);
    discard = 1;
    path_copy[0] = '\0';
    fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    free(c);
    free(path_copy);
    reply(r->id, 'F', errno, -1);
    return;
  }
  /* Its stderr goes to the same log through a description of its own, both appending, so the
   * log keeps the two interleaved as written, and this description's offset, still 0 when the
   * command ends, says it wrote nothing on stderr (an exit code with a silent stderr is an
   * answer, not a fault: settlement.ts). Reopened through /proc, never by its path again. */
  int err_fd = -1;
  if (!discard) {
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    err_fd = open(self, O_WRONLY | O_APPEND | O_CLOEXEC);
  }
  char **env = task_env(r->vars, r->nvars);
  pid_t pid = 0;
  int out_fds[] = { fd, err_fd >= 0 ? err_fd : fd };
  int err = env ? spawn_command(&pid, r->argv[0], 1, r->argv, env, out_fds) : ENOMEM;
  if (err != 0 && env && r->fallback[0] != '\0') {
    char *shell[] = { "/bin/sh", "-c", r->fallback, NULL };
    err = spawn_command(&pid, "/bin/sh", 0, shell, env, out_fds);
  }
  free(env);
  if (err != 0) {
    close(fd);
    if (err_fd >= 0) close(err_fd);
    if (!discard) unlink(log_path);
    free(c);
    free(path_copy);
    reply(r->id, 'F', err, -1);
    return;
  }
  *c = (struct child){ pid, r->id, fd, err_fd, path_copy };
  running = c;
  reply(r->id, 'S', pid, now_ms());
}

/*
 * Whether the worker is gone: this helper was re-parented, or its input has no writer left
 * (POLLHUP is set even while unread requests remain). Looked at without blocking.
 */
static int orphaned(void) {
  if (getppid() != parent) return 1;
  struct pollfd in = { STDIN_FILENO, POLLIN, 0 };
  return poll(&in, 1, 0) > 0 && (in.revents & (POLLHUP | POLLERR | POLLNVAL));
}

/*
 * Nothing runs: start the next queued command (skipping those that cannot start). A command
 * starts only while its worker lives: a helper woken after its worker died (a stopped run
 * SIGKILLed, whose helper the kernel wakes with SIGCONT) that started the next queued command
 * before reading the end of its input would leave it running with nobody knowing of it if it
 * were killed in that moment, and a rerun would run the same key beside it. A worker that
 * dies during the spawn is seen right after it: the new command is killed with the rest.
 */
static void start_next(void) {
  while (!running && queue_head) {
    if (orphaned()) quit(0);
    struct request *r = queue_head;
    queue_head = r->next;
    if (!queue_head) queue_tail = NULL;
    start(r);
    free_request(r);
    if (running && orphaned()) quit(0);
  }
}

/* Gives back every queued command, unstarted. */
static void drop_queued(void) {
  while (queue_head) {
    struct request *r = queue_head;
    queue_head = r->next;
    reply(r->id, 'D', -1, -1);
    free_request(r);
  }
  queue_tail = NULL;
}

/* A count field: digits only, at least `least`; anything else is a protocol bug, never input. */
static long count(const char *s, long least) {
  char *end;
  errno = 0;
  long n = strtol(s, &end, 10);
  if (errno || end == s || *end != '\0' || n < least || n > (1L << 20)) quit(2);
  return n;
}

/*
 * Parses one complete R request at buf[from, len) into a request of its own (a copy of its
 * fields, so the input buffer can move); NULL when the buffer does not hold it all yet.
 */
static struct request *parse_run(char *buf, size_t len, size_t from, size_t *end) {
  size_t pos = from;
  char *id = field(buf, len, &pos), *log_path = id ? field(buf, len, &pos) : NULL;
  char *nargs_s = log_path ? field(buf, len, &pos) : NULL;
  if (!nargs_s) return NULL;
  long nargs = count(nargs_s, 1);
  for (long i = 0; i < nargs; i++) {
    if (!field(buf, len, &pos)) return NULL;
  }
  char *nvars_s = field(buf, len, &pos);
  if (!nvars_s) return NULL;
  long nvars = count(nvars_s, 0);
  for (long v = 0; v < nvars; v++) {
    if (!field(buf, len, &pos)) return NULL;
  }
  if (!field(buf, len, &pos)) return NULL; /* the fallback */
  struct request *r = calloc(1, sizeof *r);
  char *fields = r ? malloc(pos - from) : NULL;
  char **argv = fields ? calloc((size_t)nargs + 1, sizeof *argv) : NULL;
  char **vars = argv ? calloc((size_t)nvars + 1, sizeof *vars) : NULL;
  if (!vars) quit(1);
  memcpy(fields, buf + from, pos - from);
  size_t p = 0, n = pos - from;
  char *id_f = field(fields, n, &p);
  r->id = strtoll(id_f, NULL, 10);
  r->log_path = field(fields, n, &p);
  field(fields, n, &p);
  for (long i = 0; i < nargs; i++) argv[i] = field(fields, n, &p);
  field(fields, n, &p);
  for (long v = 0; v < nvars; v++) vars[v] = field(fields, n, &p);
  r->fallback = field(fields, n, &p);
  r->argv = argv;
  r->vars = vars;
  r->nvars = nvars;
  r->fields = fields;
  *end = pos;
  return r;
}

/* Queues or acts on every complete request in the buffer; returns the bytes consumed. */
static size_t serve(char *buf, size_t len) {
  size_t done = 0;
  for (;;) {
    size_t pos = done;
    char *verb = field(buf, len, &pos);
    if (!verb) return done;
    if (strcmp(verb, "D") == 0) {
      drop_queued();
      done = pos;
      continue;
    }
    if (strcmp(verb, "R") != 0) quit(2);
    size_t end;
    struct request *r = parse_run(buf, len, pos, &end);
    if (!r) return done; /* incomplete: wait for more input */
    if (queue_tail) queue_tail->next = r;
    else queue_head = r;
    queue_tail = r;
    done = end;
  }
}

/* Reaps what has ended: the running command (reported) and orphans re-parented here. */
static void reap(void) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    struct child *c = running;
    if (!c || c->pid != pid) continue;
    struct stat st;
    off_t written = fstat(c->log_fd, &st) == 0 ? st.st_size : 0;
    close(c->log_fd);
    int on_stderr = 2;
    if (c->err_fd >= 0) {
      off_t at = lseek(c->err_fd, 0, SEEK_CUR);
      on_stderr = at < 0 ? 2 : at > 0;
      close(c->err_fd);
    }
    if (written == 0 && c->log_path[0]) unlink(c->log_path);
    int lingers = kill(-c->pid, 0) == 0;
    if (lingers) add_lingering(c->pid);
    long long nums[] = { status, (long long)written, now_ms(), lingers, on_stderr };
    reply_n(c->id, 'X', nums, 5);
    running = NULL;
    free(c->log_path);
    free(c);
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--check") == 0) { /* "this build runs here, and speaks this protocol" */
    puts(PROTOCOL);
    return 0;
  }
  /* The worker names itself (argument 1): one that died before this line ran is seen at once. */
  parent = argc > 1 ? (pid_t)strtol(argv[1], NULL, 10) : getppid();
  if (pipe2(sigchld_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
  oom_score_inherited = own_oom_score() >= STARTED_OOM_SCORE_ADJ;
#ifdef PR_SET_CHILD_SUBREAPER
  prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
#ifdef PR_SET_PDEATHSIG
  /* A helper stopped with SIGSTOP cannot see its stdin close, and its command would run on
   * beside the next attempt of a rerun that found its coordinator dead. The kernel sends this
   * the moment its worker dies: it wakes, reads the end of its input and kills its commands. */
  prctl(PR_SET_PDEATHSIG, SIGCONT);
#endif
  if (getppid() != parent) return 0; /* its worker died before the request above: nothing is ours yet */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigchld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  fcntl(STDIN_FILENO, F_SETFD, FD_CLOEXEC);
  fcntl(STDOUT_FILENO, F_SETFD, FD_CLOEXEC);
  note_dispositions();

  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  if (!buf) return 1;
  for (;;) {
    struct pollfd fds[2] = { { STDIN_FILENO, POLLIN, 0 }, { sigchld_pipe[0], POLLIN, 0 } };
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (fds[1].revents) {
      char drain[64];
      while (read(sigchld_pipe[0], drain, sizeof drain) > 0) {}
      reap();
      start_next(); /* before the reply is written: the slot does not wait for its worker */
    }
    if (fds[0].revents) {
      if (len == cap) {
        char *grown = realloc(buf, cap *= 2);
        if (!grown) quit(1);
        buf = grown;
      }
      ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break; /* the worker is gone */
      len += (size_t)n;
      size_t used = serve(buf, len);
      memmove(buf, buf + used, len - used);
      len -= used;
      start_next();
    }
    flush();
  }
  quit(0);
}
