/*
 * epoll_signal_wait: one epoll wait with nothing to wait for, during which a
 * signal arrives; what the wait returned. tests/python/test_linux_exec.py
 * runs it plain and under `irqlab linux exec --profile busy-wait`, which
 * must return the same (issue 62, item 1).
 *
 *   epoll_signal_wait [--wait wait|pwait|pwait2] [--signal NAME]
 *                     [--disposition default|ignore|handler] [--wait-ms T]
 *                     [--after-ms A] [--own-block] [--before]
 *
 * It creates an epoll instance watching nothing and forks a child that,
 * --after-ms A ms (default 100) after the fork, sends --signal NAME to it
 * (chld: the child just exits, the kernel sends SIGCHLD; winch, urg, cont,
 * usr1: kill(2) then exit) while it waits --wait-ms T ms (default 400) with
 * the chosen function. --disposition sets the signal's action first (the
 * default: left as it is). --own-block blocks the signal in the thread's
 * own mask and waits with epoll_pwait/epoll_pwait2 and an empty sigmask,
 * so that the signal is unblocked only during the wait. --before waits
 * until the child has exited (and the signal is pending, under
 * --own-block) before the wait starts. Prints, flushed:
 *
 *   WAIT ret=R errno=E waited_ms=W handled=H
 *
 * and exits 0 (2 on a setup error). The whole run takes under a second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	(void)sig;
	handled++;
}

static void die(const char *what)
{
	fprintf(stderr, "epoll_signal_wait: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int signal_number(const char *name)
{
	if (!strcmp(name, "chld")) return SIGCHLD;
	if (!strcmp(name, "winch")) return SIGWINCH;
	if (!strcmp(name, "urg")) return SIGURG;
	if (!strcmp(name, "cont")) return SIGCONT;
	if (!strcmp(name, "usr1")) return SIGUSR1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *wait_fn = "wait", *disposition = NULL;
	int sig = SIGCHLD, wait_ms = 400, after_ms = 100, own_block = 0, before = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--own-block")) { own_block = 1; continue; }
		if (!strcmp(a, "--before")) { before = 1; continue; }
		if (!v) { fprintf(stderr, "epoll_signal_wait: bad argument %s\n", a); return 2; }
		i++;
		if (!strcmp(a, "--wait")) wait_fn = v;
		else if (!strcmp(a, "--signal")) sig = signal_number(v);
		else if (!strcmp(a, "--disposition")) disposition = v;
		else if (!strcmp(a, "--wait-ms")) wait_ms = atoi(v);
		else if (!strcmp(a, "--after-ms")) after_ms = atoi(v);
		else { fprintf(stderr, "epoll_signal_wait: bad argument %s\n", a); return 2; }
	}
	if (!sig || (own_block && !strcmp(wait_fn, "wait"))) {
		fprintf(stderr, "epoll_signal_wait: bad --signal, or --own-block without pwait/pwait2\n");
		return 2;
	}
	if (disposition) {
		struct sigaction act;
		memset(&act, 0, sizeof act);
		if (!strcmp(disposition, "ignore")) act.sa_handler = SIG_IGN;
		else if (!strcmp(disposition, "handler")) act.sa_handler = on_signal; /* no SA_RESTART */
		else act.sa_handler = SIG_DFL;
		if (sigaction(sig, &act, NULL) < 0)
			die("sigaction");
	}
	sigset_t blocked, empty;
	sigemptyset(&blocked);
	sigemptyset(&empty);
	sigaddset(&blocked, sig);
	if (own_block && sigprocmask(SIG_BLOCK, &blocked, NULL) < 0)
		die("sigprocmask");

	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	pid_t parent = getpid();
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		struct timespec ts = { after_ms / 1000, (long)(after_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		if (sig != SIGCHLD)
			kill(parent, sig);
		_exit(0);
	}
	if (before) {
		/* The child is gone (its signals sent) but not reaped: no other
		 * SIGCHLD can come during the wait. */
		siginfo_t info;
		while (waitid(P_PID, child, &info, WEXITED | WNOWAIT) < 0)
			if (errno != EINTR)
				die("waitid");
	}

	struct epoll_event out[4];
	struct timespec ts = { wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L };
	const sigset_t *mask = own_block ? &empty : NULL;
	double t0 = now_ms();
	errno = 0;
	int n;
	if (!strcmp(wait_fn, "pwait"))
		n = epoll_pwait(ep, out, 4, wait_ms, mask);
	else if (!strcmp(wait_fn, "pwait2"))
		n = epoll_pwait2(ep, out, 4, &ts, mask);
	else
		n = epoll_wait(ep, out, 4, wait_ms);
	int e = n < 0 ? errno : 0;
	double waited = now_ms() - t0;
	printf("WAIT ret=%d errno=%s waited_ms=%.1f handled=%d\n", n,
	       e == 0 ? "0" : e == EINTR ? "EINTR" : "other", waited, (int)handled);
	waitpid(child, NULL, 0);
	return 0;
}
