/*
 * splitdance's spawner: a tiny long-lived helper that starts `--exec` commands for one
 * worker with posix_spawn (a vfork: no copy of the caller's page tables), where Node's
 * spawn forks the whole worker. On this kind of machine that halves the CPU each shell
 * task costs. Each command still gets what a plain spawn gives it: its own session and
 * process group, stdin from /dev/null, stdout and stderr into its log file, the worker's
 * cwd, and the worker's environment plus the task's variables.
 *
 * Requests arrive on stdin as NUL-terminated fields:
 *   id, log path, argument count, arguments…, variable count, NAME=value…
 * (an empty log path discards the output: the worker's answer to a log folder that is full
 * or unusable, where the command's own writes into its log would fail it;
 * argument 0 is looked up on PATH unless it holds a slash). Replies go to stdout, one
 * line each:
 *   "<id> S <pid>"            started; the pid is also its process group
 *   "<id> F <errno>"          could not start (e.g. ENOENT: no such command)
 *   "<id> L <errno>"          could not open the log file; nothing started
 *   "<id> X <status> <bytes>" ended: raw wait status, bytes the command wrote to its log
 * A log the command left empty is removed again, so silent tasks leave no files. When
 * stdin closes (the worker is gone), every command still running is killed with its
 * group and the spawner exits: it never leaves orphans behind. That includes the groups of
 * commands that have ended but left processes running (`cmd &`): the worker stops those
 * itself, and if it dies first, they are killed here. It runs in its own process group,
 * so a kill aimed at the worker's group leaves it alive to do that. It is a child
 * subreaper (Linux): what its commands orphan is re-parented to it and reaped here, so a
 * group whose processes have all ended is empty, whatever the system's init does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct child {
  pid_t pid;
  long long id;
  int log_fd;
  char *log_path;
  struct child *next;
};

static struct child *children;
static int sigchld_pipe[2];

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

/* Kills every command's process group (running or lingering) and exits: the worker is gone or the input is bad. */
static void quit(int code) {
  for (struct child *c = children; c; c = c->next) kill(-c->pid, SIGKILL);
  prune_lingering();
  for (size_t i = 0; i < nlingering; i++) kill(-lingering[i], SIGKILL);
  _exit(code);
}

static void on_sigchld(int sig) {
  (void)sig;
  int saved = errno;
  ssize_t ignored = write(sigchld_pipe[1], "", 1);
  (void)ignored;
  errno = saved;
}

/* One reply line: "<id> <what> <a>", or "<id> <what> <a> <b>" when b is not negative. */
static void reply(long long id, char what, long long a, long long b) {
  char line[96];
  int n = b < 0 ? snprintf(line, sizeof line, "%lld %c %lld\n", id, what, a)
                : snprintf(line, sizeof line, "%lld %c %lld %lld\n", id, what, a, b);
  for (int off = 0; off < n;) {
    ssize_t w = write(STDOUT_FILENO, line + off, (size_t)(n - off));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) quit(0); /* the worker is gone: nobody would learn of these commands */
    off += (int)w;
  }
}

/* Reads one NUL-terminated field at *pos; NULL if the buffer does not hold it yet. */
static char *field(char *buf, size_t len, size_t *pos) {
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

static void start(long long id, char *log_path, char **argv, char **vars, long nvars) {
  /* Allocated first: running out of memory after the spawn would leave an untracked command. */
  struct child *c = calloc(1, sizeof *c);
  char *path_copy = strdup(log_path);
  if (!c || !path_copy) quit(1);
  /* Created new, 0600, never through a symlink and never appended to: something already at the
   * path (a stale log of a pruned attempt whose id was reused, or a planted symlink) is
   * unlinked, not followed, and the file created again once. */
  const int new_file = O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int discard = log_path[0] == '\0';
  int fd = discard ? open("/dev/null", O_WRONLY | O_CLOEXEC) : open(log_path, new_file, 0600);
  if (fd < 0 && !discard && errno == EEXIST && unlink(log_path) == 0) fd = open(log_path, new_file, 0600);
  if (fd < 0) {
    free(c);
    free(path_copy);
    reply(id, 'L', errno, -1);
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fd, STDERR_FILENO);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);

  char **env = task_env(vars, nvars);
  pid_t pid = 0;
  int err = env ? posix_spawnp(&pid, argv[0], &actions, &attr, argv, env) : ENOMEM;
  free(env);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    close(fd);
    if (!discard) unlink(log_path);
    free(c);
    free(path_copy);
    reply(id, 'F', err, -1);
    return;
  }
  *c = (struct child){ pid, id, fd, path_copy, children };
  children = c;
  reply(id, 'S', pid, -1);
}

/* A count field: digits only, at least `least`; anything else is a protocol bug, never input. */
static long count(const char *s, long least) {
  char *end;
  errno = 0;
  long n = strtol(s, &end, 10);
  if (errno || end == s || *end != '\0' || n < least || n > (1L << 20)) quit(2);
  return n;
}

/* Parses and starts every complete request in the buffer; returns the bytes consumed. */
static size_t serve(char *buf, size_t len) {
  size_t done = 0;
  for (;;) {
    size_t pos = done;
    char *id = field(buf, len, &pos), *log_path = id ? field(buf, len, &pos) : NULL;
    char *nargs_s = log_path ? field(buf, len, &pos) : NULL;
    if (!nargs_s) return done;
    long nargs = count(nargs_s, 1);
    char **argv = calloc((size_t)nargs + 1, sizeof *argv);
    if (!argv) quit(1);
    long i = 0;
    while (i < nargs && (argv[i] = field(buf, len, &pos))) i++;
    char *nvars_s = i == nargs ? field(buf, len, &pos) : NULL;
    long nvars = nvars_s ? count(nvars_s, 0) : 0;
    char **vars = nvars_s ? calloc((size_t)nvars + 1, sizeof *vars) : NULL;
    if (nvars_s && !vars) quit(1);
    long v = 0;
    while (vars && v < nvars && (vars[v] = field(buf, len, &pos))) v++;
    if (!vars || v < nvars) {
      free(argv);
      free(vars);
      return done; /* incomplete: wait for more input */
    }
    start(strtoll(id, NULL, 10), log_path, argv, vars, nvars);
    free(argv);
    free(vars);
    done = pos;
  }
}

static void reap(void) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (struct child **p = &children; *p; p = &(*p)->next) {
      struct child *c = *p;
      if (c->pid != pid) continue;
      struct stat st;
      off_t written = fstat(c->log_fd, &st) == 0 ? st.st_size : 0;
      close(c->log_fd);
      if (written == 0 && c->log_path[0]) unlink(c->log_path);
      if (kill(-c->pid, 0) == 0) add_lingering(c->pid);
      reply(c->id, 'X', status, (long long)written);
      *p = c->next;
      free(c->log_path);
      free(c);
      break;
    }
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--check") == 0) return 0; /* "this build runs here" */
  if (pipe2(sigchld_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
#ifdef PR_SET_CHILD_SUBREAPER
  prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigchld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  fcntl(STDIN_FILENO, F_SETFD, FD_CLOEXEC);
  fcntl(STDOUT_FILENO, F_SETFD, FD_CLOEXEC);

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
    }
  }
  quit(0);
}
