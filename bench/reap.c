/*
 * The bench's CPU meter: runs a command, waits for it and for every process it left behind,
 * and prints "<user µs> <system µs> <exit code> <signal>" on stdout: the CPU of all of them,
 * and how the command ended (signal 0 when it exited).
 *
 * getrusage(RUSAGE_CHILDREN) counts only descendants that were waited for, level by level:
 * a process whose parent exited first (a detached helper, a daemon) is reparented and its CPU
 * would be lost. As a child subreaper this process inherits such orphans and waits for them
 * too, so nothing a tool started escapes the count, whichever tool it is.
 *
 * The command's stdin and stderr are ours; its stdout goes to /dev/null (ours carries the
 * figures). Exit code: the command's (128 + signal if a signal killed it), 127 if it could
 * not start, 125 if this meter itself failed (then it prints nothing).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s COMMAND [ARG...]\n", argv[0]);
    return 125;
  }
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    perror("reap: prctl(PR_SET_CHILD_SUBREAPER)");
    return 125;
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("reap: fork");
    return 125;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null < 0 || dup2(null, STDOUT_FILENO) < 0) _exit(125);
    execvp(argv[1], argv + 1);
    fprintf(stderr, "reap: %s: %s\n", argv[1], strerror(errno));
    _exit(127);
  }
  int code = 125, sig = 0, status;
  for (;;) {
    pid_t done = wait(&status);
    if (done < 0) {
      if (errno == EINTR) continue;
      break; /* ECHILD: the command and every orphan it left are gone */
    }
    if (done != pid) continue;
    sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    code = sig ? 128 + sig : WEXITSTATUS(status);
  }
  struct rusage ru;
  if (getrusage(RUSAGE_CHILDREN, &ru) != 0) {
    perror("reap: getrusage");
    return 125;
  }
  printf("%lld %lld %d %d\n", (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
         (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec, sig ? -1 : code, sig);
  return code;
}
