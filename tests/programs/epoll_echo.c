/*
 * epoll_echo: a small epoll TCP echo server, the "unmodified epoll program"
 * that tests/python/test_linux_exec.py runs under `irqlab linux exec`.
 *
 *   epoll_echo [--addr A] [--port P] [--conns N] [--timeout-ms T]
 *              [--create 1|legacy] [--wait wait|pwait|pwait2]
 *              [--print-params] [--extra-epolls N] [--idle-ms MS] [--sigwait]
 *
 * It listens on A:P (default 127.0.0.1, port 0 = any free port), creates
 * its epoll instance with epoll_create1 (or epoll_create with --create
 * legacy), and echoes every byte it receives until N connections (default 1)
 * have closed, then prints "DONE conns=N bytes=B" and exits 0. The whole run
 * is bounded by --timeout-ms (default 10000): past it, it prints "TIMEOUT"
 * and exits 3. Lines on stdout, each flushed:
 *
 *   PARAMS busy_poll_usecs=U busy_poll_budget=B prefer_busy_poll=P
 *       (--print-params: what EPIOCGPARAMS reads back from its own epoll fd
 *        just after creating it, i.e. what a preload shim set; or
 *        "PARAMS error=NAME" when the kernel has no such ioctl)
 *   IDLE ret=R errno=E waited_ms=W cpu_ms=C nvcsw=V runnable_ms=Q
 *       (--idle-ms MS: one wait of MS ms with no traffic, timed on
 *        CLOCK_MONOTONIC, with the process's CPU time (user + system) and
 *        voluntary context switches spent in it, from getrusage, and the
 *        time the thread was runnable — on a CPU or waiting in a run queue,
 *        i.e. not asleep — from /proc/thread-self/schedstat; -1 if absent)
 *   READY port=P
 *       (listening; connect now)
 *   WAIT ret=R errno=E handled=H
 *       (--sigwait: after READY, one wait with an infinite timeout that a
 *        SIGUSR1 — handler installed without SA_RESTART, before READY —
 *        should end with ret=-1 errno=EINTR handled=1; exits 0 after it.
 *        A signal that comes between READY and the wait is handled and
 *        the wait then blocks: the sender sends again until WAIT)
 *   DONE conns=N bytes=B
 *
 * --extra-epolls N creates (and closes) N more epoll instances, to show a
 * shim acting on every instance. --wait picks the wait function used
 * everywhere (epoll_wait, epoll_pwait with a NULL mask, epoll_pwait2).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* include/uapi/linux/eventpoll.h (Linux 6.9+); glibc's headers may lack it. */
#ifndef EPIOCGPARAMS
struct epoll_params {
	uint32_t busy_poll_usecs;
	uint16_t busy_poll_budget;
	uint8_t prefer_busy_poll;
	uint8_t __pad;
};
#define EPOLL_IOC_TYPE 0x8A
#define EPIOCSPARAMS _IOW(EPOLL_IOC_TYPE, 0x01, struct epoll_params)
#define EPIOCGPARAMS _IOR(EPOLL_IOC_TYPE, 0x02, struct epoll_params)
#endif

enum wait_fn { WAIT, PWAIT, PWAIT2 };

static enum wait_fn wait_fn = WAIT;
static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	(void)sig;
	handled = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "epoll_echo: %s: %s\n", what, strerror(errno));
	exit(2);
}

static const char *errno_name(int e)
{
	switch (e) {
	case 0: return "0";
	case EINTR: return "EINTR";
	case ENOTTY: return "ENOTTY";
	case EINVAL: return "EINVAL";
	case EPERM: return "EPERM";
	case EBADF: return "EBADF";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	default: return "other";
	}
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_ms(const struct rusage *ru)
{
	return (ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e3 +
	       (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e3;
}

/* The chosen wait function, with a timeout in ms (-1 = forever). */
static int do_wait(int ep, struct epoll_event *ev, int max, int timeout_ms)
{
	struct timespec ts, *tsp = NULL;

	switch (wait_fn) {
	case PWAIT:
		return epoll_pwait(ep, ev, max, timeout_ms, NULL);
	case PWAIT2:
		if (timeout_ms >= 0) {
			ts.tv_sec = timeout_ms / 1000;
			ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
			tsp = &ts;
		}
		return epoll_pwait2(ep, ev, max, tsp, NULL);
	default:
		return epoll_wait(ep, ev, max, timeout_ms);
	}
}

/* Time this thread spent on a CPU plus waiting for one, in ms
 * (/proc/thread-self/schedstat: "run_ns wait_ns timeslices"), or -1. */
static double runnable_ms(void)
{
	unsigned long long run_ns, wait_ns;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (!f)
		return -1;
	int n = fscanf(f, "%llu %llu", &run_ns, &wait_ns);
	fclose(f);
	return n == 2 ? (run_ns + wait_ns) / 1e6 : -1;
}

static int make_epoll(int legacy)
{
	int ep = legacy ? epoll_create(16) : epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create");
	return ep;
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1";
	int port = 0, conns = 1, timeout_ms = 10000, legacy = 0, print_params = 0;
	int extra = 0, idle_ms = -1, sigwait = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--print-params")) { print_params = 1; continue; }
		if (!strcmp(a, "--sigwait")) { sigwait = 1; continue; }
		if (!v) { fprintf(stderr, "epoll_echo: bad argument %s\n", a); return 2; }
		i++;
		if (!strcmp(a, "--addr")) addr = v;
		else if (!strcmp(a, "--port")) port = atoi(v);
		else if (!strcmp(a, "--conns")) conns = atoi(v);
		else if (!strcmp(a, "--timeout-ms")) timeout_ms = atoi(v);
		else if (!strcmp(a, "--extra-epolls")) extra = atoi(v);
		else if (!strcmp(a, "--idle-ms")) idle_ms = atoi(v);
		else if (!strcmp(a, "--create")) legacy = !strcmp(v, "legacy");
		else if (!strcmp(a, "--wait"))
			wait_fn = !strcmp(v, "pwait") ? PWAIT : !strcmp(v, "pwait2") ? PWAIT2 : WAIT;
		else { fprintf(stderr, "epoll_echo: bad argument %s\n", a); return 2; }
	}
	double deadline = now_ms() + timeout_ms;

	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "epoll_echo: bad address %s\n", addr);
		return 2;
	}
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("bind");
	if (listen(lfd, 64) < 0)
		die("listen");
	socklen_t len = sizeof sa;
	getsockname(lfd, (struct sockaddr *)&sa, &len);

	int ep = make_epoll(legacy);
	if (print_params) {
		struct epoll_params p;
		memset(&p, 0, sizeof p);
		if (ioctl(ep, EPIOCGPARAMS, &p) == 0)
			printf("PARAMS busy_poll_usecs=%u busy_poll_budget=%u prefer_busy_poll=%u\n",
			       p.busy_poll_usecs, p.busy_poll_budget, p.prefer_busy_poll);
		else
			printf("PARAMS error=%s\n", errno_name(errno));
	}
	for (int i = 0; i < extra; i++)
		close(make_epoll(legacy));

	struct epoll_event ev = { .events = EPOLLIN, .data.fd = lfd };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
		die("epoll_ctl");

	if (idle_ms >= 0) {
		struct epoll_event out[8];
		struct rusage r0, r1;
		double q0 = runnable_ms();
		getrusage(RUSAGE_SELF, &r0);
		double t0 = now_ms();
		errno = 0;
		int n = do_wait(ep, out, 8, idle_ms);
		int e = n < 0 ? errno : 0;
		double t1 = now_ms();
		getrusage(RUSAGE_SELF, &r1);
		double q1 = runnable_ms();
		printf("IDLE ret=%d errno=%s waited_ms=%.1f cpu_ms=%.1f nvcsw=%ld runnable_ms=%.1f\n", n,
		       errno_name(e), t1 - t0, cpu_ms(&r1) - cpu_ms(&r0), r1.ru_nvcsw - r0.ru_nvcsw,
		       q0 < 0 || q1 < 0 ? -1.0 : q1 - q0);
	}

	if (sigwait) {
		/* Before READY: a SIGUSR1 sent as soon as READY is read must not
		 * find the default action (which ends the process). */
		struct sigaction act;
		memset(&act, 0, sizeof act);
		act.sa_handler = on_usr1; /* no SA_RESTART: epoll waits fail with EINTR anyway */
		sigaction(SIGUSR1, &act, NULL);
	}

	printf("READY port=%d\n", ntohs(sa.sin_port));

	if (sigwait) {
		struct epoll_event out[8];
		errno = 0;
		int n = do_wait(ep, out, 8, -1);
		printf("WAIT ret=%d errno=%s handled=%d\n", n, errno_name(n < 0 ? errno : 0), (int)handled);
		return 0;
	}

	long long bytes = 0;
	int closed = 0;
	char buf[65536];
	while (closed < conns) {
		int left = (int)(deadline - now_ms());
		if (left <= 0) {
			printf("TIMEOUT\n");
			return 3;
		}
		struct epoll_event out[16];
		int n = do_wait(ep, out, 16, left < 100 ? left : 100);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		for (int i = 0; i < n; i++) {
			int fd = out[i].data.fd;
			if (fd == lfd) {
				int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
				if (c < 0)
					continue;
				struct epoll_event cev = { .events = EPOLLIN | EPOLLRDHUP, .data.fd = c };
				if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev) < 0)
					die("epoll_ctl");
				continue;
			}
			ssize_t r = read(fd, buf, sizeof buf);
			if (r <= 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
				closed++;
				continue;
			}
			for (ssize_t off = 0; off < r;) {
				ssize_t w = write(fd, buf + off, r - off);
				if (w < 0) {
					if (errno == EINTR)
						continue;
					break;
				}
				off += w;
			}
			bytes += r;
		}
	}
	printf("DONE conns=%d bytes=%lld\n", closed, bytes);
	return 0;
}
